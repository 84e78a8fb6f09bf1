#include "core/optim/stop_rules.h"

#include <cmath>

#include "core/util/option_error.h"

namespace sparrow::core {

absl::Status StopRules::Validate() const {
  if (max_iterations < 1) {
    return OptionError("stop.max_iterations", max_iterations, ">= 1");
  }
  if (!(max_seconds >= 0.0) || !std::isfinite(max_seconds)) {
    return OptionError("stop.max_seconds", max_seconds, ">= 0");
  }
  if (!(tolerance >= 0.0) || !std::isfinite(tolerance)) {
    return OptionError("stop.tolerance", tolerance, ">= 0");
  }
  if (report_every < 1) {
    return OptionError("stop.report_every", report_every, ">= 1");
  }
  if (stall_window < 0) {
    return OptionError("stop.stall_window", stall_window, ">= 0");
  }
  if (stall_since < 0) {
    return OptionError("stop.stall_since", stall_since, ">= 0");
  }
  return absl::OkStatus();
}

}  // namespace sparrow::core
