#include "core/optim/gauss_newton/gauss_newton.h"

#include <cmath>
#include <limits>

#include "Eigen/Cholesky"
#include "absl/strings/str_cat.h"
#include "core/optim/internal/run_monitor.h"
#include "core/util/option_error.h"

namespace sparrow::core {

absl::Status GaussNewtonOptions::Validate() const {
  if (!(c1 > 0 && c1 < 1)) return OptionError("c1", c1, "in (0, 1)");
  if (!(sigma > 0 && sigma < 1))
    return OptionError("sigma", sigma, "in (0, 1)");
  if (max_backtracks < 1)
    return OptionError("max_backtracks", max_backtracks, ">= 1");
  if (!(min_cosine >= 0 && min_cosine < 1))
    return OptionError("min_cosine", min_cosine, "in [0, 1)");
  if (!(lambda0 > 0) || !std::isfinite(lambda0))
    return OptionError("lambda0", lambda0, "positive");
  if (!(c2 > 1)) return OptionError("c2", c2, "> 1");
  if (!(c3 > 1)) return OptionError("c3", c3, "> 1");
  if (max_trials < 1) return OptionError("max_trials", max_trials, ">= 1");
  if (!(epsilon_v >= 0)) return OptionError("epsilon_v", epsilon_v, ">= 0");
  return stop.Validate();
}

double QuadraticTerm::Value(const Eigen::VectorXd& w) const {
  double sum = 0.0;
  for (size_t j = 0; j < indices.size(); ++j) {
    const double d = w(indices[j]) - center(static_cast<Eigen::Index>(j));
    sum += d * d;
  }
  return 0.5 * rho * sum;
}

GaussNewton::GaussNewton(const GaussNewtonOptions& options,
                         LeastSquaresProblem* problem)
    : options_(options),
      problem_(problem),
      lambda_(options.lambda0),
      pool_(problem->trial_pool()) {}

double GaussNewton::Augmented(const Eigen::VectorXd& w, double value) const {
  if (term_ == nullptr || !std::isfinite(value)) return value;
  return value + term_->Value(w);
}

double GaussNewton::TrialValue(int slot, const Eigen::VectorXd& trial,
                               double bound) {
  const double extra = term_ == nullptr ? 0.0 : term_->Value(trial);
  const double v = problem_->ValueBelowIn(slot, trial, bound - extra);
  return std::isfinite(v) ? v + extra : v;
}

template <typename Make, typename Bound>
bool GaussNewton::FirstAccepted(int max_trials, bool pairs, double factor,
                                Make&& make, Bound&& bound, double* param,
                                Eigen::VectorXd* w, double* value,
                                int* trials) {
  const int width = pool_ != nullptr && pairs ? 2 : 1;
  for (int j = 0; j < max_trials; j += width) {
    const int n = std::min(width, max_trials - j);
    // The parameters trials in turn would use: each the previous times factor.
    const double params[2] = {*param, *param * factor};
    double values[2];
    auto run = [&](int k) {
      values[k] = make(params[k], k, &trials_[k])
                      ? TrialValue(k, trials_[k], bound(params[k]))
                      : std::numeric_limits<double>::infinity();
    };
    if (n == 1) {
      run(0);
    } else {
      pool_->Run(n, run);
    }
    for (int k = 0; k < n; ++k) {
      ++*trials;
      if (std::isfinite(values[k]) && values[k] <= bound(params[k])) {
        *w = trials_[k];
        *value = values[k];
        *param = params[k];
        return true;
      }
    }
    *param = params[n - 1] * factor;
  }
  return false;
}

bool GaussNewton::SolveTo(double damping, Eigen::MatrixXd* damped,
                          Eigen::VectorXd* p) {
  auto fill = [&] {
    *damped = h_;
    damped->diagonal().array() += damping;
  };
  fill();
  // Factored in place: no allocation per trial.
  Eigen::LLT<Eigen::Ref<Eigen::MatrixXd>, Eigen::Lower> llt(*damped);
  if (llt.info() != Eigen::Success) {
    // Without L2 rows H can be singular; LDLT handles semidefinite H. The
    // failed factorization overwrote *damped.
    fill();
    Eigen::LDLT<Eigen::MatrixXd, Eigen::Lower> ldlt(*damped);
    *p = ldlt.solve(g_);
  } else {
    *p = llt.solve(g_);
  }
  return p->allFinite();
}

GaussNewton::Outcome GaussNewton::Step(Eigen::VectorXd* w) {
  Outcome out;
  if (options_.solver == GaussNewtonOptions::Solver::kQr) return StepQr(w);
  double v0 = problem_->NormalEquations(*w, &h_, &g_);
  if (term_ != nullptr) {
    // ADMM rows sqrt(rho) I p_S = sqrt(rho) (center - w_S) (Bemporad §4.1).
    for (size_t j = 0; j < term_->indices.size(); ++j) {
      const int i = term_->indices[j];
      h_(i, i) += term_->rho;
      g_(i) +=
          term_->rho * (term_->center(static_cast<Eigen::Index>(j)) - (*w)(i));
    }
    v0 = Augmented(*w, v0);
  }
  out.value = v0;
  if (!std::isfinite(v0)) return out;
  h_.triangularView<Eigen::StrictlyUpper>() = h_.transpose();
  out = Search(w, v0, false);
  if (out.accepted) return out;
  // A^T A squares the condition number of A. Where the sensitivities explode
  // (a nearly unstable f_x along the trace) its entries reach 1e20 and the
  // L2 rows drown in rounding, so the Cholesky step is no longer a descent
  // direction. The QR of A keeps them: retry the epoch that way before giving
  // up. NAILM goes on from the damping the rejected trials reached (such
  // regions also need far more damping than usual); NAILS starts again at 1.
  const int trials = out.trials;
  out = StepQr(w);
  out.trials += trials;
  out.qr_fallback = true;
  return out;
}

GaussNewton::Outcome GaussNewton::StepQr(Eigen::VectorXd* w) {
  double v0 = problem_->TriangularFactor(*w, &r_, &d_);
  if (term_ != nullptr) {
    // ADMM rows sqrt(rho) e_i^T p = sqrt(rho) (center - w_i) (Bemporad §4.1).
    const Eigen::Index n = r_.cols();
    const Eigen::Index m = static_cast<Eigen::Index>(term_->indices.size());
    Eigen::MatrixXd rows = Eigen::MatrixXd::Zero(m, n);
    Eigen::VectorXd rhs(m);
    const double root = std::sqrt(term_->rho);
    for (Eigen::Index j = 0; j < m; ++j) {
      const int i = term_->indices[j];
      rows(j, i) = root;
      rhs(j) = root * (term_->center(j) - (*w)(i));
    }
    internal::QrUpdate(rows, rhs, &r_, &d_, &stack_, &stack_rhs_);
    v0 = Augmented(*w, v0);
  }
  if (!std::isfinite(v0)) {
    Outcome out;
    out.value = v0;
    return out;
  }
  g_.noalias() = r_.triangularView<Eigen::Upper>().transpose() * d_;  // A^T b
  return Search(w, v0, true);
}

bool GaussNewton::SolveQr(double damping) {
  if (damping == 0.0) {
    p_ = r_.triangularView<Eigen::Upper>().solve(d_);
    if (p_.allFinite()) return true;
    // Singular R (no L2 rows and a rank-deficient A): the minimum-norm-like
    // step of a vanishing damping, as the Cholesky path falls back to LDLT.
    return SolveQr(1e-12 * std::max(1.0, r_.diagonal().squaredNorm()));
  }
  // min |R p - d|^2 + damping |p|^2: QR of [R; sqrt(damping) I].
  const Eigen::Index n = r_.cols();
  damped_ = r_;
  damped_rhs_ = d_;
  internal::QrUpdate(
      Eigen::MatrixXd(
          Eigen::VectorXd::Constant(n, std::sqrt(damping)).asDiagonal()),
      Eigen::VectorXd::Zero(n), &damped_, &damped_rhs_, &stack_, &stack_rhs_);
  p_ = damped_.triangularView<Eigen::Upper>().solve(damped_rhs_);
  return p_.allFinite();
}

void GaussNewton::RestoreAngle(bool qr, bool* damped) {
  if (options_.min_cosine == 0.0) return;
  const double g_norm = g_.norm();
  if (!(g_norm > 0) || !std::isfinite(g_norm)) return;
  auto cosine = [&] { return g_.dot(p_) / (g_norm * p_.norm()); };
  // A non-descent step (cos <= 0) is rounding in the normal equations, not
  // geometry: the caller rejects it and retries by QR.
  const double first = cosine();
  if (!(first > 0) || first >= options_.min_cosine) return;
  gauss_newton_step_ = p_;
  // mean(diag A^T A): trace(H) / n, or |R|_F^2 / n for the QR solver.
  double scale =
      (qr ? r_.squaredNorm() : h_.trace()) / static_cast<double>(g_.size());
  if (!(scale > 0) || !std::isfinite(scale)) scale = 1.0;
  // cos -> 1 as mu -> inf (p -> g / mu); 20 decades from 1e-6 mean(diag)
  // reach 1e14 mean(diag), far past any angle the L2 rows allow.
  double mu = 1e-6 * scale;
  for (int k = 0; k < 20; ++k, mu *= 10.0) {
    if (!(qr ? SolveQr(mu) : Solve(mu))) break;
    if (cosine() >= options_.min_cosine) {
      *damped = true;
      return;
    }
  }
  // No damping restored the angle (only rounding can cause that): go on with
  // the Gauss-Newton step, as Algorithm 1 would.
  p_ = gauss_newton_step_;
}

GaussNewton::Outcome GaussNewton::Search(Eigen::VectorXd* w, double v0,
                                         bool qr) {
  Outcome out;
  out.value = v0;
  if (options_.method == GaussNewtonOptions::Method::kLineSearch) {
    if (!(qr ? SolveQr(0.0) : Solve(0.0))) return out;
    RestoreAngle(qr, &out.angle_damped);
    // grad V^T p = -g^T p (Bemporad §3.3).
    const double slope = -g_.dot(p_);
    // Not a descent direction: only rounding can cause it (H is positive
    // definite), and no backtracking can repair it.
    if (!(slope < 0)) return out;
    // alpha = 1, sigma, sigma^2, ...
    double alpha = 1.0;
    out.accepted = FirstAccepted(
        options_.max_backtracks, true, options_.sigma,
        [&](double a, int, Eigen::VectorXd* trial) {
          *trial = *w + a * p_;
          return true;
        },
        [&](double a) { return v0 + options_.c1 * a * slope; }, &alpha, w,
        &out.value, &out.trials);
    if (out.accepted) out.step = alpha;
    return out;
  }
  // lambda, c2 lambda, c2^2 lambda, ... The QR solves share scratch, so they
  // run one at a time.
  double lambda = lambda_;
  out.accepted = FirstAccepted(
      options_.max_trials, !qr, options_.c2,
      [&](double l, int k, Eigen::VectorXd* trial) {
        Eigen::VectorXd& p = k == 0 ? p_ : p_pair_;
        const bool solved =
            qr ? SolveQr(l) : SolveTo(l, k == 0 ? &damped_ : &damped_pair_, &p);
        if (solved) *trial = *w + p;
        return solved;
      },
      [&](double) { return v0; }, &lambda, w, &out.value, &out.trials);
  out.step = lambda;
  // After a success lambda / c3; else where the rejected trials left it.
  lambda_ = out.accepted ? NailmNextDamping(lambda, options_.c3) : lambda;
  return out;
}

Summary MinimizeGaussNewton(const GaussNewtonOptions& options,
                            LeastSquaresProblem& problem, Eigen::VectorXd* w,
                            IterationCallback* callback) {
  Summary summary;
  // epsilon_v is in the sum units of the least-squares problem; the monitor
  // sees the mean loss every optimizer reports.
  const double scale = 1.0 / std::max(1, problem.num_samples());
  const double epsilon_v = options.stop.tolerance > 0
                               ? options.stop.tolerance * problem.num_samples()
                               : options.epsilon_v;
  StopRules rules = options.stop;
  rules.tolerance = epsilon_v * scale;
  internal::RunMonitor monitor(rules, callback, &summary);
  GaussNewton solver(options, &problem);
  double previous = problem.Value(*w) * scale;
  summary.initial_loss = previous;
  summary.final_loss = previous;
  if (!std::isfinite(previous)) {
    summary.message =
        "the model output is not finite at the initial parameters";
    monitor.Finish(Termination::kDiverged);
    return summary;
  }
  int qr_fallbacks = 0;
  int angle_damped = 0;
  for (int epoch = 1;; ++epoch) {
    const GaussNewton::Outcome step = solver.Step(w);
    if (step.qr_fallback) ++qr_fallbacks;
    if (step.angle_damped) ++angle_damped;
    if (!step.accepted) {
      summary.iterations = epoch - 1;
      summary.message =
          options.method == GaussNewtonOptions::Method::kLineSearch
              ? absl::StrCat("no step satisfied the Armijo condition in ",
                             step.trials, " backtracks")
              : absl::StrCat("no damping in ", step.trials,
                             " trials decreased the loss (lambda ", step.step,
                             ")");
      // No acceptable step: the iterate is kept and the run ends.
      monitor.Finish(Termination::kLineSearchFailure);
      break;
    }
    const double loss = step.value * scale;
    const auto stop =
        monitor.EndIteration(epoch, previous, loss, step.step, *w);
    if (stop) {
      monitor.Finish(*stop);
      break;
    }
    previous = loss;
  }
  if (qr_fallbacks > 0) {
    absl::StrAppend(&summary.message, summary.message.empty() ? "" : "; ",
                    qr_fallbacks,
                    " epoch(s) re-solved by QR (ill-conditioned normal "
                    "equations)");
  }
  if (angle_damped > 0) {
    absl::StrAppend(&summary.message, summary.message.empty() ? "" : "; ",
                    angle_damped,
                    " epoch(s) damped: the Gauss-Newton step was nearly "
                    "orthogonal to the gradient (min_cosine)");
  }
  return summary;
}

}  // namespace sparrow::core
