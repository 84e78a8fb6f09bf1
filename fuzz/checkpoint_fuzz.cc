// Checkpoint bytes -> sparrow.v1.JobCheckpoint -> a resumed TrainConfig ->
// core::Train: what the job manager does with a stored checkpoint when it
// resumes a job after a restart. The first input byte picks one of the small
// specs of fuzz_common.h (one per optimizer whose state a checkpoint
// restores); the rest is the checkpoint.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/train/trainer.h"
#include "fuzz/fuzz_common.h"
#include "server/spec/convert.h"
#include "sparrow/v1/checkpoint.pb.h"

namespace {

namespace core = sparrow::core;
namespace v1 = sparrow::v1;

// --- A copy of server/jobs/job_manager.cc's resume step (IterationBudget,
// ResumeOptimizer and the `if (resume)` block of JobManager::RunJob), which
// is private to that file; replace it by the shared function once the job
// manager exports one.

int* IterationBudget(core::TrainConfig* config) {
  return config->optimizer == core::OptimizerKind::kSbdl
             ? &config->sbdl.outer_iterations
             : &config->max_epochs;
}

void ResumeOptimizer(const v1::JobCheckpoint& c, core::TrainConfig* config) {
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

void ApplyCheckpoint(const v1::JobCheckpoint& checkpoint,
                     core::TrainConfig* config) {
  const int offset = checkpoint.iteration();
  const double elapsed = checkpoint.elapsed_seconds();
  config->initial_params = Eigen::Map<const Eigen::VectorXd>(
      checkpoint.params().data(), checkpoint.params_size());
  int* budget = IterationBudget(config);
  *budget = std::max(1, *budget - offset);
  ResumeOptimizer(checkpoint, config);
  if (config->max_seconds > 0) {
    config->max_seconds = std::max(1e-3, config->max_seconds - elapsed);
  }
}

// --- end of the copy.

struct Job {
  core::TrainConfig config;
  core::TrainData data;
};

std::vector<Job>* LoadJobs() {
  auto* jobs = new std::vector<Job>;
  const std::string csv = sparrow::fuzz::SmallCsv();
  for (const char* json : sparrow::fuzz::kSmallSpecs) {
    auto spec = sparrow::spec::ParseJobSpecJson(json);
    if (!spec.ok()) std::abort();
    auto config = sparrow::spec::ToTrainConfig(*spec);
    if (!config.ok()) std::abort();
    auto data = sparrow::spec::LoadTrainData(*spec, *config, csv);
    if (!data.ok()) std::abort();
    jobs->push_back({*std::move(config), *std::move(data)});
  }
  return jobs;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  static const std::vector<Job>* const jobs = LoadJobs();
  if (size < 1) return 0;
  const Job& job = (*jobs)[bytes[0] % jobs->size()];
  v1::JobCheckpoint checkpoint;
  if (!checkpoint.ParseFromArray(bytes + 1, static_cast<int>(size - 1))) {
    return 0;
  }
  core::TrainConfig config = job.config;
  ApplyCheckpoint(checkpoint, &config);
  (void)core::Train(config, job.data, nullptr).ok();
  return 0;
}
