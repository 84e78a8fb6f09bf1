#include "core/models/mlp.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace sparrow::core {
namespace {

using Eigen::Map;
using Eigen::MatrixXd;
using Eigen::VectorXd;

Map<const MatrixXd> Weights(const double* theta, const Mlp::Layer& l) {
  return Map<const MatrixXd>(theta + l.weight_offset, l.out, l.in);
}
Map<const VectorXd> Bias(const double* theta, const Mlp::Layer& l) {
  return Map<const VectorXd>(theta + l.bias_offset, l.out);
}

}  // namespace

absl::Status ValidateMlpSpec(const MlpSpec& spec, absl::string_view name) {
  if (spec.inputs <= 0 || spec.inputs > kMaxLayerWidth) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": the number of inputs is ", spec.inputs,
                     "; it must be in [1, ", kMaxLayerWidth, "]"));
  }
  if (spec.outputs <= 0 || spec.outputs > kMaxLayerWidth) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": the number of outputs is ", spec.outputs,
                     "; it must be in [1, ", kMaxLayerWidth, "]"));
  }
  for (size_t i = 0; i < spec.hidden.size(); ++i) {
    if (spec.hidden[i] <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ".hidden[", i, "] is ", spec.hidden[i],
                       "; layer sizes must be positive"));
    }
    if (spec.hidden[i] > kMaxLayerWidth) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ".hidden[", i, "] is ", spec.hidden[i],
                       "; layer sizes must be at most ", kMaxLayerWidth));
    }
  }
  // In 64 bits: the widths are bounded, their products are not within int.
  int64_t params = 0;
  int64_t in = spec.inputs;
  for (size_t i = 0; i <= spec.hidden.size(); ++i) {
    const int64_t out =
        i < spec.hidden.size() ? spec.hidden[i] : int64_t{spec.outputs};
    params += out * (in + (spec.bias ? 1 : 0));
    in = out;
    if (params > kMaxMlpParams) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": the network has more than ", kMaxMlpParams,
                       " parameters; use fewer or narrower layers"));
    }
  }
  return absl::OkStatus();
}

Mlp::Mlp(const MlpSpec& spec) : spec_(spec) {
  int in = spec.inputs;
  const int num_layers = static_cast<int>(spec.hidden.size()) + 1;
  for (int i = 0; i < num_layers; ++i) {
    const bool last = i + 1 == num_layers;
    Layer l;
    l.in = in;
    l.out = last ? spec.outputs : spec.hidden[i];
    l.weight_offset = num_params_;
    l.bias_offset = spec.bias ? num_params_ + l.in * l.out : -1;
    l.activation = last ? spec.output_activation : spec.hidden_activation;
    num_params_ += l.num_params();
    layers_.push_back(l);
    in = l.out;
  }
}

void Mlp::Cache::Resize(const Mlp& mlp, int cols) {
  const size_t n = mlp.layers_.size() + 1;
  if (z.size() == n && this->cols() == cols) return;
  v.resize(n);
  z.resize(n);
  delta.resize(n);
  deriv.resize(n);
  sens.resize(n);
  z_squared.resize(n);
  z[0].resize(mlp.inputs(), cols);
  z_squared[0].resize(mlp.inputs(), cols);
  for (size_t i = 1; i < n; ++i) {
    const int out = mlp.layers_[i - 1].out;
    v[i].resize(out, cols);
    z[i].resize(out, cols);
    delta[i].resize(out, cols);
    deriv[i].resize(out, cols);
    z_squared[i].resize(out, cols);
    sens[i].resize(mlp.outputs(), out);
  }
}

void Mlp::Initialize(double sigma0, Rng* rng, double* theta) const {
  for (const Layer& l : layers_) {
    const double std = sigma0 * std::sqrt(2.0 / (l.in + l.out));
    for (int k = 0; k < l.in * l.out; ++k)
      theta[l.weight_offset + k] = std * rng->Normal();
    if (l.bias_offset >= 0) {
      for (int k = 0; k < l.out; ++k) theta[l.bias_offset + k] = 0.0;
    }
  }
}

