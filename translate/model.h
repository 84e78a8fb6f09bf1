// A trained model's round trip through the API: core::TrainResult + its
// JobSpec -> sparrow.v1.TrainedModel (to store and export), and
// sparrow.v1.TrainedModel -> core::Model (to run a stored model), checking
// everything a stored or uploaded model could get wrong. Also the per-channel
// scaling (core::data::Normalizer <-> sparrow.v1.ChannelScaling).
#ifndef SPARROW_TRANSLATE_MODEL_H_
#define SPARROW_TRANSLATE_MODEL_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/train/trainer.h"
#include "sparrow/v1/model.pb.h"
#include "sparrow/v1/spec.pb.h"

namespace sparrow::translate {

v1::TrainedModel ToProto(const v1::JobSpec& spec,
                         const core::TrainResult& result);

// InvalidArgument when the stored model is inconsistent: parameters that do
// not fit its architecture, unnamed channels, non-finite values, mask or
// variances of the wrong size.
absl::StatusOr<core::Model> FromProto(const v1::TrainedModel& model);

// The channel names and the mean and scale of each channel of `n`.
v1::ChannelScaling ToProto(const core::data::Normalizer& n,
                           const std::vector<std::string>& names);

// The scaling of `n` channels; InvalidArgument (naming `what`) for another
// number of means or scales, or invalid ones.
absl::StatusOr<core::data::Normalizer> FromProto(const v1::ChannelScaling& s,
                                                 int n, absl::string_view what);

}  // namespace sparrow::translate

#endif  // SPARROW_TRANSLATE_MODEL_H_
