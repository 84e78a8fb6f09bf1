// Multi-stage runs (TrainConfig::stages): the stages run in order, each from
// the model the stage before it ended with (as a warm start: its parameters
// and scalings), with its own optimizer, stopping rules and patience; e.g.
// one step ahead then on the simulation error, or Adam then NAILM. The
// callback sees one run: iterations and optimizer seconds count on across
// stages, and each record says its stage (IterationRecord::stage and the
// "stage" extra, 1-based), so a checkpoint resumes in the right stage
// (resume.h).
#ifndef SPARROW_CORE_TRAIN_STAGES_H_
#define SPARROW_CORE_TRAIN_STAGES_H_

#include "absl/status/statusor.h"
#include "core/train/trainer.h"

namespace sparrow::core {

// The most stages a run may have (Validate refuses more).
inline constexpr int kMaxStages = 32;

// Whether the config runs in stages (one or more listed; a resumed run keeps
// its list, down to the last stage).
bool IsStaged(const TrainConfig& config);

// Sets the stage's own fields in *config: optimizer, patience, batch and
// ADMM options, NARX training mode.
void UseStage(const TrainStage& stage, TrainConfig* config);

// The config of stage k alone: its optimizer, patience and NARX training
// mode, no stages. Stage 0 keeps the config's resume fields (a resumed run
// goes on in its first stage); a later one starts from nothing but its warm
// start.
TrainConfig StageConfig(const TrainConfig& config, int k);

// Runs the stages; the result is the last stage's model and metrics, with
// the iterations, seconds and history of the whole run. A stage that is
// aborted or diverges ends the run there.
absl::StatusOr<TrainResult> TrainStages(const TrainConfig& config,
                                        const TrainData& data,
                                        IterationCallback* callback);

}  // namespace sparrow::core

#endif  // SPARROW_CORE_TRAIN_STAGES_H_
