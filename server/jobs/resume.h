// Resuming a job from the checkpoint of an interrupted attempt.
#ifndef SPARROW_SERVER_JOBS_RESUME_H_
#define SPARROW_SERVER_JOBS_RESUME_H_

#include "absl/status/status.h"
#include "core/train/trainer.h"
#include "sparrow/v1/checkpoint.pb.h"

namespace sparrow::server {

// Sets up `config` to go on from `checkpoint` (core::Resume): the resumed
// attempt ends with the model of the uninterrupted run. DATA_LOSS for a
// checkpoint that cannot come from a run of this job (negative or non-finite
// counters, non-finite values); the trainer checks the number of parameters.
absl::Status ApplyCheckpoint(const v1::JobCheckpoint& checkpoint,
                             core::TrainConfig* config);

}  // namespace sparrow::server

#endif  // SPARROW_SERVER_JOBS_RESUME_H_
