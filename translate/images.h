// Image datasets: IDX files on disk (gzip'd or not) and Sparrow's compact
// binary image-dataset format, the bytes `sparrow upload --images` sends and
// sparrowd stores (docs/data.md, "Image datasets"):
//
//   "SPARROW-IMAGES 1\n"            17 bytes: magic and format version
//   an uncompressed IDX image file  magic 0x00000803 (N x rows x columns) or
//                                   0x00000804 (N x channels x rows x columns)
//   an uncompressed IDX label file  magic 0x00000801, N labels
//
// and nothing after. Several file pairs are packed as one pair (their images
// and labels concatenated in order). The training tables of such a dataset
// are built by LoadImageTrainData (translate/data.h).
//
// Thread safety: pure functions; the readers only read the files named.
#ifndef SPARROW_TRANSLATE_IMAGES_H_
#define SPARROW_TRANSLATE_IMAGES_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/data/idx.h"
#include "sparrow/v1/spec.pb.h"

namespace sparrow::translate {

inline constexpr absl::string_view kImageDatasetMagic = "SPARROW-IMAGES 1\n";

// The largest IDX file the readers decompress (1 GiB, 17x Fashion-MNIST's
// 60,000 training images): a gzip bomb stops here.
inline constexpr int64_t kMaxIdxFileBytes = int64_t{1} << 30;

// True when `bytes` start with kImageDatasetMagic (else: a CSV).
bool IsImageDataset(absl::string_view bytes);

// Decompresses gzip data (one or more members) into at most `max_bytes`
// bytes. InvalidArgument names `what` for corrupt or truncated data and for
// output beyond `max_bytes`.
absl::StatusOr<std::string> Gunzip(absl::string_view bytes, int64_t max_bytes,
                                   absl::string_view what);

// The bytes of the file at `path`, gunzipped when they start with 1f 8b, at
// most kMaxIdxFileBytes. InvalidArgument names the file and `what` (e.g.
// "data.images.images[0]").
absl::StatusOr<std::string> ReadIdxFile(const std::string& path,
                                        absl::string_view what);

// Reads the image and label files of `files` pairwise (images[i] with
// labels[i]) into one labeled set, in order. Errors name the field (`prefix`
// then "images[i]" or "labels[i]"): different numbers of image and label
// files, none, unreadable or malformed files, counts that differ within a
// pair, shapes that differ between pairs.
absl::StatusOr<core::data::ImageSet> ReadImageFiles(
    const v1::ImageFiles& files, absl::string_view prefix = "data.images.");

// The image-dataset bytes of a labeled set.
std::string PackImageDataset(const core::data::ImageSet& set);

// Parses image-dataset bytes into a labeled set. InvalidArgument (naming the
// part that is wrong) for a missing magic line, malformed IDX files, counts
// that differ or bytes after the label file.
absl::StatusOr<core::data::ImageSet> ParseImageDataset(absl::string_view bytes);

// Images to predict on: image-dataset bytes (labels dropped) or one
// uncompressed IDX image file; unlabeled.
absl::StatusOr<core::data::ImageSet> ParsePredictImages(
    absl::string_view bytes);

}  // namespace sparrow::translate

#endif  // SPARROW_TRANSLATE_IMAGES_H_
