// Image data in the CLI: reading IDX files for `sparrow upload --images` and
// `sparrow predict --images`, predicting in batches, printing the classes.
#ifndef SPARROW_CLIENT_CLI_IMAGES_H_
#define SPARROW_CLIENT_CLI_IMAGES_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/data/idx.h"
#include "translate/predict.h"

namespace sparrow::cli {

// The image dataset bytes (translate::PackImageDataset) of --images files
// paired with --labels files, in order.
absl::StatusOr<std::string> PackImageFiles(
    const std::vector<std::string>& images,
    const std::vector<std::string>& labels);

// The images of an IDX image file (gzip'd or not) or an image dataset file.
absl::StatusOr<core::data::ImageSet> ReadImagesToPredict(
    const std::string& path);

// Predicts one batch of at most translate::kMaxPredictImages images.
using ImageBatchPredictor =
    std::function<absl::StatusOr<translate::ImagePredictions>(
        const core::data::ImageSet&)>;

// Runs `predict` on consecutive batches of `images` and joins the answers.
absl::StatusOr<translate::ImagePredictions> PredictInBatches(
    const core::data::ImageSet& images, const ImageBatchPredictor& predict);

// Prints one line per image, "INDEX CLASS PROBABILITY" (1-based index), or
// with `json` {"images": [{"index", "class", "probability",
// "probabilities"}...]}; with `file`, also writes a CSV there (index, class,
// probability, p0, p1, ...). Returns the exit code.
int PrintImagePredictions(const translate::ImagePredictions& p,
                          const std::string& file, bool json);

}  // namespace sparrow::cli

#endif  // SPARROW_CLIENT_CLI_IMAGES_H_
