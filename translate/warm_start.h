// JobSpec.warm_start -> core::TrainConfig::warm_start: the trained model a job
// starts from. Where the model comes from is the caller's business: sparrowd
// reads warm_start.job_id's model from its store and the CLI reads
// warm_start.model_path; a model sent inline (warm_start.model) is parsed
// here.
#ifndef SPARROW_TRANSLATE_WARM_START_H_
#define SPARROW_TRANSLATE_WARM_START_H_

#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/train/trainer.h"
#include "sparrow/v1/model.pb.h"
#include "sparrow/v1/spec.pb.h"

namespace sparrow::translate {

// The model of spec.warm_start: the inline one, else `resolved` (the model
// the job id or file names). InvalidArgument for an empty warm_start, a bad
// inline model, or a job id / file that was not resolved, saying where it can
// be. nullopt when the spec has no warm start.
absl::StatusOr<std::optional<v1::TrainedModel>> WarmStartModel(
    const v1::JobSpec& spec, const v1::TrainedModel* resolved);

// Sets config->warm_start from `model` after checking that it can start this
// spec: the same model kind and loss and, when known (> 0), the same number
// of input columns. The trainer checks the rest (channel names and parameter
// blocks) against the data.
absl::Status ApplyWarmStart(const v1::JobSpec& spec,
                            const v1::TrainedModel& model, int n_inputs,
                            core::TrainConfig* config);

}  // namespace sparrow::translate

#endif  // SPARROW_TRANSLATE_WARM_START_H_
