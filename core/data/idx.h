// IDX files (the MNIST / Fashion-MNIST format) from bytes, and image tables.
//
// An IDX file is a 4-byte magic {0, 0, type, ndims}, ndims big-endian uint32
// dimensions, then the data, row-major. Sparrow reads unsigned bytes (type
// 0x08) only: images are N x rows x cols (magic 0x00000803) or N x channels x
// rows x cols (0x00000804), labels are N values (0x00000801). The bytes must
// be uncompressed (translate/images.h gunzips files).
//
// Thread safety: plain structs and pure functions; no I/O.
#ifndef SPARROW_CORE_DATA_IDX_H_
#define SPARROW_CORE_DATA_IDX_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/data/dataset.h"

namespace sparrow::core::data {

inline constexpr uint32_t kIdxLabelsMagic = 0x00000801;
inline constexpr uint32_t kIdxImagesMagic = 0x00000803;
inline constexpr uint32_t kIdxImages4dMagic = 0x00000804;

// Images of one shape with, optionally, one label each. Pixels are stored
// image after image, each channel-major (channel, row, column), as in the
// file.
struct ImageSet {
  int channels = 0, height = 0, width = 0;
  std::vector<uint8_t> pixels;  // size() * image_size() values
  std::vector<uint8_t> labels;  // size() labels, or empty (unlabeled)

  // Values per image: channels * height * width.
  int64_t image_size() const { return int64_t{channels} * height * width; }
  // Number of images.
  int64_t size() const {
    return image_size() == 0
               ? 0
               : static_cast<int64_t>(pixels.size()) / image_size();
  }
};

// The length of the IDX file at the start of `bytes` (header and data), read
// from its header, so that several files can be stored back to back. Same
// header errors as ParseIdxImages; a file longer than `bytes` is truncated.
absl::StatusOr<size_t> IdxFileSize(std::string_view bytes,
                                   std::string_view what);

// Parses an uncompressed IDX image file (magic 0x00000803 or 0x00000804) into
// an unlabeled set; `bytes` must hold exactly one file. Errors
// (InvalidArgument, naming the file as `what`): bad magic (with a hint when
// the bytes are gzip'd or a label file), a type other than unsigned byte, a
// zero image dimension, truncated data or bytes after the data.
absl::StatusOr<ImageSet> ParseIdxImages(std::string_view bytes,
                                        std::string_view what);

// Parses an uncompressed IDX label file (magic 0x00000801); same errors.
absl::StatusOr<std::vector<uint8_t>> ParseIdxLabels(std::string_view bytes,
                                                    std::string_view what);

// Appends `images` with their `labels` to `set` (moving when `set` is empty).
// Errors (InvalidArgument, naming `what`): the label count differs from the
// image count, or the image shape differs from the images already in `set`.
absl::Status AppendLabeledImages(ImageSet images, std::vector<uint8_t> labels,
                                 std::string_view what, ImageSet* set);

// The IDX files of a set: its images (3-D for one channel, else 4-D) and its
// labels.
std::string SerializeIdxImages(const ImageSet& set);
std::string SerializeIdxLabels(const std::vector<uint8_t>& labels);

// A table of the given images (1-based indices, in the order given): column j
// of x holds the pixels of image rows[j] as value / 255, channel-major; y is
// its label (1 x M), or 0 x M for an unlabeled set. Inputs are named
// "pixel0".., the output "label"; the image shape fields are set.
// InvalidArgument when no index is given or one is outside the set.
absl::StatusOr<TableData> MakeImageTable(const ImageSet& set,
                                         const std::vector<int64_t>& rows);

}  // namespace sparrow::core::data

#endif  // SPARROW_CORE_DATA_IDX_H_
