#include "core/data/idx.h"

#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/util/status_macros.h"

namespace sparrow::core::data {
namespace {

constexpr uint8_t kUnsignedByte = 0x08;
// Larger images than this (16 M values each) are surely a corrupt header.
constexpr int64_t kMaxImageValues = int64_t{1} << 24;

struct IdxHeader {
  uint32_t magic = 0;
  std::vector<uint32_t> dims;
  size_t header_bytes = 0;
  uint64_t data_bytes = 0;  // product of the dimensions (one byte each)
};

absl::Status Invalid(std::string_view what, std::string_view problem) {
  return absl::InvalidArgumentError(absl::StrFormat("%s %s", what, problem));
}

uint32_t BigEndian32(std::string_view bytes, size_t at) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4; ++i) {
    v = (v << 8) | static_cast<uint8_t>(bytes[at + i]);
  }
  return v;
}

std::string TypeName(uint8_t type) {
  switch (type) {
    case 0x09:
      return "signed byte";
    case 0x0B:
      return "16-bit integer";
    case 0x0C:
      return "32-bit integer";
    case 0x0D:
      return "float";
    case 0x0E:
      return "double";
    default:
      return "unknown";
  }
}

// The magic number: two zero bytes, the data type, the number of dimensions.
absl::Status CheckMagic(std::string_view bytes, std::string_view what) {
  if (bytes.size() >= 2 && static_cast<uint8_t>(bytes[0]) == 0x1f &&
      static_cast<uint8_t>(bytes[1]) == 0x8b) {
    return Invalid(what, "is gzip-compressed; decompress it first (gunzip)");
  }
  if (bytes.size() < 4) {
    return Invalid(what, absl::StrFormat("is %d bytes long, too short for an "
                                         "IDX file (a 4-byte magic number, "
                                         "then the dimensions)",
                                         bytes.size()));
  }
  const auto b = [&](size_t i) { return static_cast<uint8_t>(bytes[i]); };
  if (b(0) != 0 || b(1) != 0 || b(3) == 0 || b(3) > 4) {
    return Invalid(
        what, absl::StrFormat("does not start with an IDX magic number (00 00 "
                              "08 0N); its first bytes are %02x %02x %02x "
                              "%02x, so it is not an IDX file",
                              b(0), b(1), b(2), b(3)));
  }
  if (b(2) != kUnsignedByte) {
    return Invalid(
        what, absl::StrFormat("holds IDX data type 0x%02x (%s); Sparrow reads "
                              "unsigned bytes (type 0x08) only",
                              b(2), TypeName(b(2))));
  }
  return absl::OkStatus();
}

absl::StatusOr<IdxHeader> ReadHeader(std::string_view bytes,
                                     std::string_view what) {
  SPARROW_RETURN_IF_ERROR(CheckMagic(bytes, what));
  IdxHeader h;
  h.magic = BigEndian32(bytes, 0);
  const size_t ndims = static_cast<uint8_t>(bytes[3]);
  h.header_bytes = 4 + 4 * ndims;
  if (bytes.size() < h.header_bytes) {
    return Invalid(what, absl::StrFormat(
                             "is truncated: its magic number announces %d "
                             "dimensions (%d header bytes) but it has %d bytes",
                             ndims, h.header_bytes, bytes.size()));
  }
  h.data_bytes = 1;
  for (size_t i = 0; i < ndims; ++i) {
    const uint32_t d = BigEndian32(bytes, 4 + 4 * i);
    h.dims.push_back(d);
    // Dimensions of at most 2^32 each: four of them overflow 64 bits only
    // when the file could never exist; refuse such a header.
    if (d != 0 && h.data_bytes > std::numeric_limits<uint64_t>::max() / d) {
      return Invalid(what,
                     "has dimensions whose product overflows; the "
                     "header is corrupt");
    }
    h.data_bytes *= d;
  }
  return h;
}

