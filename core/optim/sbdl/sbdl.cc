#include "core/optim/sbdl/sbdl.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/optim/first_order/first_order.h"
#include "core/optim/internal/run_monitor.h"
#include "core/util/option_error.h"

namespace sparrow::core {
namespace {

// Guard of upsilon = |W| / omega (ALGORITHMS.md §1.7).
constexpr double kOmegaFloor = 1e-12;

// The weighted group penalty sum_g c_g |W_g|_2 with c_g = lambda_l omega_g,
// and the permanent mask. Its prox is the block soft threshold; with
// per-coordinate steps (Adam's diagonal metric) a group is thresholded at the
// harmonic mean of its steps, which is exact for singleton groups [impl.
// choice].
class GroupPenalty : public ProximalTerm {
 public:
  GroupPenalty(const SbdlGroupLayout* layout, const Eigen::VectorXd* mask)
      : layout_(layout), mask_(mask), weight_(layout->groups.size(), 0.0) {}

  void set_weight(size_t g, double c) { weight_[g] = c; }

  void FilterGradient(Eigen::VectorXd* grad) const override {
    grad->array() *= mask_->array();
  }

  void Apply(const Eigen::VectorXd& step, Eigen::VectorXd* w) const override {
    const auto& groups = layout_->groups;
    for (size_t g = 0; g < groups.size(); ++g) {
      const std::vector<int>& idx = groups[g];
      // Masked weights stay zero (a group can be partly masked when a
      // neuron it feeds was disconnected).
      for (int k : idx) (*w)(k) *= (*mask_)(k);
      if (weight_[g] == 0.0) continue;
      // The harmonic mean of the steps, lr / mean(sqrt(v_hat) + eps) for
      // Adam: a coordinate with a vanishing gradient (a huge Adam step) must
      // not set the threshold of its whole group.
      double inverse_steps = 0.0, norm2 = 0.0;
      for (int k : idx) {
        inverse_steps += 1.0 / step(k);
        norm2 += (*w)(k) * (*w)(k);
      }
      const double threshold =
          static_cast<double>(idx.size()) / inverse_steps * weight_[g];
      const double norm = std::sqrt(norm2);
      const double scale = norm > threshold ? 1.0 - threshold / norm : 0.0;
      for (int k : idx) (*w)(k) *= scale;
    }
  }

  double Value(const Eigen::VectorXd& w) const {
    double sum = 0.0;
    const auto& groups = layout_->groups;
    for (size_t g = 0; g < groups.size(); ++g) {
      if (weight_[g] == 0.0) continue;
      double norm2 = 0.0;
      for (int k : groups[g]) norm2 += w(k) * w(k);
      sum += weight_[g] * std::sqrt(norm2);
    }
    return sum;
  }

 private:
  const SbdlGroupLayout* layout_;
  const Eigen::VectorXd* mask_;
  std::vector<double> weight_;
};

// Proximal diagonal Newton (ALGORITHMS.md §1.3, made robust): full-batch steps
// w <- prox_{P, D}(w - D^{-1} grad V) with D = diag GGN of V + mu, accepted
// when V + P decreases; mu adapts like Levenberg-Marquardt damping.
class ProximalNewton {
 public:
  ProximalNewton(SbdlObjective* objective, const GroupPenalty* penalty,
                 double mu)
      : objective_(objective), penalty_(penalty), mu_(mu) {
    const int n = objective->num_params();
    grad_.resize(n);
    h_.resize(n);
    step_.resize(n);
    trial_.resize(n);
  }

  // One accepted step (or none after 30 rejections). Returns V at the new
  // point, or +Inf when no finite point was reached.
  double Step(Eigen::VectorXd* w) {
    const double v0 = objective_->Evaluate(*w, &grad_);
    if (!std::isfinite(v0)) return v0;
    penalty_->FilterGradient(&grad_);
    objective_->DiagonalGgn(*w, &h_);
    const double f0 = v0 + penalty_->Value(*w);
    for (int attempt = 0; attempt < 30; ++attempt) {
      step_.array() = 1.0 / (h_.array() + mu_);
      trial_ = *w - step_.cwiseProduct(grad_);
      penalty_->Apply(step_, &trial_);
      const double v = objective_->Evaluate(trial_, nullptr);
      if (std::isfinite(v) && v + penalty_->Value(trial_) <= f0) {
        *w = trial_;
        mu_ = std::max(mu_ / 3.0, 1e-12);
        return v;
      }
      mu_ *= 10.0;
    }
    return v0;
  }

