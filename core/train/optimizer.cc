#include "core/train/optimizer.h"

#include <type_traits>

#include "absl/strings/str_cat.h"
#include "core/train/methods.h"

namespace sparrow::core {
namespace {

template <typename T>
constexpr const char* kName = nullptr;
template <>
constexpr const char* kName<SgdOptions> = "sgd";
template <>
constexpr const char* kName<AdamOptions> = "adam";
template <>
constexpr const char* kName<LbfgsOptions> = "lbfgs";
template <>
constexpr const char* kName<NailsOptions> = "nails";
template <>
constexpr const char* kName<NailmOptions> = "nailm";
template <>
constexpr const char* kName<SbdlOptions> = "sbdl";
template <>
constexpr const char* kName<B2ldOptions> = "b2ld";
template <>
constexpr const char* kName<BlingOptions> = "bling";

}  // namespace

const char* OptimizerName(const OptimizerOptions& options) {
  return std::visit(
      [](const auto& o) { return kName<std::decay_t<decltype(o)>>; }, options);
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

int* IterationBudget(TrainConfig* config) {
  if (config->penalty.kind != TrainConfig::Penalty::Kind::kNone) {
    return &config->admm.stop.max_iterations;
  }
  return &Stop(config->optimizer).max_iterations;
}

int IterationBudget(const TrainConfig& config) {
  if (config.penalty.kind != TrainConfig::Penalty::Kind::kNone) {
    return config.admm.stop.max_iterations;
  }
  return Stop(config.optimizer).max_iterations;
}

}  // namespace sparrow::core
