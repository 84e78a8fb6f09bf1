// Image bytes -> the IDX parsers (core::data::IdxFileSize, ParseIdxImages,
// ParseIdxLabels), the image-dataset and predict-image parsers of
// translate/images.h, Gunzip (capped at 1 MiB) and MakeImageTable. Any input
// must give a result or an InvalidArgument, never a crash, and a parsed set
// must be consistent.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "core/data/idx.h"
#include "translate/images.h"

namespace {

namespace data = sparrow::core::data;

void Check(bool condition) {
  if (!condition) std::abort();
}

// A parsed set: whole images, one label per image when labeled, and a table
// of its first and last image with one column each.
void CheckSet(const data::ImageSet& set) {
  Check(set.image_size() > 0);
  Check(static_cast<int64_t>(set.pixels.size()) ==
        set.size() * set.image_size());
  Check(set.labels.empty() ||
        static_cast<int64_t>(set.labels.size()) == set.size());
  if (set.size() == 0 || set.image_size() > 4096) return;
  auto table = data::MakeImageTable(set, {1, set.size()});
  Check(table.ok());
  Check(table->x.rows() == set.image_size() && table->x.cols() == 2);
  Check(table->x.minCoeff() >= 0 && table->x.maxCoeff() <= 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  const std::string_view buffer(reinterpret_cast<const char*>(bytes), size);
  auto file_size = data::IdxFileSize(buffer, "fuzz");
  if (file_size.ok()) Check(*file_size <= size);
  auto images = data::ParseIdxImages(buffer, "fuzz");
  if (images.ok()) CheckSet(*images);
  auto labels = data::ParseIdxLabels(buffer, "fuzz");
  if (labels.ok()) Check(labels->size() + 8 == size);
  const absl::string_view view(buffer.data(), buffer.size());
  auto dataset = sparrow::translate::ParseImageDataset(view);
  if (dataset.ok()) CheckSet(*dataset);
  auto predict = sparrow::translate::ParsePredictImages(view);
  if (predict.ok()) CheckSet(*predict);
  auto gunzipped = sparrow::translate::Gunzip(view, 1 << 20, "fuzz");
  if (gunzipped.ok()) Check(gunzipped->size() <= (1u << 20));
  return 0;
}
