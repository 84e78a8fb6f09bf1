// NAILS and NAILM (Bemporad, "Training RNNs by sequential least squares and
// ADMM"): Gauss-Newton steps on the sequential least-squares form of V,
// globalized by an Armijo line search (NAILS, Algorithm 1) or by
// Levenberg-Marquardt damping (NAILM, Algorithm 2).
//
// One Step() is one epoch: one set of normal equations, then line-search /
// damping trials that each cost a simulation. A simulation that gives NaN/Inf
// is a rejected trial, never accepted.
#ifndef SPARROW_CORE_OPTIM_GAUSS_NEWTON_GAUSS_NEWTON_H_
#define SPARROW_CORE_OPTIM_GAUSS_NEWTON_GAUSS_NEWTON_H_

#include <algorithm>
#include <vector>

#include "Eigen/Core"
#include "absl/status/status.h"
#include "core/optim/gauss_newton/least_squares.h"
#include "core/optim/problem.h"
#include "core/optim/stop_rules.h"
#include "core/util/thread_pool.h"

namespace sparrow::core {

// NAILM's damping after an accepted step: lambda / c3, kept above 1e-300 so
// that it never underflows to 0 (a resumed run restarts from it).
inline double NailmNextDamping(double lambda, double c3) {
  return std::max(lambda / c3, 1e-300);
}

struct GaussNewtonOptions {
  enum class Method {
    kLineSearch /* NAILS */,
    kLevenbergMarquardt /* NAILM */
  };
  Method method = Method::kLineSearch;
  // NAILS: accept alpha when V(w + alpha p) <= V(w) + c1 alpha grad V^T p; c1
  // in (0, 1).
  double c1 = 1e-4;
  // NAILS: backtracking factor sigma in (0, 1) and at most max_backtracks
  // trials (N_sigma >= 1).
  double sigma = 0.5;
  int max_backtracks = 20;
  // NAILS: angle safeguard, in [0, 1). When the Gauss-Newton step p makes
  // cos(p, -grad V) < min_cosine, it is replaced by the Levenberg-Marquardt
  // step (A^T A + mu I)^-1 A^T b with the smallest mu = 10^k 1e-6
  // mean(diag A^T A) that restores the angle. Without it Algorithm 1 can
  // creep along a near-unstable model at steps of 1e-5 for hundreds of
  // epochs (Armijo's convergence proof needs cos bounded away from 0).
  // 0 turns it off (the paper's Algorithm 1 as printed).
  double min_cosine = 1e-5;
  // NAILM: initial damping lambda0 > 0, carried between epochs; increase by c2
  // > 1 after a rejected trial, decrease by c3 > 1 after an accepted one; at
  // most max_trials (N_lambda >= 1).
  double lambda0 = 100.0;
  double c2 = 1.5;
  double c3 = 5.0;
  int max_trials = 20;
  // Converged when |V(h-1) - V(h)| <= epsilon_v, V in the sum units of
  // LeastSquaresProblem as in the paper (the corrected test of ALGORITHMS.md
  // §2.4); >= 0. A positive stop.tolerance replaces it: the same test on the
  // mean loss every optimizer reports, i.e. epsilon_v = tolerance * N.
  double epsilon_v = 1e-6;
  // How each step's least-squares problem is solved: the normal equations
  // A^T A by Cholesky (fast; squares the condition number), or a streaming
  // QR of A (more accurate on ill-conditioned problems, about
  // (n_p + 64) / 64 times the work per row block).
  enum class Solver { kCholesky, kQr };
  Solver solver = Solver::kCholesky;
  // Iterations are epochs; 250 is the paper's budget for the MR damper.
  StopRules stop = {250};

  absl::Status Validate() const;
};

// NAILS (Algorithm 1) and NAILM (Algorithm 2) as the trainer's optimizer
// choices. threads (>= 1): the normal equations are built across traces on
// this many threads (one trace: split in time on two), and with two or more
// trials run two at a time (SequenceLeastSquares). admm_state: a resumed run
// under a non-smooth penalty goes on from this ADMM state
// (AdmmOptions::initial_state; empty = a fresh start).
struct NailsOptions : GaussNewtonOptions {
  static constexpr const char kName[] = "nails";
  NailsOptions() { method = Method::kLineSearch; }
  int threads = 1;
  Eigen::VectorXd admm_state;
};
struct NailmOptions : GaussNewtonOptions {
  static constexpr const char kName[] = "nailm";
  NailmOptions() { method = Method::kLevenbergMarquardt; }
  int threads = 1;
  Eigen::VectorXd admm_state;
};

// rho/2 |w_S - center|^2 on the indices S: the augmentation ADMM adds to the
// inner problem.
struct QuadraticTerm {
  std::vector<int> indices;
  double rho = 0.0;
  Eigen::VectorXd center;  // one entry per index

