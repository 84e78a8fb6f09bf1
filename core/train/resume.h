// Checkpoints and resuming: a ResumePoint kept from the progress record of a
// report, and given to Resume, continues the run to the model the
// uninterrupted run reaches, bit for bit, provided the run is bounded by
// iterations rather than wall time (tests/core/train/resume_test.cc).
#ifndef SPARROW_CORE_TRAIN_RESUME_H_
#define SPARROW_CORE_TRAIN_RESUME_H_

#include "absl/status/status.h"
#include "core/optim/problem.h"
#include "core/train/optimizer.h"
#include "core/train/trainer.h"

namespace sparrow::core {

// Keeps what a checkpoint of `record` holds in *point, reusing its storage.
// `iterations_before` and `seconds_before` are those of earlier attempts.
void KeepCheckpoint(const IterationRecord& record, int iterations_before,
                    double seconds_before, ResumePoint* point);

// Sets up `config` to go on from `point`: the iterate, the iterations and
// optimizer seconds left (stop.max_seconds covers every attempt), the method's
// state and the trainer's validation tracking. DATA_LOSS for a point that
// cannot come from a run (negative counters, non-finite values); the trainer
// checks the sizes against the model.
absl::Status Resume(const ResumePoint& point, TrainConfig* config);

}  // namespace sparrow::core

#endif  // SPARROW_CORE_TRAIN_RESUME_H_
