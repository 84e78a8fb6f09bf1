// JobSpec -> core::TrainConfig: one small translation per options message
// (loss, model, regularization, stopping, normalization here; the optimizers
// in optimizer_config.h), each validating its fields and naming the bad one.
#ifndef SPARROW_TRANSLATE_CONFIG_H_
#define SPARROW_TRANSLATE_CONFIG_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/train/trainer.h"
#include "sparrow/v1/spec.pb.h"

namespace sparrow::translate {

// Translates and validates the model / loss / optimizer / stopping parts.
// Errors name the field (e.g. "model.state_space_rnn.fx_hidden[0] is -4; layer
// sizes must be positive").
absl::StatusOr<core::TrainConfig> ToTrainConfig(const v1::JobSpec& spec);

// The loss (unspecified = MSE), validated.
absl::StatusOr<core::Loss> ToLoss(const v1::LossSpec& l);

// An activation field; UNSPECIFIED gives `unspecified`.
absl::StatusOr<core::Activation> ToActivation(v1::Activation a,
                                              core::Activation unspecified,
                                              absl::string_view field);

// Model architecture, its sizes validated; dimensions that come from the data
// are filled in by the trainer. `loss` chooses the default output activation
// (sigmoid for binary cross-entropy, else linear).
absl::StatusOr<core::ModelConfig> ToModelConfig(const v1::ModelSpec& m,
                                                const core::Loss& loss);

// Whether the spec has validation data: split.validation rows,
// split.validation_fraction or validation_data.
bool HasValidation(const v1::JobSpec& spec);

// OK when `metric` (stopping.validation_metric or sweep.metric, named by
// `field` in the error) is one the spec's runs measure: on a validation split,
// and defined for its model and loss. METRIC_UNSPECIFIED is always OK.
absl::Status CheckValidationMetric(const v1::JobSpec& spec,
                                   v1::Sweep::Metric metric,
                                   absl::string_view field);

}  // namespace sparrow::translate

#endif  // SPARROW_TRANSLATE_CONFIG_H_
