#include "server/jobs/resume.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace sparrow::server {
namespace {

bool AllFinite(const google::protobuf::RepeatedField<double>& values) {
  return std::all_of(values.begin(), values.end(),
                     [](double v) { return std::isfinite(v); });
}

absl::Status CheckCheckpoint(const v1::JobCheckpoint& c) {
  const char* bad = nullptr;
  if (c.iteration() < 0) {
    bad = "a negative iteration";
  } else if (!std::isfinite(c.elapsed_seconds()) || c.elapsed_seconds() < 0) {
    bad = "a negative or non-finite elapsed time";
  } else if (!AllFinite(c.params())) {
    bad = "non-finite parameters";
  } else if (!AllFinite(c.optimizer_state())) {
    bad = "a non-finite optimizer state";
  }
  if (bad == nullptr) return absl::OkStatus();
  return absl::DataLossError(
      absl::StrCat("the job's checkpoint has ", bad,
                   "; it cannot come from a run of this job"));
}

// Optimizer iterations the config asks for (epochs, or SBDL outer
// iterations).
int* IterationBudget(core::TrainConfig* config) {
  return config->optimizer == core::OptimizerKind::kSbdl
             ? &config->sbdl.outer_iterations
             : &config->max_epochs;
}

}  // namespace

absl::Status ApplyCheckpoint(const v1::JobCheckpoint& c,
                             core::TrainConfig* config) {
  if (absl::Status s = CheckCheckpoint(c); !s.ok()) return s;
  config->initial_params =
      Eigen::Map<const Eigen::VectorXd>(c.params().data(), c.params_size());
  int* budget = IterationBudget(config);
  *budget = std::max(1, *budget - std::min(*budget, c.iteration()));
  if (config->max_seconds > 0) {
    config->max_seconds =
        std::max(1e-3, config->max_seconds - c.elapsed_seconds());
  }
  const double step = c.step_size();
  const bool positive = std::isfinite(step) && step > 0;
  switch (config->optimizer) {
    case core::OptimizerKind::kSgd:
    case core::OptimizerKind::kAdam:
      config->first_order.initial_state = Eigen::Map<const Eigen::VectorXd>(
          c.optimizer_state().data(), c.optimizer_state_size());
      break;
    case core::OptimizerKind::kNailm:
      if (positive &&
          config->penalty.kind == core::TrainConfig::Penalty::Kind::kNone) {
        config->gauss_newton.lambda0 = step;
      }
      break;
    case core::OptimizerKind::kB2ld:
      if (positive) config->b2ld.epsilon0 = step;
      break;
    case core::OptimizerKind::kBling:
      if (positive) config->bling.alpha0 = step;
      break;
    default:
      break;
  }
  return absl::OkStatus();
}

}  // namespace sparrow::server
