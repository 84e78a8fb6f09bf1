#include "core/optim/lbfgs/lbfgs.h"

#include <LBFGS.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/optim/internal/run_monitor.h"
#include "core/optim/lbfgs/state.h"

namespace sparrow::core {
namespace {

using Eigen::VectorXd;

// Thrown out of a line search at a point where the loss is not finite.
struct NonFiniteLoss {};

// The objective as LBFGS++ calls it. A non-finite value or gradient is +Inf
// with a zero gradient; inside a line search it ends the search instead
// (NonFiniteLoss): the strong-Wolfe zoom interpolates with the infinite value
// into a NaN step, after which every further trial is lost.
class Adapter {
 public:
  explicit Adapter(Objective& objective) : objective_(objective) {}

  double operator()(const VectorXd& w, VectorXd& grad) {
    const double f = objective_.Evaluate(w, &grad);
    if (!std::isfinite(f) || !grad.allFinite()) {
      grad.setZero();
      if (in_search_) throw NonFiniteLoss();
      return std::numeric_limits<double>::infinity();
    }
    return f;
  }
  void set_in_search(bool in_search) { in_search_ = in_search; }

 private:
  Objective& objective_;
  bool in_search_ = false;
};

// The correction pairs, oldest first, as the reported state
// [count, s_1 .. s_count, y_1 .. y_count]: what a resumed run needs to go on
// exactly where the run was.
int PairCount(const VectorXd& state, Eigen::Index n, int memory) {
  if (state.size() < 1 || n == 0) return 0;
  const double c = state(0);
  if (!(c >= 1 && c <= memory) || c != std::floor(c)) return 0;
  const int count = static_cast<int>(c);
  return state.size() == 1 + 2 * count * n ? count : 0;
}

// Appends the pair (s, y), dropping the oldest one beyond `memory`.
void PushPair(int memory, const VectorXd& s, const VectorXd& y,
              VectorXd* state) {
  const Eigen::Index n = s.size();
  const int count = PairCount(*state, n, memory);
  if (count < memory) {
    const Eigen::Index ys = count * n;
    state->conservativeResize(1 + 2 * (count + 1) * n);
    // Move the y block up by one pair to make room for s.
    std::copy_backward(state->data() + 1 + ys, state->data() + 1 + 2 * ys,
                       state->data() + 1 + 2 * ys + n);
    state->segment(1 + ys, n) = s;
    state->segment(1 + (count + 1) * n + ys, n) = y;
    (*state)(0) = count + 1;
    return;
  }
  const Eigen::Index block = memory * n;
  for (Eigen::Index start : {Eigen::Index{1}, 1 + block}) {
    double* b = state->data() + start;
    std::copy(b + n, b + block, b);
  }
  state->segment(1 + block - n, n) = s;
  state->segment(1 + 2 * block - n, n) = y;
}

// LBFGS++'s solver loop (LBFGSSolver::minimize), with its Hessian
// approximation and Nocedal-Wright line search, written out so that each
// iteration reports progress and its correction pairs: LBFGSSolver keeps them
// private, and a resumed run must restore them to continue bit for bit.
class LbfgsRun {
 public:
  LbfgsRun(const LbfgsOptions& options, Objective& objective,
           IterationCallback* callback)
      : options_(options),
        adapter_(objective),
        monitor_(Rules(options), callback, &summary_) {
    param_.m = options.memory;
    param_.epsilon = options.gradient_tolerance;
    param_.epsilon_rel = options.gradient_tolerance;
    param_.max_linesearch = options.max_line_search;
    param_.linesearch = LBFGSpp::LBFGS_LINESEARCH_BACKTRACKING_STRONG_WOLFE;
    monitor_.set_state(&state_);
  }

  Summary Run(VectorXd* w) {
    Iterate(w);
    summary_.initial_loss = initial_;
    summary_.final_loss = fx_;
    if (!std::isfinite(initial_)) {
      termination_ = Termination::kDiverged;
      summary_.message = "the objective is not finite at the starting point";
    }
    // The last iteration when it fell between reports (the history ends
    // with the outcome).
    if (summary_.history.empty() ||
        summary_.history.back().iteration != summary_.iterations) {
      IterationRecord r;
      r.iteration = summary_.iterations;
      r.elapsed_seconds = monitor_.OptimizerSeconds();
      r.loss = summary_.final_loss;
      summary_.history.push_back(r);
    }
    monitor_.Finish(termination_);
    return summary_;
  }

 private:
  static StopRules Rules(const LbfgsOptions& options) {
    StopRules rules = options.stop;
    rules.tolerance = 0.0;  // LBFGS++'s relative test, in Converged()
    return rules;
  }

  // A failed line search: back to the last accepted iterate.
  void Fail(VectorXd* x, double previous, const std::string& message) {
    *x = xp_;
    fx_ = previous;
    termination_ = Termination::kLineSearchFailure;
    summary_.message = message;
  }

  // Armijo backtracking from the last iterate along the same direction, from
  // a tenth of the step `bad` (one known not to serve), each trial 10 times
  // shorter, down to 1e-12 of it. True with *x, fx_ and grad_ at the first
  // trial that lowers the loss enough.
  bool Backtrack(VectorXd* x, double previous, double bad) {
    const double slope = gradp_.dot(drt_);
    for (double t = 0.1 * bad; t >= bad * 1e-12; t *= 0.1) {
      *x = xp_ + t * drt_;
      fx_ = adapter_(*x, grad_);
      if (std::isfinite(fx_) && fx_ <= previous + param_.ftol * t * slope) {
        return true;
      }
    }
    return false;
  }

