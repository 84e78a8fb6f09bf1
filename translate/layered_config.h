// The layered model kinds of a ModelSpec (cnn, rnn, lstm) -> their core
// configs, and back: the dimensions a trained model resolved from its data
// written into the spec it stores.
#ifndef SPARROW_TRANSLATE_LAYERED_CONFIG_H_
#define SPARROW_TRANSLATE_LAYERED_CONFIG_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/train/model.h"
#include "sparrow/v1/spec.pb.h"

namespace sparrow::translate {

// model.init: "" or "glorot", "he", "torch", "orthogonal".
absl::StatusOr<core::InitLaw> ToInitLaw(const std::string& init);

// Sets c->kind and c->init from m (whose kind is cnn, rnn or lstm),
// validating the fields that need no data; errors name the field.
absl::Status ToLayeredConfig(const v1::ModelSpec& m, core::ModelConfig* c);

// Writes the resolved input shape (cnn) or step count (rnn, lstm) of a
// trained model into its stored spec; other kinds are left alone.
void WriteResolvedDimensions(const core::ModelConfig& c, v1::ModelSpec* m);

}  // namespace sparrow::translate

#endif  // SPARROW_TRANSLATE_LAYERED_CONFIG_H_
