#include "core/optim/sbdl/sbdl.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/optim/first_order/first_order.h"
#include "core/optim/internal/run_monitor.h"
#include "core/optim/sbdl/state.h"
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
  double mu() const { return mu_; }
  void set_mu(double mu) { mu_ = mu; }

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
                               const std::vector<DenseBlock>& layers,
                               const DenseBlock* linear) {
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
  if (linear == nullptr) return out;
  const bool rows = options.groups == SbdlGroups::kRow;
  for (int i = 0; i < linear->in; ++i) {
    for (int j = 0; j < linear->out; ++j) {
      const int k = linear->weight_offset + i * linear->out + j;
      if (rows) {
        out.groups[i].push_back(k);  // layer 1's groups come first
      } else {
        out.groups.push_back({k});
        out.layer.push_back(0);
      }
    }
  }
  return out;
}

namespace {

FirstOrderOptions SbdlAdamOptions(const SbdlOptions& options) {
  FirstOrderOptions adam_options;
  adam_options.method = FirstOrderOptions::Method::kAdam;
  adam_options.learning_rate = options.learning_rate;
  adam_options.seed = options.seed;
  return adam_options;
}

// The outer loop's budgets; no tolerance test (the stall test stands in for
// it) and a progress record every outer iteration.
StopRules OuterStopRules(const SbdlOptions& options) {
  StopRules rules;
  rules.max_iterations = options.stop.max_iterations;
  rules.max_seconds = options.stop.max_seconds;
  rules.tolerance = 0.0;
  rules.report_every = 1;
  return rules;
}

// The size of Pack()'s vector before Adam's state, for n parameters in g
// groups.
Eigen::Index FixedStateSize(Eigen::Index n, Eigen::Index g) {
  return 9 + 2 * g + 9 * n;
}

// Whether a Pack()ed state fits a run of n parameters in g groups up to
// Adam's tail (Adam checks that): finite values, a positive Newton mu and
// counts in range.
bool StateHeadFits(const Eigen::VectorXd& p, Eigen::Index n, Eigen::Index g) {
  if (p.size() <= FixedStateSize(n, g) || !p.allFinite() || !(p(4) > 0)) {
    return false;
  }
  for (int i : {0, 2, 3, 5, 7, 8}) {  // counts
    if (!(p(i) >= 0 && p(i) <= 1e9)) return false;
  }
  return true;
}

// One MinimizeSbdl call: the state its outer iterations share, and a method
// per stage of an outer iteration (inner solve, hyperparameter update and
// pruning, recording). Run once.
class SbdlRun {
 public:
  SbdlRun(const SbdlOptions& options, const std::vector<DenseBlock>& layers,
          const DenseBlock* linear, SbdlObjective& objective,
          Eigen::VectorXd* w, IterationCallback* callback);

  // Leaves the kept iterate in *w and its hyperparameters in *result.
  Summary Run(SbdlResult* result);

 private:
  double Lambda(int layer) const {
    return options_.lambda.size() == 1 ? options_.lambda[0]
                                       : options_.lambda[layer];
  }
  // sigma^2: the given noise variance, or the mean squared residual at x.
  double NoiseVarianceAt(const Eigen::VectorXd& x) const {
    return options_.noise_variance > 0
               ? options_.noise_variance
               : std::max(objective_.MeanSquaredResidual(x), 1e-12);
  }
  void SetPenaltyWeights(double sigma2);
  double InnerSolve(double previous, int* epochs);
  int ReweightAndPrune(double sigma2);
  void UpdateResult(int t, double sigma2);
  std::optional<Termination> EndIteration(int t, double previous, double v,
                                          double sigma2, int epochs);
  bool MetricImproved();
  void KeepBest(bool improved, int newly_pruned);
  bool Stalled(int outer);
  void Pack(int outer, int newly_pruned);
  bool Restore(const SbdlOptions::Resume& resume);

