#include "server/jobs/resume.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/train/methods.h"

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

}  // namespace

absl::Status ApplyCheckpoint(const v1::JobCheckpoint& c,
                             core::TrainConfig* config) {
  if (absl::Status s = CheckCheckpoint(c); !s.ok()) return s;
  config->initial_params =
      Eigen::Map<const Eigen::VectorXd>(c.params().data(), c.params_size());
  int* budget = core::IterationBudget(config);
  *budget = std::max(1, *budget - std::min(*budget, c.iteration()));
  double& max_seconds = core::Stop(config->optimizer).max_seconds;
  if (max_seconds > 0) {
    max_seconds = std::max(1e-3, max_seconds - c.elapsed_seconds());
  }
  core::ResumePoint point;
  point.step_size = c.step_size();
  point.state = Eigen::Map<const Eigen::VectorXd>(c.optimizer_state().data(),
                                                  c.optimizer_state_size());
  core::ResumeMethod(point, config);
  return absl::OkStatus();
}

}  // namespace sparrow::server