 private:
  SbdlObjective* objective_;
  const GroupPenalty* penalty_;
  double mu_;
  Eigen::VectorXd grad_, h_, step_, trial_;
};

// Zeroes and masks the incoming weights of neurons that no longer reach the
// output (every outgoing weight zero), from the last hidden layer down, when
// the matrices chain (layer l's neurons are layer l + 1's inputs). Exact: such
// weights have no effect on any prediction and a zero gradient. Returns the
// number of weights newly masked.
int PruneDisconnected(const std::vector<DenseBlock>& layers, Eigen::VectorXd* w,
                      Eigen::VectorXd* mask) {
  int pruned = 0;
  for (size_t l = layers.size() - 1; l-- > 0;) {
    const DenseBlock& m = layers[l];
    const DenseBlock& next = layers[l + 1];
    if (next.in != m.out) return pruned;
    for (int j = 0; j < m.out; ++j) {
      bool reaches = false;
      for (int r = 0; r < next.out && !reaches; ++r)
        reaches = (*w)(next.weight_offset + j * next.out + r) != 0.0;
      if (reaches) continue;
      for (int i = 0; i < m.in; ++i) {
        const int k = m.weight_offset + i * m.out + j;
        if ((*mask)(k) != 0.0) ++pruned;
        (*w)(k) = 0.0;
        (*mask)(k) = 0.0;
      }
    }
  }
  return pruned;
}

bool GroupActive(const std::vector<int>& group, const Eigen::VectorXd& mask) {
  for (int k : group) {
    if (mask(k) != 0.0) return true;
  }
  return false;
}

}  // namespace

absl::Status SbdlOptions::Validate(int num_layers) const {
  if (lambda.empty()) {
    return absl::InvalidArgumentError(
        "lambda is empty; give one value for every layer or a single value "
        "for all, e.g. [1]");
  }
  if (lambda.size() != 1 && static_cast<int>(lambda.size()) != num_layers) {
    return absl::InvalidArgumentError(absl::StrCat(
        "lambda has ", lambda.size(), " values but the network has ",
        num_layers, " weight layers; give one per layer or a single value"));
  }
  for (size_t l = 0; l < lambda.size(); ++l) {
    if (!(lambda[l] >= 0.0) || !std::isfinite(lambda[l])) {
      return OptionError(absl::StrCat("lambda[", l, "]"), lambda[l],
                         ">= 0 and finite");
    }
  }
  if (!(kappa_variance >= 0.0) || !std::isfinite(kappa_variance))
    return OptionError("kappa_variance", kappa_variance, ">= 0");
  if (!(kappa_weight >= 0.0) || !std::isfinite(kappa_weight))
    return OptionError("kappa_weight", kappa_weight, ">= 0");
  if (!(noise_variance >= 0.0) || !std::isfinite(noise_variance))
    return OptionError("noise_variance", noise_variance, ">= 0 (0 = estimate)");
  if (inner_epochs < 1)
    return OptionError("inner_epochs", inner_epochs, "at least 1");
  if (!(learning_rate > 0.0) || !std::isfinite(learning_rate))
    return OptionError("learning_rate", learning_rate, "positive and finite");
  if (!(newton_damping > 0.0) || !std::isfinite(newton_damping))
    return OptionError("newton_damping", newton_damping, "positive");
  if (groups == SbdlGroups::kTile && (tile_inputs < 1 || tile_neurons < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("tile is ", tile_inputs, " x ", tile_neurons,
                     "; both sizes must be at least 1"));
  }
  if (stall_iterations < 0)
    return OptionError("stall_iterations", stall_iterations, ">= 0");
  return stop.Validate();
}

SbdlGroupLayout MakeSbdlGroups(const SbdlOptions& options,
                               const std::vector<DenseBlock>& layers) {
  SbdlGroupLayout out;
  for (size_t l = 0; l < layers.size(); ++l) {
    const DenseBlock& m = layers[l];
    auto at = [&](int neuron, int input) {
      return m.weight_offset + input * m.out + neuron;
    };
    auto add = [&](std::vector<int> g) {
      out.groups.push_back(std::move(g));
      out.layer.push_back(static_cast<int>(l));
    };
    const bool output_layer = l + 1 == layers.size();
    SbdlGroups kind = options.groups;
    if (kind == SbdlGroups::kColumn && output_layer)
      kind = SbdlGroups::kElement;
    switch (kind) {
      case SbdlGroups::kElement:
        for (int i = 0; i < m.in; ++i) {
          for (int j = 0; j < m.out; ++j) add({at(j, i)});
        }
        break;
      case SbdlGroups::kRow:
        for (int i = 0; i < m.in; ++i) {
          std::vector<int> g;
          for (int j = 0; j < m.out; ++j) g.push_back(at(j, i));
          add(std::move(g));
        }
        break;
      case SbdlGroups::kColumn:
        for (int j = 0; j < m.out; ++j) {
          std::vector<int> g;
          for (int i = 0; i < m.in; ++i) g.push_back(at(j, i));
          add(std::move(g));
        }
        break;
      case SbdlGroups::kTile:
        for (int i0 = 0; i0 < m.in; i0 += options.tile_inputs) {
          for (int j0 = 0; j0 < m.out; j0 += options.tile_neurons) {
            std::vector<int> g;
            for (int i = i0; i < std::min(m.in, i0 + options.tile_inputs);
                 ++i) {
              for (int j = j0; j < std::min(m.out, j0 + options.tile_neurons);
                   ++j) {
                g.push_back(at(j, i));
              }
            }
            add(std::move(g));
          }
        }
        break;
    }
  }
  return out;
}

Summary MinimizeSbdl(const SbdlOptions& options,
                     const std::vector<DenseBlock>& layers,
                     SbdlObjective& objective, Eigen::VectorXd* w,
                     SbdlResult* result, IterationCallback* callback) {
  Summary summary;
  internal::RunMonitor monitor(
      {options.stop.max_iterations, options.stop.max_seconds,
       /*tolerance=*/0.0, /*report_every=*/1},
      callback, &summary);
  const int n = objective.num_params();
  const SbdlGroupLayout layout = MakeSbdlGroups(options, layers);
  const size_t num_groups = layout.groups.size();
  auto lambda = [&](int layer) {
    return options.lambda.size() == 1 ? options.lambda[0]
                                      : options.lambda[layer];
  };

  SbdlResult state;
  state.mask.setOnes(n);
  state.variance.setZero(n);
  state.upsilon.setZero(n);
  state.omega.setZero(n);
  state.total_groups = static_cast<int>(num_groups);
  std::vector<double> omega(num_groups, 1.0), upsilon(num_groups, 1.0);
  GroupPenalty penalty(&layout, &state.mask);
  // Penalty weights in the units of V (a mean over N samples): the Bayesian
  // objective SSE / (2 sigma^2) + sum_g omega_g |W_g| is V N / (2 sigma^2) +
  // ..., so lambda = 1 weighs the prior exactly as eq. (39) does.
  const double n_samples = std::max(objective.num_samples(), 1);
  auto sigma2_at = [&](const Eigen::VectorXd& x) {
    return options.noise_variance > 0
               ? options.noise_variance
               : std::max(objective.MeanSquaredResidual(x), 1e-12);
  };
  auto set_weights = [&](double sigma2) {
    for (size_t g = 0; g < num_groups; ++g) {
      penalty.set_weight(
          g, lambda(layout.layer[g]) * 2.0 * sigma2 / n_samples * omega[g]);
    }
  };
  state.noise_variance = sigma2_at(*w);
  set_weights(state.noise_variance);

  FirstOrderOptions adam_options;
  adam_options.method = FirstOrderOptions::Method::kAdam;
  adam_options.learning_rate = options.learning_rate;
  adam_options.seed = options.seed;
  FirstOrderOptimizer adam(adam_options);
  adam.Initialize(n);
  adam.set_proximal(&penalty);
  ProximalNewton newton(&objective, &penalty, options.newton_damping);

  Eigen::VectorXd s(n), last_good = *w, best_w = *w;
  SbdlResult best = state;
  double best_metric = std::numeric_limits<double>::infinity();
  bool have_best_metric = false;
  int stalled = 0;
  summary.initial_loss = objective.Evaluate(*w, nullptr);
  double previous = summary.initial_loss;
  for (int t = 1;; ++t) {
    // 1. The reweighted regularized fit, warm-started.
    double v = previous;
    int epochs = 0;
    for (; epochs < options.inner_epochs; ++epochs) {
      v = options.inner == SbdlOptions::Inner::kProximalAdam
              ? adam.Step(objective, w)
              : newton.Step(w);
      if (!std::isfinite(v)) break;
      if (options.stop.max_seconds > 0 &&
          monitor.Elapsed() >= options.stop.max_seconds)
        break;
      // sigma^2 follows the fit, so the prior keeps its Bayesian weight; the
      // epoch's own loss gives it without another pass over the data.
      if (options.noise_variance == 0) {
        set_weights(
            std::max(objective.MeanSquaredResidualFromLoss(v, *w), 1e-12));
      }
    }
    if (std::isfinite(v)) v = objective.Evaluate(*w, nullptr);
    if (!std::isfinite(v)) {
      *w = last_good;
      summary.iterations = t;
      summary.message = absl::StrFormat(
          "the training loss became non-finite in outer iteration %d; try a "
          "smaller learning_rate or a larger newton_damping",
          t);
      monitor.Finish(Termination::kDiverged);
      break;
    }

    // 2-3. Hyperparameters from the diagonal GGN, then pruning.
    int newly_pruned = 0;
    objective.OutputJacobianSquares(*w, &s);
    const double sigma2 = sigma2_at(*w);
    state.noise_variance = sigma2;
    for (size_t g = 0; g < num_groups; ++g) {
      const std::vector<int>& idx = layout.groups[g];
      if (!GroupActive(idx, state.mask)) continue;
      double norm2 = 0.0;
      for (int k : idx) norm2 += (*w)(k) * (*w)(k);
      const double norm = std::sqrt(norm2);
      if (options.reweight) {
        upsilon[g] = norm / std::max(omega[g], kOmegaFloor);
        double alpha = 0.0;
        for (int k : idx) {
          const double h = s(k) / sigma2;
          alpha += h / (1.0 + upsilon[g] * h);
        }
        omega[g] = std::sqrt(alpha);
      }
      const bool prune = norm == 0.0 || (options.reweight &&
                                         (upsilon[g] < options.kappa_variance ||
                                          norm < options.kappa_weight));
      if (prune) {
        for (int k : idx) {
          (*w)(k) = 0.0;
          state.mask(k) = 0.0;
        }
        ++newly_pruned;
      }
    }
    set_weights(sigma2);
    if (options.reweight && PruneDisconnected(layers, w, &state.mask) > 0) {
      ++newly_pruned;  // the support changed
    }
    state.pruned_groups = 0;
    for (const std::vector<int>& idx : layout.groups)
      state.pruned_groups += !GroupActive(idx, state.mask);
    // The variance proxy of every parameter at this iterate.
    for (int k = 0; k < n; ++k) {
      const double h = s(k) / sigma2;
      state.variance(k) = h > 0 ? 1.0 / h : 0.0;  // biases: flat prior
    }
    for (size_t g = 0; g < num_groups; ++g) {
      for (int k : layout.groups[g]) {
        const double h = s(k) / sigma2;
        state.upsilon(k) = upsilon[g];
        state.omega(k) = omega[g];
        state.variance(k) =
            state.mask(k) == 0.0 ? 0.0 : upsilon[g] / (1.0 + upsilon[g] * h);
      }
    }
    state.outer_iterations = t;
    if (newly_pruned > 0) v = objective.Evaluate(*w, nullptr);

    double zeros = 0.0, total = 0.0;
    for (const auto& g : layout.groups) {
      for (int k : g) zeros += (*w)(k) == 0.0;
      total += static_cast<double>(g.size());
    }
    const double remaining = total > 0 ? 100.0 * (1.0 - zeros / total) : 100.0;
    const auto stop = monitor.EndIteration(
        t, previous, v, options.learning_rate, *w,
        {{"penalty", penalty.Value(*w)},
         {"remaining_pct", remaining},
         {"pruned_groups", static_cast<double>(state.pruned_groups)},
         {"noise_variance", sigma2},
         {"inner_epochs", static_cast<double>(epochs)}});
    const double metric = summary.history.empty()
                              ? std::numeric_limits<double>::quiet_NaN()
                              : summary.history.back().validation_metric;
    bool improved = false;
    if (std::isfinite(metric)) {
      have_best_metric = true;
      if (metric < best_metric) {
        best_metric = metric;
        improved = true;
      }
    }
    if (!have_best_metric || improved) {
      best_w = *w;
      best = state;
    }
    stalled = (newly_pruned == 0 && !improved) ? stalled + 1 : 0;
    last_good = *w;
    previous = v;
    if (stop) {
      monitor.Finish(*stop);
      break;
    }
    if (options.stall_iterations > 0 && t > 1 &&
        stalled >= options.stall_iterations) {
      summary.message = absl::StrCat(
          "the support and the validation metric did not change for ", stalled,
          " outer iterations");
      monitor.Finish(Termination::kConverged);
      break;
    }
  }
  *w = best_w;
  *result = std::move(best);
  summary.final_loss = objective.Evaluate(*w, nullptr);
  return summary;
}

}  // namespace sparrow::core