  // The search direction drt_ at grad_ and its first step: the quasi-Newton
  // step, or with an empty memory steepest descent with a step of unit
  // length (the same at a start, a resume and after skipped pairs).
  double Direction(int stored) {
    if (stored > 0) {
      bfgs_.apply_Hv(grad_, -1.0, drt_);
      return 1.0;
    }
    drt_ = -grad_;
    return 1.0 / drt_.norm();
  }

  bool Converged(const VectorXd& x, double previous) const {
    const double g = grad_.norm();
    if (g <= param_.epsilon || g <= param_.epsilon_rel * x.norm()) return true;
    const double tol = options_.stop.tolerance;
    return tol > 0 &&
           std::abs(previous - fx_) <=
               tol * std::max({std::abs(fx_), std::abs(previous), 1.0});
  }

  void Iterate(VectorXd* x) {
    const Eigen::Index n = x->size();
    fx_ = adapter_(*x, grad_);
    initial_ = fx_;
    if (!std::isfinite(fx_)) return;
    bfgs_.reset(static_cast<int>(n), options_.memory);
    const int pairs = PairCount(options_.initial_state, n, options_.memory);
    if (pairs > 0) state_ = options_.initial_state;
    for (int i = 0; i < pairs; ++i) {
      bfgs_.add_correction(state_.segment(1 + i * n, n),
                           state_.segment(1 + (pairs + i) * n, n));
    }
    if (Converged(*x, std::numeric_limits<double>::quiet_NaN())) {
      if (pairs == 0 && options_.stop.stall_window > 0) {
        termination_ = Termination::kStalled;
        summary_.message = absl::StrFormat(
            "the gradient is ~0 at the starting point (|g| = %.3g): nothing "
            "moves. Check init_scale (too small, or saturating activations) "
            "and the data's normalization",
            grad_.norm());
      }
      return;
    }
    int stored = pairs;  // correction pairs in the memory
    double step = Direction(stored);
    for (int k = 1;; ++k) {
      xp_ = *x;
      gradp_ = grad_;
      const double previous = fx_;
      const double trial = step;
      bool diverged = false;
      adapter_.set_in_search(true);
      try {
        LBFGSpp::LineSearchNocedalWright<double>::LineSearch(
            adapter_, fx_, *x, grad_, step, drt_, xp_, param_);
      } catch (const NonFiniteLoss&) {
        diverged = true;  // at the trial step `step`
      } catch (const std::exception& e) {
        adapter_.set_in_search(false);
        Fail(x, previous, e.what());
        return;
      }
      adapter_.set_in_search(false);
      // The search reached a non-finite loss, or used up max_line_search
      // evaluations without lowering the loss (its interpolation collapses
      // the step when a trial's loss is huge): backtrack instead.
      if ((diverged || !(fx_ < previous)) &&
          !Backtrack(x, previous, diverged ? step : 10.0 * trial)) {
        Fail(x, previous,
             diverged ? "the line search reached a point where the loss is "
                        "not finite, and backtracking found no lower loss; "
                        "the last iterate is kept"
                      : "the line search found no lower loss "
                        "(max_line_search evaluations, then backtracking); "
                        "the last iterate is kept");
        return;
      }
      const bool converged = Converged(*x, previous);
      if (!converged) {
        s_ = *x - xp_;
        y_ = grad_ - gradp_;
        // A backtracked step need not satisfy the curvature condition; a pair
        // with s'y <= 0 would make the inverse Hessian indefinite.
        if (s_.dot(y_) > 0.0) {
          bfgs_.add_correction(s_, y_);
          PushPair(options_.memory, s_, y_, &state_);
          stored = std::min(stored + 1, options_.memory);
        }
        step = Direction(stored);
      }
      if (const auto stop = monitor_.EndIteration(k, previous, fx_, 0.0, *x)) {
        termination_ = *stop;
        return;
      }
      if (converged) {
        termination_ = Termination::kConverged;
        return;
      }
    }
  }

  const LbfgsOptions& options_;
  Adapter adapter_;
  Summary summary_;
  internal::RunMonitor monitor_;
  LBFGSpp::LBFGSParam<double> param_;
  LBFGSpp::BFGSMat<double> bfgs_;
  Termination termination_ = Termination::kConverged;
  double fx_ = 0.0, initial_ = 0.0;
  VectorXd grad_, gradp_, xp_, drt_, s_, y_, state_;
};

}  // namespace

absl::Status LbfgsOptions::Validate() const {
  if (memory < 1)
    return absl::InvalidArgumentError(
        absl::StrCat("memory is ", memory, "; it must be >= 1"));
  if (!(gradient_tolerance >= 0.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gradient_tolerance is ", gradient_tolerance, "; it must be >= 0"));
  }
  if (max_line_search < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_line_search is ", max_line_search, "; it must be >= 1"));
  }
  return stop.Validate();
}

Summary MinimizeLbfgs(const LbfgsOptions& options, Objective& objective,
                      Eigen::VectorXd* w, IterationCallback* callback) {
  return LbfgsRun(options, objective, callback).Run(w);
}

bool LbfgsStateFits(const Eigen::VectorXd& state, Eigen::Index num_params,
                    int memory) {
  return state.size() == 0 || PairCount(state, num_params, memory) > 0;
}

}  // namespace sparrow::core
