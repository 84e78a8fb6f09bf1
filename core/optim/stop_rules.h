// The stopping rules every optimizer shares. Each method's Options holds one
// StopRules member, `stop`; the method's page in docs/optimizers says which
// rules it uses and what its iteration counts (an epoch, a sweep, an outer
// iteration).
#ifndef SPARROW_CORE_OPTIM_STOP_RULES_H_
#define SPARROW_CORE_OPTIM_STOP_RULES_H_

#include <limits>

#include "absl/status/status.h"

namespace sparrow::core {

// The relative move of the loss that restarts the stall test.
inline constexpr double kStallRelative = 1e-6;

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
  // Stalled (Termination::kStalled) when the loss has stayed within a
  // relative kStallRelative of its reference for this many iterations; the
  // reference is the loss where it last left that band (at first, the
  // initial loss). 0 = off, >= 0.
  int stall_window = 0;
  // Resume: the stall test's reference (NaN = none yet) and the iterations
  // since it was set, as an IterationRecord reported them.
  double stall_reference = std::numeric_limits<double>::quiet_NaN();
  int stall_since = 0;
  // Resume: the loss the checkpoint's iteration reported, the previous loss
  // of the first iteration (NaN = not a resume).
  double resume_loss = std::numeric_limits<double>::quiet_NaN();
  // The run starts from a trained model (a warm start, a later stage): a loss
  // that hardly moves or rises is not "learned nothing" from an
  // initialization, and the end-of-run message says so in those terms.
  bool warm_start = false;

  // InvalidArgument naming the field (e.g. "max_iterations is 0; it must be
  // >= 1"); the caller prefixes its own path.
  absl::Status Validate() const;
};

}  // namespace sparrow::core

#endif  // SPARROW_CORE_OPTIM_STOP_RULES_H_
