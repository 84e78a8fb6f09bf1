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

}  // namespace sparrow::translate

#endif  // SPARROW_TRANSLATE_CONFIG_H_