// The data after the header holds exactly the bytes the header describes.
absl::Status CheckDataSize(const IdxHeader& h, std::string_view bytes,
                           std::string_view what) {
  const uint64_t have = bytes.size() - h.header_bytes;
  if (have < h.data_bytes) {
    return Invalid(
        what, absl::StrFormat("is truncated: its header describes %d bytes of "
                              "data but only %d follow it",
                              h.data_bytes, have));
  }
  if (have > h.data_bytes) {
    return Invalid(
        what, absl::StrFormat("has %d bytes after the %d bytes of data its "
                              "header describes; it is not a single IDX file",
                              have - h.data_bytes, h.data_bytes));
  }
  return absl::OkStatus();
}

// The image shape of an image file's header (dimensions after the count).
absl::Status ReadShape(const IdxHeader& h, std::string_view what,
                       ImageSet* set) {
  if (h.magic == kIdxLabelsMagic) {
    return Invalid(what,
                   "is an IDX label file (magic 0x00000801), not an "
                   "image file; are the images and labels swapped?");
  }
  if (h.magic != kIdxImagesMagic && h.magic != kIdxImages4dMagic) {
    return Invalid(
        what, absl::StrFormat("has IDX magic 0x%08x (%d dimensions); image "
                              "files have 0x00000803 (count x rows x columns) "
                              "or 0x00000804 (count x channels x rows x "
                              "columns)",
                              h.magic, h.dims.size()));
  }
  const bool four = h.dims.size() == 4;
  const uint64_t c = four ? h.dims[1] : 1;
  const uint64_t rows = h.dims[four ? 2 : 1], cols = h.dims[four ? 3 : 2];
  // Stepwise, so that the product cannot overflow (a file of 0 images can
  // have any dimensions).
  const auto too_big = [](uint64_t v) {
    return v > static_cast<uint64_t>(kMaxImageValues);
  };
  if (c == 0 || rows == 0 || cols == 0 || too_big(c) || too_big(rows) ||
      too_big(c * rows) || too_big(c * rows * cols)) {
    return Invalid(
        what, absl::StrFormat("has images of %d x %d x %d (channels x rows x "
                              "columns); each must be 1 or more, and at most "
                              "%d values per image",
                              c, rows, cols, kMaxImageValues));
  }
  set->channels = static_cast<int>(c);
  set->height = static_cast<int>(rows);
  set->width = static_cast<int>(cols);
  return absl::OkStatus();
}

void AppendBigEndian32(uint32_t v, std::string* out) {
  for (int shift = 24; shift >= 0; shift -= 8) {
    out->push_back(static_cast<char>((v >> shift) & 0xff));
  }
}

std::string ShapeText(const ImageSet& s) {
  return absl::StrFormat("%d x %d x %d", s.channels, s.height, s.width);
}

}  // namespace

absl::StatusOr<size_t> IdxFileSize(std::string_view bytes,
                                   std::string_view what) {
  SPARROW_ASSIGN_OR_RETURN(const IdxHeader h, ReadHeader(bytes, what));
  if (bytes.size() - h.header_bytes < h.data_bytes) {
    return CheckDataSize(h, bytes, what);
  }
  return h.header_bytes + static_cast<size_t>(h.data_bytes);
}

absl::StatusOr<ImageSet> ParseIdxImages(std::string_view bytes,
                                        std::string_view what) {
  SPARROW_ASSIGN_OR_RETURN(const IdxHeader h, ReadHeader(bytes, what));
  ImageSet set;
  SPARROW_RETURN_IF_ERROR(ReadShape(h, what, &set));
  SPARROW_RETURN_IF_ERROR(CheckDataSize(h, bytes, what));
  const auto* data =
      reinterpret_cast<const uint8_t*>(bytes.data() + h.header_bytes);
  set.pixels.assign(data, data + h.data_bytes);
  return set;
}

