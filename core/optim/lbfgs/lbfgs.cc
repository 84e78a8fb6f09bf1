#include "core/optim/lbfgs/lbfgs.h"

#include <LBFGS.h>

#include <cmath>
#include <optional>

#include "absl/strings/str_cat.h"
#include "core/optim/internal/run_monitor.h"

namespace sparrow::core {
namespace {

// Thrown from inside the objective to unwind LBFGS++ when the run must stop.
struct StopRequest {
  Termination termination;
};

class Adapter {
 public:
  Adapter(Objective& objective, internal::RunMonitor* monitor)
      : objective_(objective), monitor_(monitor) {}

  double operator()(const Eigen::VectorXd& w, Eigen::VectorXd& grad) {
    double f = objective_.Evaluate(w, &grad);
    if (!std::isfinite(f) || !grad.allFinite()) {
      // Reject the point: LBFGS++'s line search backtracks on a larger value.
      grad.setZero();
      return std::numeric_limits<double>::infinity();
    }
    if (!has_best_) initial_ = f;
    if (!has_best_ || f < best_) {
      const double previous =
          has_best_ ? best_ : std::numeric_limits<double>::infinity();
      has_best_ = true;
      best_ = f;
      best_w_ = w;
      ++iterations_;
      if (iterations_ > 1) {
        const auto stop =
            monitor_->EndIteration(iterations_ - 1, previous, f, 0.0, w);
        if (stop) throw StopRequest{*stop};
      }
    }
    return f;
  }

  bool has_best() const { return has_best_; }
  double best() const { return best_; }
  double initial() const { return initial_; }
  const Eigen::VectorXd& best_w() const { return best_w_; }

 private:
  Objective& objective_;
  internal::RunMonitor* monitor_;
  bool has_best_ = false;
  double best_ = 0.0;
  double initial_ = 0.0;
  int iterations_ = 0;
  Eigen::VectorXd best_w_;
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
  Summary summary;
  // The tolerance test runs inside LBFGS++ (past/delta); the monitor handles
  // the rest.
  StopRules rules = options.stop;
  rules.tolerance = 0.0;
  internal::RunMonitor monitor(rules, callback, &summary);
  LBFGSpp::LBFGSParam<double> param;
  param.m = options.memory;
  param.epsilon = options.gradient_tolerance;
  param.epsilon_rel = options.gradient_tolerance;
  param.max_iterations = options.stop.max_iterations;
  param.max_linesearch = options.max_line_search;
  param.linesearch = LBFGSpp::LBFGS_LINESEARCH_BACKTRACKING_STRONG_WOLFE;
  if (options.stop.tolerance > 0.0) {
    param.past = 1;
    param.delta = options.stop.tolerance;
  }
  LBFGSpp::LBFGSSolver<double, LBFGSpp::LineSearchNocedalWright> solver(param);
  Adapter adapter(objective, &monitor);
  Eigen::VectorXd x = *w;
  double fx = 0.0;
  Termination termination = Termination::kConverged;
  try {
    const int k = solver.minimize(adapter, x, fx);
    termination = k >= options.stop.max_iterations ? Termination::kMaxIterations
                                                   : Termination::kConverged;
    if (!std::isfinite(fx)) {
      // LBFGS++ 0.1 can end its line search on a rejected (non-finite) trial
      // point, whose zero gradient then passes the convergence test.
      termination = Termination::kLineSearchFailure;
      summary.message =
          "the line search ended on a point where the loss is not finite; "
          "the best finite iterate is kept";
    }
  } catch (const StopRequest& stop) {
    termination = stop.termination;
  } catch (const std::exception& e) {
    // LBFGS++ signals line-search trouble by exception; the best point so far
    // is kept.
    termination = Termination::kLineSearchFailure;
    summary.message = e.what();
  }
  if (adapter.has_best()) {
    *w = adapter.best_w();
    summary.initial_loss = adapter.initial();
    summary.final_loss = adapter.best();
  } else {
    termination = Termination::kDiverged;
    summary.message = "the objective is not finite at the starting point";
  }
  if (summary.history.empty() ||
      summary.history.back().loss != summary.final_loss) {
    IterationRecord r;
    r.iteration = summary.iterations;
    r.elapsed_seconds = monitor.OptimizerSeconds();
    r.loss = summary.final_loss;
    summary.history.push_back(r);
  }
  monitor.Finish(termination);
  return summary;
}

}  // namespace sparrow::core