  double Value(const Eigen::VectorXd& w) const;
};

class GaussNewton {
 public:
  struct Outcome {
    bool accepted = false;
    double value = 0.0;  // sum-form V (plus the quadratic term) after the step
    double step = 0.0;   // alpha (NAILS) or lambda (NAILM) used
    int trials = 0;
    // The normal equations found no step and the epoch was redone with the
    // QR factorization.
    bool qr_fallback = false;
    // NAILS: the Gauss-Newton step failed the angle test (min_cosine) and
    // was damped.
    bool angle_damped = false;
  };

  GaussNewton(const GaussNewtonOptions& options, LeastSquaresProblem* problem);
  // Sets the quadratic term of the next steps (ADMM); nullptr removes it.
  void SetQuadraticTerm(const QuadraticTerm* term) { term_ = term; }
  // One epoch from w. On acceptance *w is the new iterate.
  Outcome Step(Eigen::VectorXd* w);
  double lambda() const { return lambda_; }
  void set_lambda(double lambda) { lambda_ = lambda; }

 private:
  double Augmented(const Eigen::VectorXd& w, double value) const;
  // Augmented value of `trial` in the problem's trial slot `slot` when it is
  // at most `bound`, else above it (the problem may abandon the simulation
  // once the bound is exceeded).
  double TrialValue(int slot, const Eigen::VectorXd& trial, double bound);
  // Up to max_trials trials whose parameter (alpha or lambda) starts at
  // *param and is multiplied by `factor` after each, run in rounds of two
  // side by side on pool_ (the problem's trial slots 0 and 1) when `pairs`
  // (false: trials that share scratch, one at a time). make(param, slot,
  // trial) builds a trial (false: rejected without a simulation); bound(param)
  // is its acceptance bound. The first acceptable trial in order wins, so
  // the result is that of trials one after another: on acceptance *w is the
  // trial, *value its value and *param its parameter; otherwise *param is the
  // last parameter times factor. *trials counts the trials up to the winner.
  template <typename Make, typename Bound>
  bool FirstAccepted(int max_trials, bool pairs, double factor, Make&& make,
                     Bound&& bound, double* param, Eigen::VectorXd* w,
                     double* value, int* trials);
  bool Solve(double damping) { return SolveTo(damping, &damped_, &p_); }
  // Solves (H + damping I) p = g into *p, with *damped as scratch.
  bool SolveTo(double damping, Eigen::MatrixXd* damped, Eigen::VectorXd* p);
  bool SolveQr(double damping);
  // NAILS min_cosine: damps p_ until cos(p, g) >= min_cosine and sets
  // *damped; keeps the Gauss-Newton p_ when no damping restores the angle.
  void RestoreAngle(bool qr, bool* damped);
  Outcome StepQr(Eigen::VectorXd* w);
  // The globalization shared by both solvers, once g_ and the solve exist.
  Outcome Search(Eigen::VectorXd* w, double v0, bool qr);

  GaussNewtonOptions options_;
  LeastSquaresProblem* problem_;
  const QuadraticTerm* term_ = nullptr;
  double lambda_;
  Eigen::MatrixXd h_, damped_;
  Eigen::VectorXd g_, p_, gauss_newton_step_;
  // Side-by-side trials: one trial point per slot, and the second NAILM
  // trial's solve.
  ThreadPool* pool_;  // the problem's trial pool, or nullptr
  Eigen::VectorXd trials_[2];
  Eigen::MatrixXd damped_pair_;
  Eigen::VectorXd p_pair_;
  Eigen::MatrixXd r_, stack_;  // QR solver: triangular factor and scratch
  Eigen::VectorXd d_, stack_rhs_, damped_rhs_;
};

// Runs NAILS/NAILM until a stopping rule holds. The reported loss is the mean
// objective V / num_samples, comparable with the first-order optimizers.
Summary MinimizeGaussNewton(const GaussNewtonOptions& options,
                            LeastSquaresProblem& problem, Eigen::VectorXd* w,
                            IterationCallback* callback);

}  // namespace sparrow::core

#endif  // SPARROW_CORE_OPTIM_GAUSS_NEWTON_GAUSS_NEWTON_H_
