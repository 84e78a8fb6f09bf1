// The stopping rules every optimizer shares. Each method's Options holds one
// StopRules member, `stop`; the method's page in docs/optimizers says which
// rules it uses and what its iteration counts (an epoch, a sweep, an outer
// iteration).
#ifndef SPARROW_CORE_OPTIM_STOP_RULES_H_
#define SPARROW_CORE_OPTIM_STOP_RULES_H_

#include "absl/status/status.h"

namespace sparrow::core {

struct StopRules {
  // Stop after this many iterations; >= 1.
  int max_iterations = 1000;
  // Stop when the run has taken this many seconds of wall clock; 0 = no
  // deadline, >= 0.
  double max_seconds = 0.0;
  // Converged when |f_prev - f| <= tolerance over one iteration, f the loss the
  // method reports (L-BFGS: relative to max(|f|, |f_prev|, 1)); 0 = never,
  // >= 0.
  double tolerance = 0.0;
  // Make a progress record every this many iterations and at the last; >= 1.
  int report_every = 1;

  // InvalidArgument naming the field (e.g. "max_iterations is 0; it must be
  // >= 1"); the caller prefixes its own path.
  absl::Status Validate() const;
};

}  // namespace sparrow::core

#endif  // SPARROW_CORE_OPTIM_STOP_RULES_H_
