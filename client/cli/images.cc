#include "client/cli/images.h"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <utility>

#include "absl/strings/str_format.h"
#include "client/cli/common.h"
#include "core/util/status_macros.h"
#include "nlohmann/json.hpp"
#include "translate/images.h"

namespace sparrow::cli {
namespace {

// Images first+1 .. first+count of `set`, unlabeled.
core::data::ImageSet Slice(const core::data::ImageSet& set, int64_t first,
                           int64_t count) {
  core::data::ImageSet out;
  out.channels = set.channels;
  out.height = set.height;
  out.width = set.width;
  const auto begin = set.pixels.begin() + first * set.image_size();
  out.pixels.assign(begin, begin + count * set.image_size());
  return out;
}

absl::Status WriteCsv(const translate::ImagePredictions& p,
                      const std::string& file) {
  std::ofstream out(file, std::ios::binary);
  out << "index,class,probability";
  for (Eigen::Index c = 0; c < p.probabilities.rows(); ++c) out << ",p" << c;
  out << "\n";
  for (Eigen::Index j = 0; j < p.probabilities.cols(); ++j) {
    out << absl::StrFormat("%d,%d,%.9g", j + 1, p.labels[j],
                           p.probabilities(p.labels[j], j));
    for (Eigen::Index c = 0; c < p.probabilities.rows(); ++c) {
      out << absl::StrFormat(",%.9g", p.probabilities(c, j));
    }
    out << "\n";
  }
  if (!out) return absl::InvalidArgumentError("cannot write " + file);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> PackImageFiles(
    const std::vector<std::string>& images,
    const std::vector<std::string>& labels) {
  v1::ImageFiles files;
  for (const std::string& f : images) files.add_images(f);
  for (const std::string& f : labels) files.add_labels(f);
  SPARROW_ASSIGN_OR_RETURN(const core::data::ImageSet set,
                           translate::ReadImageFiles(files, "--"));
  return translate::PackImageDataset(set);
}

absl::StatusOr<core::data::ImageSet> ReadImagesToPredict(
    const std::string& path) {
  SPARROW_ASSIGN_OR_RETURN(const std::string bytes,
                           translate::ReadIdxFile(path, "--images"));
  auto set = translate::ParsePredictImages(bytes);
  if (!set.ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--images '%s': %s", path, set.status().message()));
  }
  return set;
}

absl::StatusOr<translate::ImagePredictions> PredictInBatches(
    const core::data::ImageSet& images, const ImageBatchPredictor& predict) {
  translate::ImagePredictions all;
  const int64_t n = images.size();
  for (int64_t first = 0; first < n; first += translate::kMaxPredictImages) {
    const int64_t count = std::min(translate::kMaxPredictImages, n - first);
    SPARROW_ASSIGN_OR_RETURN(translate::ImagePredictions batch,
                             predict(Slice(images, first, count)));
    if (first == 0) {
      all.probabilities.resize(batch.probabilities.rows(), n);
    }
    all.probabilities.middleCols(first, count) = batch.probabilities;
    all.labels.insert(all.labels.end(), batch.labels.begin(),
                      batch.labels.end());
  }
  return all;
}

int PrintImagePredictions(const translate::ImagePredictions& p,
                          const std::string& file, bool json) {
  if (!file.empty()) {
    if (absl::Status s = WriteCsv(p, file); !s.ok()) return Fail(s);
  }
  const Eigen::MatrixXd& prob = p.probabilities;
  if (!json) {
    for (Eigen::Index j = 0; j < prob.cols(); ++j) {
      std::cout << absl::StrFormat("%d %d %.4f\n", j + 1, p.labels[j],
                                   prob(p.labels[j], j));
    }
    return kExitOk;
  }
  nlohmann::json images = nlohmann::json::array();
  for (Eigen::Index j = 0; j < prob.cols(); ++j) {
    std::vector<double> all(prob.col(j).data(),
                            prob.col(j).data() + prob.rows());
    images.push_back({{"index", j + 1},
                      {"class", p.labels[j]},
                      {"probability", prob(p.labels[j], j)},
                      {"probabilities", all}});
  }
  nlohmann::json out = {{"images", images}};
  if (!file.empty()) out["file"] = file;
  std::cout << out.dump(2) << "\n";
  return kExitOk;
}

}  // namespace sparrow::cli
