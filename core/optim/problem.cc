#include "core/optim/problem.h"

#include "absl/strings/str_format.h"

namespace sparrow::core {

const char* TerminationName(Termination t) {
  switch (t) {
    case Termination::kConverged:
      return "converged";
    case Termination::kMaxIterations:
      return "max_iterations";
    case Termination::kDeadline:
      return "deadline";
    case Termination::kLineSearchFailure:
      return "line_search_failure";
    case Termination::kDiverged:
      return "diverged";
    case Termination::kEarlyStopped:
      return "early_stopped";
    case Termination::kUserAbort:
      return "user_abort";
    case Termination::kStalled:
      return "stalled";
  }
  return "unknown";
}

std::string Summary::BriefReport() const {
  return absl::StrFormat(
      "%s after %d iterations (%.3f s): loss %.6g%s -> %.6g%s%s",
      TerminationName(termination), iterations, seconds, initial_loss,
      resumed ? " (at the checkpoint it resumed from)" : "", final_loss,
      message.empty() ? "" : "; ", message);
}

}  // namespace sparrow::core
