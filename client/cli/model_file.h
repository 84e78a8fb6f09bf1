// Model files on the client's machine: reading one (`predict --local`,
// warm_start.model_path), and a spec's warm start from one, for a local run
// or sent inline with `sparrow submit`.
#ifndef SPARROW_CLIENT_CLI_MODEL_FILE_H_
#define SPARROW_CLIENT_CLI_MODEL_FILE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/train/trainer.h"
#include "sparrow/v1/model.pb.h"
#include "sparrow/v1/spec.pb.h"

namespace sparrow::cli {

// A TrainedModel file: JSON for a .json name, else binary protobuf.
absl::StatusOr<v1::TrainedModel> ReadModel(const std::string& path);

// A local run's warm start: the model of warm_start.model_path (or inline).
absl::Status SetLocalWarmStart(const v1::JobSpec& spec,
                               core::TrainConfig* config);

// `sparrow submit`: replaces warm_start.model_path by the file's model,
// inline, since sparrowd cannot read the client's files.
absl::Status InlineWarmStart(v1::JobSpec* spec);

}  // namespace sparrow::cli

#endif  // SPARROW_CLIENT_CLI_MODEL_FILE_H_