void Mlp::Forward(const double* theta, const Eigen::Ref<const MatrixXd>& in,
                  Cache* c) const {
  c->Resize(*this, static_cast<int>(in.cols()));
  c->z[0] = in;
  ForwardFrom(theta, 0, c);
}

void Mlp::ForwardFrom(const double* theta, int layer, Cache* c) const {
  for (size_t i = layer; i < layers_.size(); ++i) {
    const Layer& l = layers_[i];
    c->v[i + 1].noalias() = Weights(theta, l) * c->z[i];
    if (l.bias_offset >= 0) c->v[i + 1].colwise() += Bias(theta, l);
    ApplyActivation(l.activation, c->v[i + 1], c->z[i + 1]);
  }
}

void Mlp::BackwardToLayer(const double* theta,
                          const Eigen::Ref<const MatrixXd>& d_out, int layer,
                          Cache* c, double* grad) const {
  const int n = static_cast<int>(layers_.size());
  for (int i = n; i >= layer + 1; --i) {
    const Layer& l = layers_[i - 1];
    ActivationDerivative(l.activation, c->v[i], c->z[i], c->deriv[i]);
    if (i == n) {
      c->delta[i] = d_out.cwiseProduct(c->deriv[i]);
    } else {
      c->delta[i].noalias() =
          Weights(theta, layers_[i]).transpose() * c->delta[i + 1];
      c->delta[i].array() *= c->deriv[i].array();
    }
  }
  const Layer& l = layers_[layer];
  Map<MatrixXd>(grad + l.weight_offset, l.out, l.in).noalias() +=
      c->delta[layer + 1] * c->z[layer].transpose();
  if (l.bias_offset >= 0) {
    Map<VectorXd>(grad + l.bias_offset, l.out) +=
        c->delta[layer + 1].rowwise().sum();
  }
}

void Mlp::ForwardColumn(const double* theta, int col, Cache* c) const {
  // Plain loops: a simulation calls this once per step on layers a few units
  // wide, where Eigen's matrix-vector dispatch costs more than the arithmetic.
  // Each output is summed in a register and stored once (accumulating into
  // memory column by column stalls on store forwarding at these sizes).
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Layer& l = layers_[i];
    const double* z = c->z[i].col(col).data();
    double* v = c->v[i + 1].col(col).data();
    const double* a = theta + l.weight_offset;
    const double* b = l.bias_offset >= 0 ? theta + l.bias_offset : nullptr;
    int r = 0;
    // Four outputs at a time in one vector register; each output still sums
    // b, then k = 0, 1, ... in order, so the result is the scalar loop's.
    for (; r + 4 <= l.out; r += 4) {
      double acc[4];
      for (int q = 0; q < 4; ++q) acc[q] = b != nullptr ? b[r + q] : 0.0;
      for (int k = 0; k < l.in; ++k) {
        const double* ak = a + k * l.out + r;
        for (int q = 0; q < 4; ++q) acc[q] += ak[q] * z[k];
      }
      for (int q = 0; q < 4; ++q) v[r + q] = acc[q];
    }
    for (; r < l.out; ++r) {
      double acc = b != nullptr ? b[r] : 0.0;
      for (int k = 0; k < l.in; ++k) acc += a[k * l.out + r] * z[k];
      v[r] = acc;
    }
    ApplyActivation(l.activation, v, c->z[i + 1].col(col).data(), l.out);
  }
}

void Mlp::Backward(const double* theta, const Eigen::Ref<const MatrixXd>& d_out,
                   Cache* c, double* grad, MatrixXd* d_in) const {
  const int n = static_cast<int>(layers_.size());
  for (int i = n; i >= 1; --i) {
    const Layer& l = layers_[i - 1];
    ActivationDerivative(l.activation, c->v[i], c->z[i], c->deriv[i]);
    if (i == n) {
      c->delta[i] = d_out.cwiseProduct(c->deriv[i]);
    } else {
      const Layer& next = layers_[i];
      c->delta[i].noalias() =
          Weights(theta, next).transpose() * c->delta[i + 1];
      c->delta[i].array() *= c->deriv[i].array();
    }
  }
  AccumulateGradient(*c, grad);
  if (d_in != nullptr) {
    d_in->noalias() = Weights(theta, layers_[0]).transpose() * c->delta[1];
  }
}

