#include "translate/images.h"

#include <zlib.h>

#include <fstream>
#include <iterator>
#include <string_view>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/util/status_macros.h"

namespace sparrow::translate {
namespace {

bool IsGzip(absl::string_view bytes) {
  return bytes.size() >= 2 && static_cast<uint8_t>(bytes[0]) == 0x1f &&
         static_cast<uint8_t>(bytes[1]) == 0x8b;
}

std::string_view View(absl::string_view s) {
  return std::string_view(s.data(), s.size());
}

// Owns a zlib inflate stream for gzip input.
class Inflater {
 public:
  Inflater() { ok_ = inflateInit2(&z_, 16 + MAX_WBITS) == Z_OK; }
  ~Inflater() {
    if (ok_) inflateEnd(&z_);
  }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;

  // Inflates all of `in` (gzip members back to back) into `out`, stopping
  // with an error beyond `max_bytes`.
  absl::Status Run(absl::string_view in, int64_t max_bytes,
                   absl::string_view what, std::string* out);

 private:
  z_stream z_{};
  bool ok_ = false;
};

absl::Status Inflater::Run(absl::string_view in, int64_t max_bytes,
                           absl::string_view what, std::string* out) {
  if (!ok_) return absl::InternalError("zlib: inflateInit2 failed");
  if (static_cast<int64_t>(in.size()) > max_bytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s has %d compressed bytes, more than the largest IDX file Sparrow "
        "reads (translate::kMaxIdxFileBytes, %d bytes); split the file",
        what, in.size(), max_bytes));
  }
  z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z_.avail_in = static_cast<uInt>(in.size());
  char buffer[1 << 16];
  while (true) {
    z_.next_out = reinterpret_cast<Bytef*>(buffer);
    z_.avail_out = sizeof(buffer);
    const int rc = inflate(&z_, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, " is not valid gzip data (", z_.msg ? z_.msg : "truncated",
          "); check the download or decompress it yourself"));
    }
    out->append(buffer, sizeof(buffer) - z_.avail_out);
    if (static_cast<int64_t>(out->size()) > max_bytes) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s decompresses to more than %d bytes, the largest IDX file "
          "Sparrow reads (translate::kMaxIdxFileBytes); split the file",
          what, max_bytes));
    }
    if (rc == Z_STREAM_END) {
      // Another gzip member may follow (files joined with cat).
      if (!IsGzip(absl::string_view(reinterpret_cast<char*>(z_.next_in),
                                    z_.avail_in))) {
        return absl::OkStatus();
      }
      inflateReset(&z_);
    } else if (z_.avail_in == 0 && z_.avail_out != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(what,
                       " ends in the middle of its gzip data (the file is "
                       "truncated); download it again"));
    }
  }
}

}  // namespace

bool IsImageDataset(absl::string_view bytes) {
  return absl::StartsWith(bytes, kImageDatasetMagic);
}

absl::StatusOr<std::string> Gunzip(absl::string_view bytes, int64_t max_bytes,
                                   absl::string_view what) {
  std::string out;
  Inflater inflater;
  SPARROW_RETURN_IF_ERROR(inflater.Run(bytes, max_bytes, what, &out));
  return out;
}

absl::StatusOr<std::string> ReadIdxFile(const std::string& path,
                                        absl::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": cannot open '", path,
                     "'; check the path (relative paths are relative to the "
                     "current directory)"));
  }
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  const std::string name = absl::StrCat(what, " '", path, "'");
  if (IsGzip(bytes)) return Gunzip(bytes, kMaxIdxFileBytes, name);
  if (static_cast<int64_t>(bytes.size()) > kMaxIdxFileBytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s has %d bytes, more than the largest IDX file Sparrow reads "
        "(translate::kMaxIdxFileBytes, %d bytes); split the file",
        name, bytes.size(), kMaxIdxFileBytes));
  }
  return bytes;
}

absl::StatusOr<core::data::ImageSet> ReadImageFiles(const v1::ImageFiles& files,
                                                    absl::string_view prefix) {
  if (files.images_size() == 0 || files.images_size() != files.labels_size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%simages names %d image files and %slabels %d label files; give one "
        "label file per image file, e.g. images [\"train-images-idx3-ubyte."
        "gz\"] with labels [\"train-labels-idx1-ubyte.gz\"]",
        prefix, files.images_size(), prefix, files.labels_size()));
  }
  core::data::ImageSet set;
  for (int i = 0; i < files.images_size(); ++i) {
    const std::string image_field = absl::StrCat(prefix, "images[", i, "]");
    const std::string label_field = absl::StrCat(prefix, "labels[", i, "]");
    SPARROW_ASSIGN_OR_RETURN(std::string bytes,
                             ReadIdxFile(files.images(i), image_field));
    SPARROW_ASSIGN_OR_RETURN(
        core::data::ImageSet images,
        core::data::ParseIdxImages(
            bytes, absl::StrCat(image_field, " '", files.images(i), "'")));
    std::string().swap(bytes);
    SPARROW_ASSIGN_OR_RETURN(bytes, ReadIdxFile(files.labels(i), label_field));
    SPARROW_ASSIGN_OR_RETURN(
        std::vector<uint8_t> labels,
        core::data::ParseIdxLabels(
            bytes, absl::StrCat(label_field, " '", files.labels(i), "'")));
    SPARROW_RETURN_IF_ERROR(core::data::AppendLabeledImages(
        std::move(images), std::move(labels),
        absl::StrCat(image_field, " and ", label_field), &set));
  }
  return set;
}

std::string PackImageDataset(const core::data::ImageSet& set) {
  std::string out(kImageDatasetMagic);
  out += core::data::SerializeIdxImages(set);
  out += core::data::SerializeIdxLabels(set.labels);
  return out;
}

absl::StatusOr<core::data::ImageSet> ParseImageDataset(
    absl::string_view bytes) {
  if (!IsImageDataset(bytes)) {
    return absl::InvalidArgumentError(
        "not a Sparrow image dataset: it does not start with the line "
        "\"SPARROW-IMAGES 1\"; make one with sparrow upload --images FILE "
        "--labels FILE");
  }
  const std::string_view rest = View(bytes.substr(kImageDatasetMagic.size()));
  const char* const kImages = "the image dataset's image file";
  SPARROW_ASSIGN_OR_RETURN(const size_t image_bytes,
                           core::data::IdxFileSize(rest, kImages));
  SPARROW_ASSIGN_OR_RETURN(
      core::data::ImageSet images,
      core::data::ParseIdxImages(rest.substr(0, image_bytes), kImages));
  SPARROW_ASSIGN_OR_RETURN(
      std::vector<uint8_t> labels,
      core::data::ParseIdxLabels(rest.substr(image_bytes),
                                 "the image dataset's label file"));
  core::data::ImageSet set;
  SPARROW_RETURN_IF_ERROR(core::data::AppendLabeledImages(
      std::move(images), std::move(labels), "the image dataset", &set));
  return set;
}

absl::StatusOr<core::data::ImageSet> ParsePredictImages(
    absl::string_view bytes) {
  if (IsImageDataset(bytes)) {
    SPARROW_ASSIGN_OR_RETURN(core::data::ImageSet set,
                             ParseImageDataset(bytes));
    set.labels.clear();
    return set;
  }
  return core::data::ParseIdxImages(View(bytes), "the image file");
}

}  // namespace sparrow::translate
