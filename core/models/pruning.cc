#include "core/models/pruning.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace sparrow::core {
namespace {

double Weight(const DenseBlock& l, const double* theta, int r, int c) {
  return theta[l.weight_offset + c * l.out + r];
}

// Whether a linear term (Mlp::linear, may be null) reads input c.
bool LinearReads(const Mlp::Layer* linear, const double* theta, int c) {
  if (linear == nullptr) return false;
  const double* col = theta + linear->weight_offset + c * linear->out;
  return std::any_of(col, col + linear->out, [](double v) { return v != 0.0; });
}

double Activate(Activation a, double v) {
  double z = 0.0;
  ApplyActivation(a, &v, &z, 1);
  return z;
}

// Liveness of every unit: live[0] the inputs, live[l] the outputs of layer l;
// the outputs of the last layer are always live. constant[l][j] marks a
// hidden neuron that reads nothing live (dead, but its f(b) must be folded
// into the next layer's bias).
struct Liveness {
  std::vector<std::vector<bool>> live, constant;
};

Liveness Analyze(const std::vector<DenseBlock>& layers, const double* theta) {
  const int n = static_cast<int>(layers.size());
  Liveness a;
  a.live.resize(n + 1);
  a.constant.resize(n + 1);
  a.live[0].assign(layers[0].in, true);
  for (int l = 1; l <= n; ++l) {
    a.live[l].assign(layers[l - 1].out, true);
    a.constant[l].assign(layers[l - 1].out, false);
  }
  // Backward: a unit is live when a live unit of the next layer reads it.
  for (int l = n; l >= 1; --l) {
    const DenseBlock& layer = layers[l - 1];
    for (int c = 0; c < layer.in; ++c) {
      bool read = false;
      for (int r = 0; r < layer.out && !read; ++r) {
        read = a.live[l][r] && Weight(layer, theta, r, c) != 0.0;
      }
      a.live[l - 1][c] = read;
    }
  }
  // Forward: a hidden neuron that reads no live unit is a constant.
  for (int l = 1; l < n; ++l) {
    const DenseBlock& layer = layers[l - 1];
    for (int r = 0; r < layer.out; ++r) {
      if (!a.live[l][r]) continue;
      bool reads = false;
      for (int c = 0; c < layer.in && !reads; ++c) {
        reads = a.live[l - 1][c] && Weight(layer, theta, r, c) != 0.0;
      }
      if (!reads) {
        a.live[l][r] = false;
        a.constant[l][r] = true;
      }
    }
  }
  return a;
}

}  // namespace

std::vector<LayerSparsity> WeightSparsity(const Network& net,
                                          const double* theta) {
  std::vector<LayerSparsity> out;
  for (const DenseBlock& l : DenseBlocks(net)) {
    LayerSparsity s;
    s.neurons = l.out;
    s.inputs = l.in;
    const int total = l.out * l.in;
    for (int k = 0; k < total; ++k) s.zeros += theta[l.weight_offset + k] == 0;
    s.zero_pct = total > 0 ? 100.0 * s.zeros / total : 0.0;
    s.remaining_pct = 100.0 - s.zero_pct;
    out.push_back(s);
  }
  return out;
}

DeadUnits FindDeadUnits(const Network& net, const double* theta) {
  const Liveness a = Analyze(DenseBlocks(net), theta);
  DeadUnits d;
  for (size_t c = 0; c < a.live[0].size(); ++c) {
    if (!a.live[0][c]) d.inputs.push_back(static_cast<int>(c));
  }
  const int n = net.num_layers();
  d.hidden.resize(n - 1);
  for (int l = 1; l < n; ++l) {
    for (size_t r = 0; r < a.live[l].size(); ++r) {
      if (!a.live[l][r]) d.hidden[l - 1].push_back(static_cast<int>(r));
    }
  }
  return d;
}

DeadUnits FindDeadUnits(const Mlp& mlp, const double* theta) {
  DeadUnits d = FindDeadUnits(mlp.network(), theta);
  auto reads = [&](int c) { return LinearReads(mlp.linear(), theta, c); };
  d.inputs.erase(std::remove_if(d.inputs.begin(), d.inputs.end(), reads),
                 d.inputs.end());
  return d;
}

