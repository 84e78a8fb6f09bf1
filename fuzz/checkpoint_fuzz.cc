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
#include "server/jobs/resume.h"
#include "sparrow/v1/checkpoint.pb.h"
#include "translate/config.h"
#include "translate/data.h"
#include "translate/json.h"

namespace {

namespace core = sparrow::core;
namespace v1 = sparrow::v1;
using sparrow::server::ApplyCheckpoint;

struct Job {
  core::TrainConfig config;
  core::TrainData data;
};

std::vector<Job>* LoadJobs() {
  auto* jobs = new std::vector<Job>;
  const std::string csv = sparrow::fuzz::SmallCsv();
  for (const char* json : sparrow::fuzz::kSmallSpecs) {
    auto spec = sparrow::translate::ParseJobSpecJson(json);
    if (!spec.ok()) std::abort();
    auto config = sparrow::translate::ToTrainConfig(*spec);
    if (!config.ok()) std::abort();
    auto data = sparrow::translate::LoadTrainData(*spec, *config, csv);
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
  if (!ApplyCheckpoint(checkpoint, &config).ok()) return 0;
  (void)core::Train(config, job.data, nullptr).ok();
  return 0;
}