void Mlp::BackwardColumn(const double* theta, int col, const double* d_out,
                         Cache* c, double* d_in) const {
  const int n = static_cast<int>(layers_.size());
  for (int i = n; i >= 1; --i) {
    const Layer& l = layers_[i - 1];
    auto deriv = c->deriv[i].col(col);
    ActivationDerivative(l.activation, c->v[i].col(col), c->z[i].col(col),
                         deriv);
    auto delta = c->delta[i].col(col);
    if (i == n) {
      delta = Map<const VectorXd>(d_out, l.out).cwiseProduct(deriv);
    } else {
      delta.noalias() =
          Weights(theta, layers_[i]).transpose() * c->delta[i + 1].col(col);
      delta.array() *= deriv.array();
    }
  }
  Map<VectorXd>(d_in, inputs()).noalias() =
      Weights(theta, layers_[0]).transpose() * c->delta[1].col(col);
}

void Mlp::AccumulateGradient(const Cache& c, double* grad) const {
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Layer& l = layers_[i];
    Map<MatrixXd>(grad + l.weight_offset, l.out, l.in).noalias() +=
        c.delta[i + 1] * c.z[i].transpose();
    if (l.bias_offset >= 0) {
      Map<VectorXd>(grad + l.bias_offset, l.out) +=
          c.delta[i + 1].rowwise().sum();
    }
  }
}

// Bemporad §2.3 "per-step MLP Jacobians": S_L = diag(phi'(v_L)); for each layer
// d out/d b_i = S_i, d out/d vec A_i = z_{i-1}^T (x) S_i, S_{i-1} = S_i A_i
// diag(f'_{i-1}(v_{i-1})).
void Mlp::Jacobian(const double* theta, int col, Cache* c,
                   Eigen::Ref<RowMatrixXd> d_theta,
                   Eigen::Ref<RowMatrixXd> d_in) const {
  // Plain loops over contiguous rows: every block here is a few rows wide (the
  // Gauss-Newton rows call this once per time step), where Eigen's product
  // dispatch costs more than the arithmetic.
  const int n = static_cast<int>(layers_.size());
  const int m = outputs();
  for (int i = n; i >= 1; --i) {
    const Layer& l = layers_[i - 1];
    auto deriv = c->deriv[i].col(col);
    ActivationDerivative(l.activation, c->v[i].col(col), c->z[i].col(col),
                         deriv);
    RowMatrixXd& s = c->sens[i];  // m x l.out
    if (i == n) {
      s.setZero();
      for (int r = 0; r < m; ++r) s(r, r) = deriv(r);
    } else {
      // s = sens[i+1] W_{i+1} diag(f'_i); W_{i+1} is column-major, so both
      // factors of every dot product are contiguous.
      const Layer& next = layers_[i];
      const double* w = theta + next.weight_offset;  // next.out x l.out
      for (int r = 0; r < m; ++r) {
        const double* up =
            c->sens[i + 1].data() + static_cast<Eigen::Index>(r) * next.out;
        double* sr = s.data() + static_cast<Eigen::Index>(r) * l.out;
        for (int k = 0; k < l.out; ++k) {
          const double* wk = w + static_cast<Eigen::Index>(k) * next.out;
          double acc = 0.0;
          for (int j = 0; j < next.out; ++j) acc += up[j] * wk[j];
          sr[k] = acc * deriv(k);
        }
      }
    }
    if (d_theta.cols() > 0) {
      const double* z_prev = c->z[i - 1].col(col).data();
      for (int r = 0; r < m; ++r) {
        const double* sr = s.data() + static_cast<Eigen::Index>(r) * l.out;
        double* dst = d_theta.data() + r * d_theta.outerStride();
        // d out_r / d A_i(q, k) = s(r, q) z_{i-1}(k), stored at k * out + q.
        for (int k = 0; k < l.in; ++k) {
          const double zk = z_prev[k];
          double* dk = dst + l.weight_offset + k * l.out;
          for (int q = 0; q < l.out; ++q) dk[q] = zk * sr[q];
        }
        if (l.bias_offset >= 0) {
          double* db = dst + l.bias_offset;
          for (int q = 0; q < l.out; ++q) db[q] = sr[q];
        }
      }
    }
  }
  if (d_in.cols() > 0) {
    // d_in = sens[1] A_1.
    const Layer& l = layers_[0];
    const double* w = theta + l.weight_offset;
    for (int r = 0; r < m; ++r) {
      const double* sr =
          c->sens[1].data() + static_cast<Eigen::Index>(r) * l.out;
      double* dst = d_in.data() + r * d_in.outerStride();
      for (int k = 0; k < l.in; ++k) {
        const double* wk = w + static_cast<Eigen::Index>(k) * l.out;
        double acc = 0.0;
        for (int q = 0; q < l.out; ++q) acc += sr[q] * wk[q];
        dst[k] = acc;
      }
    }
  }
}