std::vector<std::string> DeadUnitNames(
    const DeadUnits& dead, const std::vector<std::string>& input_names) {
  std::vector<std::string> names;
  for (int c : dead.inputs) {
    names.push_back(c < static_cast<int>(input_names.size())
                        ? input_names[c]
                        : absl::StrCat("input ", c + 1));
  }
  for (size_t l = 0; l < dead.hidden.size(); ++l) {
    for (int r : dead.hidden[l]) {
      names.push_back(absl::StrCat("hidden ", l + 1, " neuron ", r + 1));
    }
  }
  return names;
}

CompactNetwork CompactMlp(const Mlp& mlp, const double* theta) {
  const auto& layers = mlp.layers();
  const Liveness a = Analyze(layers, theta);
  const int n = static_cast<int>(layers.size());
  // kept[l]: the units of layer l (0 = inputs) in the compact network; a
  // hidden layer with none keeps one inert unit (-1).
  std::vector<std::vector<int>> kept(n + 1);
  const Mlp::Layer* linear = mlp.linear();
  for (int l = 0; l <= n; ++l) {
    for (size_t r = 0; r < a.live[l].size(); ++r) {
      const int unit = static_cast<int>(r);
      if (a.live[l][r] || l == n ||
          (l == 0 && LinearReads(linear, theta, unit))) {
        kept[l].push_back(unit);
      }
    }
    if (l > 0 && l < n && kept[l].empty()) kept[l].push_back(-1);
  }
  // A network that reads no input keeps input 0 (which no live neuron
  // reads), so that the spec stays valid.
  if (kept[0].empty()) kept[0].push_back(0);
  CompactNetwork out;
  out.spec = mlp.spec();
  // Constant neurons fold into the next layer's biases, so the compact
  // network has biases even when the original had none.
  out.spec.bias = true;
  out.spec.inputs = static_cast<int>(kept[0].size());
  for (int l = 1; l < n; ++l)
    out.spec.hidden[l - 1] = static_cast<int>(kept[l].size());
  const Mlp compact(out.spec);
  out.params.setZero(compact.num_params());
  out.kept_inputs = kept[0];

  // Biases with the constants of the previous layer folded in, per layer.
  std::vector<std::vector<double>> bias(n + 1);
  for (int l = 1; l <= n; ++l) {
    const DenseBlock& layer = layers[l - 1];
    if (layer.bias_offset >= 0) {
      bias[l].assign(theta + layer.bias_offset,
                     theta + layer.bias_offset + layer.out);
    } else {
      bias[l].assign(layer.out, 0.0);
    }
    if (l > 1) {
      const Activation f = layers[l - 2].activation;
      for (int j = 0; j < layer.in; ++j) {
        if (!a.constant[l - 1][j]) continue;
        const double value = Activate(f, bias[l - 1][j]);
        for (int r = 0; r < layer.out; ++r)
          bias[l][r] += Weight(layer, theta, r, j) * value;
      }
    }
    const DenseBlock& target = compact.layers()[l - 1];
    for (size_t r2 = 0; r2 < kept[l].size(); ++r2) {
      const int r = kept[l][r2];
      if (r < 0) continue;
      out.params(target.bias_offset + r2) = bias[l][r];
      for (size_t c2 = 0; c2 < kept[l - 1].size(); ++c2) {
        const int c = kept[l - 1][c2];
        if (c < 0) continue;
        out.params(target.weight_offset + c2 * target.out + r2) =
            Weight(layer, theta, r, c);
      }
    }
  }
  if (linear != nullptr) {
    // L's columns of the kept inputs.
    const Mlp::Layer& target = *compact.linear();
    for (size_t c2 = 0; c2 < kept[0].size(); ++c2) {
      for (int r = 0; r < linear->out; ++r) {
        out.params(target.weight_offset + c2 * target.out + r) =
            Weight(*linear, theta, r, kept[0][c2]);
      }
    }
  }
  return out;
}

}  // namespace sparrow::core
