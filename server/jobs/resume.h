// Resuming a job from the checkpoint of an interrupted attempt.
#ifndef SPARROW_SERVER_JOBS_RESUME_H_
#define SPARROW_SERVER_JOBS_RESUME_H_

#include "absl/status/status.h"
#include "core/train/trainer.h"
#include "sparrow/v1/checkpoint.pb.h"

namespace sparrow::server {

// Sets up `config` to go on from `checkpoint`: the iterate, the iterations
// and wall-clock seconds left (stopping.max_seconds covers every attempt),
// and what a checkpoint restores beyond the iterate — Adam's / SGD's moments
// and update count, NAILM's damping, B2LD's tolerance, BLInG's step. L-BFGS's
// memory, NAILS's line search, ADMM's duals and SBDL's hyperparameters start
// afresh (docs/service.md). DATA_LOSS for a checkpoint that cannot come from
// a run of this job (negative or non-finite counters, non-finite values);
// the trainer checks the number of parameters.
absl::Status ApplyCheckpoint(const v1::JobCheckpoint& checkpoint,
                             core::TrainConfig* config);

}  // namespace sparrow::server

#endif  // SPARROW_SERVER_JOBS_RESUME_H_
