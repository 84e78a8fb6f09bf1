// ADMM around NAILS/NAILM for non-smooth regularizers (Bemporad Algorithm 3,
// eq. 22-25):
//
//   min V(x0, theta) + g(nu)  s.t.  theta_S = nu,
//
// scaled form, for t = 0..N_ADMM-1:
//   (x0, theta) <- E Gauss-Newton epochs on V + rho/2 |theta_S - nu + u|^2
//   (warm started) nu          <- prox_{g/rho}(theta_S + u) u           <- u +
//   theta_S - nu
// The model is nu (the sparse / quantized copy) spliced into theta. V and g are
// in the sum units of LeastSquaresProblem (the paper's tau and rho apply
// unchanged).
//
// Nonconvex ADMM has no convergence guarantee; the run reports the primal and
// dual residuals every iteration so divergence is visible.
#ifndef SPARROW_CORE_OPTIM_ADMM_ADMM_H_
#define SPARROW_CORE_OPTIM_ADMM_ADMM_H_

#include <vector>

#include "Eigen/Core"
#include "absl/status/status.h"
#include "core/optim/gauss_newton/gauss_newton.h"
#include "core/optim/stop_rules.h"
#include "core/regularizers/proximal.h"

namespace sparrow::core {

struct AdmmOptions {
  // Penalty parameter rho >= 0; 0 = Bemporad's choice for the group Lasso,
  // 10 tau_g (his Sec. 5.4), and 1 otherwise. AdmmRho resolves it; the
  // quantization examples set the paper's 10.
  double rho = 0.0;
  // E >= 1: Gauss-Newton epochs per ADMM iteration ("E = 1 is a good choice").
  int inner_epochs = 1;
  // Return the iterate whose model (nu spliced in) had the lowest training
  // objective V + g,
  // instead of the last one (Bemporad §4: "optionally the best iterate").
  bool keep_best = false;
  // Iterations are ADMM iterations (N_ADMM, Bemporad's 250 for the damper);
  // ADMM has no monotone objective, so the tolerance is not used.
  StopRules stop = {250};
  // Resume: the state reported in IterationRecord::optimizer_state (theta_S,
  // the scaled dual u, NAILM's damping and the best iterate so far); ignored
  // when its size does not fit the problem. The iterate given to
  // MinimizeAdmm is then the checkpoint's model (nu spliced into theta).
  Eigen::VectorXd initial_state;

  absl::Status Validate() const;
};

// The rho ADMM runs with: options.rho when positive, else 10 tau for a group
// Lasso of weight tau > 0 (group_lasso_tau; 0 for other penalties), else 1.
double AdmmRho(const AdmmOptions& options, double group_lasso_tau);

// Runs ADMM from w with rho = AdmmRho(options, 0) (warm start: nu = w_S, u =
// 0, or the state of options.initial_state). On return *w holds the model: w
// with w_S = nu. The callback sees that spliced model, so validation and
// sparsity refer to what is returned.
Summary MinimizeAdmm(const AdmmOptions& options,
                     const GaussNewtonOptions& inner,
                     LeastSquaresProblem& problem, const Proximal& g,
                     const std::vector<int>& split, Eigen::VectorXd* w,
                     IterationCallback* callback);

}  // namespace sparrow::core

#endif  // SPARROW_CORE_OPTIM_ADMM_ADMM_H_
