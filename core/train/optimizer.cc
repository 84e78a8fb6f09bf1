#include "core/train/optimizer.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "core/train/methods.h"
#include "core/train/stages.h"

namespace sparrow::core {

const char* OptimizerName(const OptimizerOptions& options) {
  return std::visit([](const auto& o) -> const char* { return o.kName; },
                    options);
}

StopRules& Stop(OptimizerOptions& options) {
  return std::visit([](auto& o) -> StopRules& { return o.stop; }, options);
}
const StopRules& Stop(const OptimizerOptions& options) {
  return std::visit([](const auto& o) -> const StopRules& { return o.stop; },
                    options);
}

absl::Status OptionsStatus(const absl::Status& status, const char* name) {
  if (status.ok()) return status;
  return absl::Status(status.code(),
                      absl::StrCat("optimizer.", name, ".", status.message()));
}

absl::Status ResumeStateError(const char* name, Eigen::Index values) {
  return absl::DataLossError(absl::StrCat(
      "the job's checkpoint holds an optimizer.", name, " state of ", values,
      " values that does not fit this model and optimizer (a checkpoint of "
      "another spec, or a damaged one); the run cannot continue it. Submit "
      "the spec as a new job, or warm-start from the job's model instead"));
}

absl::Status CheckMethod(const TrainConfig& config) {
  return std::visit([&](const auto& o) { return CheckMethod(o, config); },
                    config.optimizer);
}

absl::StatusOr<MethodResult> RunMethod(const TrainConfig& config,
                                       TrainSetup* setup, Eigen::VectorXd* w,
                                       IterationCallback* callback,
                                       Model* model) {
  return std::visit(
      [&](const auto& o) {
        return RunMethod(o, config, setup, w, callback, model);
      },
      config.optimizer);
}

void ResumeMethod(const ResumePoint& point, TrainConfig* config) {
  std::visit([&](auto& o) { ResumeMethod(point, *config, &o); },
             config->optimizer);
}

bool IsFirstOrder(const OptimizerOptions& o) {
  return std::holds_alternative<SgdOptions>(o) ||
         std::holds_alternative<AdamOptions>(o) ||
         std::holds_alternative<LbfgsOptions>(o);
}

bool IsRls(const OptimizerOptions& o) {
  return std::holds_alternative<RlsOptions>(o);
}

bool UsesGaussNewton(const OptimizerOptions& options) {
  return std::holds_alternative<NailsOptions>(options) ||
         std::holds_alternative<NailmOptions>(options);
}

namespace {

// The budget of IterationBudget, for a const or mutable config.
template <typename Config>
auto* Budget(Config* config) {
  return config->penalty.kind != TrainConfig::Penalty::Kind::kNone
             ? &config->admm.stop.max_iterations
             : &Stop(config->optimizer).max_iterations;
}

}  // namespace

int* IterationBudget(TrainConfig* config) { return Budget(config); }

int IterationBudget(const TrainConfig& config) {
  if (!IsStaged(config)) return *Budget(&config);
  int64_t total = 0;
  for (int k = 0; k < static_cast<int>(config.stages.size()); ++k) {
    const TrainConfig stage = StageConfig(config, k);
    total += *Budget(&stage);
  }
  return static_cast<int>(
      std::min<int64_t>(total, std::numeric_limits<int>::max()));
}

}  // namespace sparrow::core
