#include "core/optim/admm/admm.h"

#include <cmath>
#include <limits>

#include "core/optim/admm/state.h"
#include "core/optim/internal/run_monitor.h"
#include "core/util/option_error.h"

namespace sparrow::core {
namespace {

Eigen::VectorXd Gather(const Eigen::VectorXd& w, const std::vector<int>& idx) {
  Eigen::VectorXd out(idx.size());
  for (size_t j = 0; j < idx.size(); ++j)
    out(static_cast<Eigen::Index>(j)) = w(idx[j]);
  return out;
}

void Scatter(const Eigen::VectorXd& v, const std::vector<int>& idx,
             Eigen::VectorXd* w) {
  for (size_t j = 0; j < idx.size(); ++j)
    (*w)(idx[j]) = v(static_cast<Eigen::Index>(j));
}

}  // namespace

absl::Status AdmmOptions::Validate() const {
  if (!(rho >= 0) || !std::isfinite(rho))
    return OptionError("rho", rho, ">= 0 (0 = the default)");
  if (inner_epochs < 1)
    return OptionError("inner_epochs", inner_epochs, ">= 1");
  return stop.Validate();
}

double AdmmRho(const AdmmOptions& options, double group_lasso_tau) {
  if (options.rho > 0) return options.rho;
  return group_lasso_tau > 0 ? 10.0 * group_lasso_tau : 1.0;
}

namespace {

// What a checkpoint keeps of a run between two ADMM iterations, packed into
// one vector as IterationRecord::optimizer_state: [theta_S, u, lambda,
// best_loss, best (keep_best only)]. nu is the reported model's w_S.
class AdmmState {
 public:
  AdmmState(const AdmmOptions& options, int split_size, int num_params)
      : s_(split_size),
        n_(options.keep_best ? num_params : 0),
        packed_(2 * s_ + 2 + n_) {}

  // Restores a packed state into *theta_s, *u, the solver's damping, *best
  // and *best_loss; false (nothing changed) when its size does not fit.
  bool Unpack(const Eigen::VectorXd& state, Eigen::VectorXd* theta_s,
              Eigen::VectorXd* u, GaussNewton* solver, Eigen::VectorXd* best,
              double* best_loss) const {
    if (!Fits(state)) return false;
    *theta_s = state.head(s_);
    *u = state.segment(s_, s_);
    solver->set_lambda(state(2 * s_));
    *best_loss = state(2 * s_ + 1);
    if (n_ > 0) *best = state.tail(n_);
    return true;
  }
  bool Fits(const Eigen::VectorXd& state) const {
    return state.size() == packed_.size() && state(2 * s_) > 0;
  }
  const Eigen::VectorXd& Pack(const Eigen::VectorXd& theta_s,
                              const Eigen::VectorXd& u, double lambda,
                              const Eigen::VectorXd& best, double best_loss) {
    packed_.head(s_) = theta_s;
    packed_.segment(s_, s_) = u;
    packed_(2 * s_) = lambda;
    packed_(2 * s_ + 1) = best_loss;
    if (n_ > 0) packed_.tail(n_) = best;
    return packed_;
  }

 private:
  Eigen::Index s_, n_;
  Eigen::VectorXd packed_;
};

// No best iterate yet: finite, so that a checkpoint's state stays finite.
constexpr double kNoBest = std::numeric_limits<double>::max();

}  // namespace

Summary MinimizeAdmm(const AdmmOptions& options,
                     const GaussNewtonOptions& inner,
                     LeastSquaresProblem& problem, const Proximal& g,
                     const std::vector<int>& split, Eigen::VectorXd* w,
                     IterationCallback* callback) {
  Summary summary;
  const double rho = AdmmRho(options, 0.0);
  // ADMM has no monotone objective: only the budget, deadline and callback stop
  // it.
  StopRules rules = options.stop;
  rules.tolerance = 0.0;
  rules.stall_window = 0;
  internal::RunMonitor monitor(rules, callback, &summary,
                               /*allow_non_finite=*/true);
  const double scale = 1.0 / std::max(1, problem.num_samples());
  GaussNewton solver(inner, &problem);
  QuadraticTerm term;
  term.indices = split;
  term.rho = rho;
  Eigen::VectorXd nu = Gather(*w, split);
  Eigen::VectorXd u = Eigen::VectorXd::Zero(nu.size());
  Eigen::VectorXd model = *w;
  summary.initial_loss = (problem.Value(*w) + g.Value(nu)) * scale;
  Eigen::VectorXd best = *w;
  double best_loss = kNoBest;
  AdmmState state(options, static_cast<int>(split.size()),
                  static_cast<int>(w->size()));
  if (Eigen::VectorXd theta_s; state.Unpack(options.initial_state, &theta_s, &u,
                                            &solver, &best, &best_loss)) {
    Scatter(theta_s, split, w);  // resumed: *w is the model, nu spliced in
  }
  Termination termination = Termination::kMaxIterations;
  for (int t = 1;; ++t) {
    term.center = nu - u;
    solver.SetQuadraticTerm(&term);
    int accepted = 0;
    for (int e = 0; e < options.inner_epochs; ++e) {
      if (!solver.Step(w).accepted) break;
      ++accepted;
    }
    const Eigen::VectorXd theta = Gather(*w, split);
    Eigen::VectorXd next = theta + u;
    g.Apply(1.0 / rho, next);
    const double dual = rho * (next - nu).norm();
    nu = next;
    u += theta - nu;
    const double primal = (theta - nu).norm();
    model = *w;
    Scatter(nu, split, &model);
    // The reported loss is that of the model actually returned: V(nu) + g(nu).
    const double loss = (problem.Value(model) + g.Value(nu)) * scale;
    if (loss < best_loss) {
      best_loss = loss;
      best = model;
    }
    monitor.set_state(&state.Pack(theta, u, solver.lambda(), best, best_loss));
    const auto stop = monitor.EndIteration(
        t, std::numeric_limits<double>::quiet_NaN(), loss,
        inner.method == GaussNewtonOptions::Method::kLevenbergMarquardt
            ? solver.lambda()
            : 0.0,
        model,
        {{"primal_residual", primal},
         {"dual_residual", dual},
         {"inner_steps_accepted", static_cast<double>(accepted)}});
    if (stop) {
      termination = *stop;
      break;
    }
  }
  *w = model;
  if (options.keep_best && best_loss < kNoBest) {
    *w = best;
    summary.final_loss = best_loss;
  }
  monitor.Finish(termination);
  return summary;
}

bool AdmmStateFits(const AdmmOptions& options, int split_size, int num_params) {
  return options.initial_state.size() == 0 ||
         AdmmState(options, split_size, num_params).Fits(options.initial_state);
}

}  // namespace sparrow::core
