// Full-batch L-BFGS with LBFGS++'s Hessian approximation and Nocedal-Wright
// strong-Wolfe line search, with Sparrow's progress, cancellation and deadline
// rules. One iteration is one line search; each reports its correction pairs
// as the optimizer state, so that a resumed run continues bit for bit. A
// failed line search (an LBFGS++ exception, or a last trial point that is not
// finite or raises the loss) ends the run at the last accepted iterate.
#ifndef SPARROW_CORE_OPTIM_LBFGS_LBFGS_H_
#define SPARROW_CORE_OPTIM_LBFGS_LBFGS_H_

#include "Eigen/Core"
#include "absl/status/status.h"
#include "core/optim/problem.h"
#include "core/optim/stop_rules.h"

namespace sparrow::core {

struct LbfgsOptions {
  static constexpr const char kName[] = "lbfgs";  // in specs and messages
  int memory = 10;                                // correction pairs kept, >= 1
  double gradient_tolerance = 1e-8;  // converged when |g| <= tol * max(1, |w|)
  int max_line_search = 40;  // function evaluations per line search, >= 1
  // Iterations are LBFGS++ iterations; the tolerance test is LBFGS++'s
  // relative one, |f_prev - f| <= tolerance * max(|f|, |f_prev|, 1).
  StopRules stop;
  // Resume: a state reported in IterationRecord::optimizer_state (the
  // correction pairs); empty or not matching = start without memory.
  Eigen::VectorXd initial_state;

  absl::Status Validate() const;
};

Summary MinimizeLbfgs(const LbfgsOptions& options, Objective& objective,
                      Eigen::VectorXd* w, IterationCallback* callback);

}  // namespace sparrow::core

#endif  // SPARROW_CORE_OPTIM_LBFGS_LBFGS_H_
