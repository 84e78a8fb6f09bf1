// The job manager's resume step, for the checkpoint fuzz target and its
// regression tests.
#ifndef SPARROW_FUZZ_RESUME_COPY_H_
#define SPARROW_FUZZ_RESUME_COPY_H_

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/train/trainer.h"
#include "sparrow/v1/checkpoint.pb.h"

namespace sparrow::fuzz {

// A copy of server/jobs/job_manager.cc's resume step (IterationBudget,
// ResumeOptimizer and the `if (resume)` block of JobManager::RunJob), which
// is private to that file; replace it by the shared function once the job
// manager exports one. One change, marked below, is the fix proposed for the
// job manager: checkpoint_fuzz found that a checkpoint with a negative
// iteration overflowed `budget - offset` (UBSan) or, less negative, made the
// resumed job run up to 2^31 iterations instead of the spec's budget.

inline int* IterationBudget(core::TrainConfig* config) {
  return config->optimizer == core::OptimizerKind::kSbdl
             ? &config->sbdl.outer_iterations
             : &config->max_epochs;
}

inline void ResumeOptimizer(const v1::JobCheckpoint& c,
                            core::TrainConfig* config) {
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
}

inline absl::Status ApplyCheckpoint(const v1::JobCheckpoint& checkpoint,
                                    core::TrainConfig* config) {
  const int offset = checkpoint.iteration();
  const double elapsed = checkpoint.elapsed_seconds();
  // The proposed fix: refuse what sparrowd never writes, so that the caller
  // restarts the job from the beginning instead.
  if (offset < 0 || !std::isfinite(elapsed) || elapsed < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "corrupt checkpoint: iteration ", offset, ", elapsed_seconds ", elapsed,
        "; both must be non-negative"));
  }
  config->initial_params = Eigen::Map<const Eigen::VectorXd>(
      checkpoint.params().data(), checkpoint.params_size());
  int* budget = IterationBudget(config);
  *budget = std::max(1, *budget - offset);
  ResumeOptimizer(checkpoint, config);
  if (config->max_seconds > 0) {
    config->max_seconds = std::max(1e-3, config->max_seconds - elapsed);
  }
  return absl::OkStatus();
}

}  // namespace sparrow::fuzz

#endif  // SPARROW_FUZZ_RESUME_COPY_H_