absl::StatusOr<std::vector<uint8_t>> ParseIdxLabels(std::string_view bytes,
                                                    std::string_view what) {
  SPARROW_ASSIGN_OR_RETURN(const IdxHeader h, ReadHeader(bytes, what));
  if (h.magic != kIdxLabelsMagic) {
    return Invalid(
        what, absl::StrFormat("has IDX magic 0x%08x (%d dimensions); label "
                              "files have 0x00000801 (one byte per image)%s",
                              h.magic, h.dims.size(),
                              h.magic == kIdxImagesMagic
                                  ? "; are the images and labels swapped?"
                                  : ""));
  }
  SPARROW_RETURN_IF_ERROR(CheckDataSize(h, bytes, what));
  const auto* data =
      reinterpret_cast<const uint8_t*>(bytes.data() + h.header_bytes);
  return std::vector<uint8_t>(data, data + h.data_bytes);
}

absl::Status AppendLabeledImages(ImageSet images, std::vector<uint8_t> labels,
                                 std::string_view what, ImageSet* set) {
  if (static_cast<int64_t>(labels.size()) != images.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: the image file holds %d images but the label file %d labels; "
        "pair each image file with its own label file",
        what, images.size(), labels.size()));
  }
  if (set->pixels.empty() && set->labels.empty()) {
    *set = std::move(images);
    set->labels = std::move(labels);
    return absl::OkStatus();
  }
  if (images.channels != set->channels || images.height != set->height ||
      images.width != set->width) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: the images are %s (channels x rows x columns) but the earlier "
        "files' are %s; all image files of a dataset must have one shape",
        what, ShapeText(images), ShapeText(*set)));
  }
  set->pixels.insert(set->pixels.end(), images.pixels.begin(),
                     images.pixels.end());
  set->labels.insert(set->labels.end(), labels.begin(), labels.end());
  return absl::OkStatus();
}

std::string SerializeIdxImages(const ImageSet& set) {
  const bool four = set.channels != 1;
  std::string out;
  out.reserve(20 + set.pixels.size());
  AppendBigEndian32(four ? kIdxImages4dMagic : kIdxImagesMagic, &out);
  AppendBigEndian32(static_cast<uint32_t>(set.size()), &out);
  if (four) AppendBigEndian32(static_cast<uint32_t>(set.channels), &out);
  AppendBigEndian32(static_cast<uint32_t>(set.height), &out);
  AppendBigEndian32(static_cast<uint32_t>(set.width), &out);
  out.append(reinterpret_cast<const char*>(set.pixels.data()),
             set.pixels.size());
  return out;
}

std::string SerializeIdxLabels(const std::vector<uint8_t>& labels) {
  std::string out;
  out.reserve(8 + labels.size());
  AppendBigEndian32(kIdxLabelsMagic, &out);
  AppendBigEndian32(static_cast<uint32_t>(labels.size()), &out);
  out.append(reinterpret_cast<const char*>(labels.data()), labels.size());
  return out;
}

absl::StatusOr<TableData> MakeImageTable(const ImageSet& set,
                                         const std::vector<int64_t>& rows) {
  if (rows.empty()) {
    return absl::InvalidArgumentError("no images selected for the table");
  }
  const int64_t n = set.size();
  for (const int64_t r : rows) {
    if (r < 1 || r > n) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "image %d is outside the dataset's images 1-%d", r, n));
    }
  }
  const bool labeled = !set.labels.empty();
  const Eigen::Index k = set.image_size();
  const auto m = static_cast<Eigen::Index>(rows.size());
  TableData t;
  t.x.resize(k, m);
  t.y.resize(labeled ? 1 : 0, m);
  for (Eigen::Index j = 0; j < m; ++j) {
    const uint8_t* p = set.pixels.data() + (rows[j] - 1) * k;
    for (Eigen::Index i = 0; i < k; ++i) t.x(i, j) = p[i] / 255.0;
    if (labeled) t.y(0, j) = set.labels[rows[j] - 1];
  }
  t.input_names.reserve(k);
  for (Eigen::Index i = 0; i < k; ++i) {
    t.input_names.push_back(absl::StrCat("pixel", i));
  }
  t.output_names = {"label"};
  t.image_channels = set.channels;
  t.image_height = set.height;
  t.image_width = set.width;
  return t;
}

}  // namespace sparrow::core::data