void Mlp::PrepareSquaredDeltas(Cache* c) const {
  const int n = static_cast<int>(layers_.size());
  for (int i = 1; i <= n; ++i) {
    const Layer& l = layers_[i - 1];
    ActivationDerivative(l.activation, c->v[i], c->z[i], c->deriv[i]);
    c->z_squared[i - 1] = c->z[i - 1].array().square();
  }
}

void Mlp::SquaredDeltas(const double* theta, int o, const double* scale,
                        Cache* c) const {
  // Backpropagate the seed e_o (times scale per sample) through the whole
  // batch: the deltas are then the per-sample Jacobian rows of output o with
  // respect to each pre-activation; they are squared in place at the end.
  const int n = static_cast<int>(layers_.size());
  for (int i = n; i >= 1; --i) {
    if (i == n) {
      c->delta[i].setZero();
      c->delta[i].row(o) = c->deriv[i].row(o);
      if (scale != nullptr) {
        c->delta[i].row(o).array() *=
            Map<const Eigen::RowVectorXd>(scale, c->delta[i].cols()).array();
      }
    } else {
      c->delta[i].noalias() =
          Weights(theta, layers_[i]).transpose() * c->delta[i + 1];
      c->delta[i].array() *= c->deriv[i].array();
    }
  }
  for (int i = 1; i <= n; ++i)
    c->delta[i].array() = c->delta[i].array().square();
}

void Mlp::AccumulateDiagGgn(const double* theta,
                            const Eigen::Ref<const MatrixXd>& sqrt_curv,
                            Cache* c, double* diag) const {
  PrepareSquaredDeltas(c);
  Eigen::RowVectorXd scale(sqrt_curv.cols());
  for (int o = 0; o < outputs(); ++o) {
    scale = sqrt_curv.row(o);
    SquaredDeltas(theta, o, scale.data(), c);
    // (A o A)^T (Delta o Delta) per layer (ALGORITHMS.md §1.5).
    for (size_t i = 1; i <= layers_.size(); ++i) {
      const Layer& l = layers_[i - 1];
      Map<MatrixXd>(diag + l.weight_offset, l.out, l.in).noalias() +=
          c->delta[i] * c->z_squared[i - 1].transpose();
      if (l.bias_offset >= 0) {
        Map<VectorXd>(diag + l.bias_offset, l.out) +=
            c->delta[i].rowwise().sum();
      }
    }
  }
}

void Mlp::OutputVariance(const double* theta, const double* var, Cache* c,
                         MatrixXd* out) const {
  out->setZero(outputs(), c->z[0].cols());
  PrepareSquaredDeltas(c);
  for (int o = 0; o < outputs(); ++o) {
    SquaredDeltas(theta, o, nullptr, c);
    for (size_t i = 1; i <= layers_.size(); ++i) {
      const Layer& l = layers_[i - 1];
      const Map<const MatrixXd> wvar(var + l.weight_offset, l.out, l.in);
      MatrixXd per_unit = wvar * c->z_squared[i - 1];
      if (l.bias_offset >= 0) {
        per_unit.colwise() += Map<const VectorXd>(var + l.bias_offset, l.out);
      }
      out->row(o) +=
          (c->delta[i].array() * per_unit.array()).colwise().sum().matrix();
    }
  }
}

}  // namespace sparrow::core