  const SbdlOptions& options_;
  const std::vector<DenseBlock>& layers_;
  SbdlObjective& objective_;
  Eigen::VectorXd* w_;
  Summary summary_;
  internal::RunMonitor monitor_;
  const int n_;
  const SbdlGroupLayout layout_;
  const size_t num_groups_;
  // Penalty weights in the units of V (a mean over N samples): the Bayesian
  // objective SSE / (2 sigma^2) + sum_g omega_g |W_g| is V N / (2 sigma^2) +
  // ..., so lambda = 1 weighs the prior exactly as eq. (39) does.
  const double n_samples_;
  SbdlResult state_;
  std::vector<double> omega_, upsilon_;
  GroupPenalty penalty_;
  FirstOrderOptimizer adam_;
  ProximalNewton newton_;
  Eigen::VectorXd s_, last_good_, best_w_;
  // The kept iterate's hyperparameters, and the validation metric it had.
  SbdlResult best_;
  double best_metric_ = std::numeric_limits<double>::infinity();
  bool have_best_metric_ = false;
  int stalled_ = 0;  // outer iterations without a change of support or metric
  int before_ = 0;   // outer iterations of the run this one resumes
  Eigen::VectorXd packed_;  // the reported state (Pack)
};

SbdlRun::SbdlRun(const SbdlOptions& options,
                 const std::vector<DenseBlock>& layers,
                 const DenseBlock* linear, SbdlObjective& objective,
                 Eigen::VectorXd* w, IterationCallback* callback)
    : options_(options),
      layers_(layers),
      objective_(objective),
      w_(w),
      monitor_(OuterStopRules(options), callback, &summary_),
      n_(objective.num_params()),
      layout_(MakeSbdlGroups(options, layers, linear)),
      num_groups_(layout_.groups.size()),
      n_samples_(std::max(objective.num_samples(), 1)),
      omega_(num_groups_, 1.0),
      upsilon_(num_groups_, 1.0),
      penalty_(&layout_, &state_.mask),
      adam_(SbdlAdamOptions(options)),
      newton_(&objective, &penalty_, options.newton_damping),
      s_(n_),
      last_good_(*w),
      best_w_(*w) {
  state_.mask.setOnes(n_);
  state_.variance.setZero(n_);
  state_.upsilon.setZero(n_);
  state_.omega.setZero(n_);
  state_.total_groups = static_cast<int>(num_groups_);
  state_.noise_variance = NoiseVarianceAt(*w_);
  SetPenaltyWeights(state_.noise_variance);
  adam_.Initialize(n_);
  adam_.set_proximal(&penalty_);
  best_ = state_;
  monitor_.set_state(&packed_);
  if (options.resume.state.size() > 0) Restore(options.resume);
}

Summary SbdlRun::Run(SbdlResult* result) {
  summary_.initial_loss = objective_.Evaluate(*w_, nullptr);
  double previous = summary_.initial_loss;
  // A resumed run that had stalled at its checkpoint ends at once.
  const bool done = before_ > 0 && Stalled(before_);
  for (int t = 1; !done; ++t) {
    const int outer = before_ + t;
    int epochs = 0;
    double v = InnerSolve(previous, &epochs);
    if (!std::isfinite(v)) {
      *w_ = last_good_;
      summary_.iterations = t;
      summary_.message = absl::StrFormat(
          "the training loss became non-finite in outer iteration %d; try a "
          "smaller learning_rate or a larger newton_damping",
          outer);
      monitor_.Finish(Termination::kDiverged);
      break;
    }
    // 2-3. Hyperparameters from the diagonal GGN, then pruning.
    objective_.OutputJacobianSquares(*w_, &s_);
    const double sigma2 = NoiseVarianceAt(*w_);
    state_.noise_variance = sigma2;
    const int newly_pruned = ReweightAndPrune(sigma2);
    UpdateResult(outer, sigma2);
    if (newly_pruned > 0) v = objective_.Evaluate(*w_, nullptr);

    Pack(outer, newly_pruned);
    const auto stop = EndIteration(t, previous, v, sigma2, epochs);
    KeepBest(MetricImproved(), newly_pruned);
    previous = v;
    if (stop) {
      monitor_.Finish(*stop);
      break;
    }
    if (Stalled(outer)) break;
  }
  *w_ = best_w_;
  *result = std::move(best_);
  summary_.final_loss = objective_.Evaluate(*w_, nullptr);
  return summary_;
}

void SbdlRun::SetPenaltyWeights(double sigma2) {
  for (size_t g = 0; g < num_groups_; ++g) {
    penalty_.set_weight(
        g, Lambda(layout_.layer[g]) * 2.0 * sigma2 / n_samples_ * omega_[g]);
  }
}

// Step 1: the reweighted regularized fit, warm-started from *w_. Returns V at
// the new iterate (non-finite when the fit diverged) and the epochs run.
double SbdlRun::InnerSolve(double previous, int* epochs) {
  double v = previous;
  int epoch = 0;
  for (; epoch < options_.inner_epochs; ++epoch) {
    v = options_.inner == SbdlOptions::Inner::kProximalAdam
            ? adam_.Step(objective_, w_)
            : newton_.Step(w_);
    if (!std::isfinite(v)) break;
    if (options_.stop.max_seconds > 0 &&
        monitor_.Elapsed() >= options_.stop.max_seconds)
      break;
    // sigma^2 follows the fit, so the prior keeps its Bayesian weight; the
    // epoch's own loss gives it without another pass over the data.
    if (options_.noise_variance == 0) {
      SetPenaltyWeights(
          std::max(objective_.MeanSquaredResidualFromLoss(v, *w_), 1e-12));
    }
  }
  *epochs = epoch;
  if (std::isfinite(v)) v = objective_.Evaluate(*w_, nullptr);
  return v;
}

// Steps 2-3: upsilon and omega of every active group from the diagonal GGN
// s_ (ALGORITHMS.md §1.7), then the groups that fall under the thresholds and
// the neurons left disconnected are pruned. Returns the number of support
// changes (0 when the support stayed as it was).
int SbdlRun::ReweightAndPrune(double sigma2) {
  int newly_pruned = 0;
  for (size_t g = 0; g < num_groups_; ++g) {
    const std::vector<int>& idx = layout_.groups[g];
    if (!GroupActive(idx, state_.mask)) continue;
    double norm2 = 0.0;
    for (int k : idx) norm2 += (*w_)(k) * (*w_)(k);
    const double norm = std::sqrt(norm2);
    if (options_.reweight) {
      upsilon_[g] = norm / std::max(omega_[g], kOmegaFloor);
      double alpha = 0.0;
      for (int k : idx) {
        const double h = s_(k) / sigma2;
        alpha += h / (1.0 + upsilon_[g] * h);
      }
      omega_[g] = std::sqrt(alpha);
    }
    const bool prune = norm == 0.0 || (options_.reweight &&
                                       (upsilon_[g] < options_.kappa_variance ||
                                        norm < options_.kappa_weight));
    if (prune) {
      for (int k : idx) {
        (*w_)(k) = 0.0;
        state_.mask(k) = 0.0;
      }
      ++newly_pruned;
    }
  }
  SetPenaltyWeights(sigma2);
  if (options_.reweight && PruneDisconnected(layers_, w_, &state_.mask) > 0) {
    ++newly_pruned;  // the support changed
  }
  return newly_pruned;
}

// The result's per-parameter hyperparameters after outer iteration t.
void SbdlRun::UpdateResult(int t, double sigma2) {
  state_.pruned_groups = 0;
  for (const std::vector<int>& idx : layout_.groups)
    state_.pruned_groups += !GroupActive(idx, state_.mask);
  // The variance proxy of every parameter at this iterate.
  for (int k = 0; k < n_; ++k) {
    const double h = s_(k) / sigma2;
    state_.variance(k) = h > 0 ? 1.0 / h : 0.0;  // biases: flat prior
  }
  for (size_t g = 0; g < num_groups_; ++g) {
    for (int k : layout_.groups[g]) {
      const double h = s_(k) / sigma2;
      state_.upsilon(k) = upsilon_[g];
      state_.omega(k) = omega_[g];
      state_.variance(k) =
          state_.mask(k) == 0.0 ? 0.0 : upsilon_[g] / (1.0 + upsilon_[g] * h);
    }
  }
  state_.outer_iterations = t;
}

// Records outer iteration t with its sparsity figures.
std::optional<Termination> SbdlRun::EndIteration(int t, double previous,
                                                 double v, double sigma2,
                                                 int epochs) {
  double zeros = 0.0, total = 0.0;
  for (const auto& g : layout_.groups) {
    for (int k : g) zeros += (*w_)(k) == 0.0;
    total += static_cast<double>(g.size());
  }
  const double remaining = total > 0 ? 100.0 * (1.0 - zeros / total) : 100.0;
  return monitor_.EndIteration(
      t, previous, v, options_.learning_rate, *w_,
      {{"penalty", penalty_.Value(*w_)},
       {"remaining_pct", remaining},
       {"pruned_groups", static_cast<double>(state_.pruned_groups)},
       {"noise_variance", sigma2},
       {"inner_epochs", static_cast<double>(epochs)}});
}

// Whether the stall test ends the run after outer iteration `outer`.
bool SbdlRun::Stalled(int outer) {
  if (options_.stall_iterations == 0 || outer <= 1 ||
      stalled_ < options_.stall_iterations) {
    return false;
  }
  summary_.message =
      absl::StrCat("the support and the validation metric did not change for ",
                   stalled_, " outer iterations");
  monitor_.Finish(Termination::kConverged);
  return true;
}

// After the metric's verdict: the kept iterate, the stall count and the last
// good iterate.
void SbdlRun::KeepBest(bool improved, int newly_pruned) {
  if (!have_best_metric_ || improved) {
    best_w_ = *w_;
    best_ = state_;
  }
  stalled_ = (newly_pruned == 0 && !improved) ? stalled_ + 1 : 0;
  last_good_ = *w_;
}

// The state after outer iteration `outer`, before its validation metric is
// known: [outer, sigma^2, stalled, newly pruned, Newton's mu, pruned groups,
// the kept result's sigma^2, outer iterations and pruned groups; omega and
// upsilon per group; the mask, variance, upsilon and omega per parameter; the
// kept iterate and its mask, variance, upsilon and omega; Adam's state].
void SbdlRun::Pack(int outer, int newly_pruned) {
  const Eigen::Index n = n_, g = static_cast<Eigen::Index>(num_groups_);
  Eigen::VectorXd adam;
  adam_.PackState(&adam);
  packed_.resize(9 + 2 * g + 9 * n + adam.size());
  packed_.head(9) << outer, state_.noise_variance, stalled_, newly_pruned,
      newton_.mu(), state_.pruned_groups, best_.noise_variance,
      best_.outer_iterations, best_.pruned_groups;
  Eigen::Index at = 9;
  auto put = [&](const Eigen::VectorXd& v) {
    packed_.segment(at, v.size()) = v;
    at += v.size();
  };
  put(Eigen::Map<const Eigen::VectorXd>(omega_.data(), g));
  put(Eigen::Map<const Eigen::VectorXd>(upsilon_.data(), g));
  for (const Eigen::VectorXd* v :
       {&state_.mask, &state_.variance, &state_.upsilon, &state_.omega,
        &best_w_, &best_.mask, &best_.variance, &best_.upsilon, &best_.omega}) {
    put(*v);
  }
  put(adam);
}

// Restores a Pack()ed state and applies the checkpoint's validation verdict,
// which came after it. False (and nothing changed) when it does not fit.
bool SbdlRun::Restore(const SbdlOptions::Resume& resume) {
  const Eigen::VectorXd& p = resume.state;
  const Eigen::Index n = n_, g = static_cast<Eigen::Index>(num_groups_);
  if (!StateHeadFits(p, n, g) ||
      !adam_.UnpackState(p.tail(p.size() - FixedStateSize(n, g)))) {
    return false;
  }
  before_ = static_cast<int>(p(0));
  state_.noise_variance = p(1);
  stalled_ = static_cast<int>(p(2));
  const int newly_pruned = static_cast<int>(p(3));
  newton_.set_mu(p(4));
  state_.pruned_groups = static_cast<int>(p(5));
  best_.noise_variance = p(6);
  best_.outer_iterations = static_cast<int>(p(7));
  best_.pruned_groups = static_cast<int>(p(8));
  state_.outer_iterations = before_;
  Eigen::Index at = 9;
  for (std::vector<double>* v : {&omega_, &upsilon_}) {
    for (Eigen::Index i = 0; i < g; ++i) (*v)[i] = p(at + i);
    at += g;
  }
  for (Eigen::VectorXd* v :
       {&state_.mask, &state_.variance, &state_.upsilon, &state_.omega,
        &best_w_, &best_.mask, &best_.variance, &best_.upsilon, &best_.omega}) {
    *v = p.segment(at, n);
    at += n;
  }
  SetPenaltyWeights(state_.noise_variance);
  have_best_metric_ = resume.has_metric;
  if (resume.has_metric) best_metric_ = resume.best_metric;
  KeepBest(resume.improved, newly_pruned);
  return true;
}

// Whether the validation metric just reported improved on the best so far.
// Once a metric is finite, the kept iterate is the best one's (before, the
// latest iterate).
bool SbdlRun::MetricImproved() {
  const double metric = summary_.history.empty()
                            ? std::numeric_limits<double>::quiet_NaN()
                            : summary_.history.back().validation_metric;
  bool improved = false;
  if (std::isfinite(metric)) {
    have_best_metric_ = true;
    if (metric < best_metric_) {
      best_metric_ = metric;
      improved = true;
    }
  }
  return improved;
}

}  // namespace

Summary MinimizeSbdl(const SbdlOptions& options,
                     const std::vector<DenseBlock>& layers,
                     SbdlObjective& objective, Eigen::VectorXd* w,
                     SbdlResult* result, IterationCallback* callback,
                     const DenseBlock* linear) {
  return SbdlRun(options, layers, linear, objective, w, callback).Run(result);
}

bool SbdlStateFits(const SbdlOptions& options,
                   const std::vector<DenseBlock>& layers, int num_params,
                   const DenseBlock* linear) {
  const Eigen::VectorXd& p = options.resume.state;
  if (p.size() == 0) return true;
  const Eigen::Index g = static_cast<Eigen::Index>(
      MakeSbdlGroups(options, layers, linear).groups.size());
  if (!StateHeadFits(p, num_params, g)) return false;
  FirstOrderOptimizer adam(SbdlAdamOptions(options));
  adam.Initialize(num_params);
  return adam.UnpackState(p.tail(p.size() - FixedStateSize(num_params, g)));
}

}  // namespace sparrow::core
