#include "client/cli/data_files.h"

#include "absl/strings/str_cat.h"
#include "client/cli/common.h"
#include "core/util/status_macros.h"

namespace sparrow::cli {
namespace {

struct Record {
  v1::RecordFile* file;
  std::string field;  // "validation_data" or "test_data"
};

absl::StatusOr<std::string> ReadRecord(bool set, const v1::RecordFile& file,
                                       const std::string& field) {
  if (!set) return std::string();
  if (file.source_case() != v1::RecordFile::kCsvPath) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ".csv_path is required for sparrow run --local (", field,
        ".dataset_id names a dataset on sparrowd: use `sparrow submit`)"));
  }
  return ReadFile(file.csv_path(), field + ".csv_path");
}

}  // namespace

absl::StatusOr<LocalFiles> ReadLocalFiles(const v1::JobSpec& spec) {
  if (spec.data().source_case() != v1::DataSource::kCsvPath) {
    return absl::InvalidArgumentError(
        "data.csv_path or data.images is required for sparrow run "
        "(data.dataset_id names a dataset on sparrowd: use `sparrow submit`)");
  }
  LocalFiles out;
  SPARROW_ASSIGN_OR_RETURN(out.data,
                           ReadFile(spec.data().csv_path(), "data.csv_path"));
  SPARROW_ASSIGN_OR_RETURN(
      out.validation, ReadRecord(spec.has_validation_data(),
                                 spec.validation_data(), "validation_data"));
  SPARROW_ASSIGN_OR_RETURN(out.test, ReadRecord(spec.has_test_data(),
                                                spec.test_data(), "test_data"));
  return out;
}

absl::Status UploadRecordFiles(client::Client* client, v1::JobSpec* spec) {
  Record records[] = {{nullptr, "validation_data"}, {nullptr, "test_data"}};
  if (spec->has_validation_data())
    records[0].file = spec->mutable_validation_data();
  if (spec->has_test_data()) records[1].file = spec->mutable_test_data();
  for (const Record& r : records) {
    if (r.file == nullptr ||
        r.file->source_case() != v1::RecordFile::kCsvPath) {
      continue;
    }
    const std::string& path = r.file->csv_path();
    SPARROW_ASSIGN_OR_RETURN(std::string bytes,
                             ReadFile(path, r.field + ".csv_path"));
    absl::StatusOr<v1::Dataset> dataset =
        client->Upload(bytes, path.substr(path.find_last_of('/') + 1));
    if (!dataset.ok()) {  // the server's message does not know the field
      return absl::Status(dataset.status().code(),
                          absl::StrCat(r.field, ".csv_path '", path,
                                       "': ", dataset.status().message()));
    }
    r.file->set_dataset_id(dataset->id());
  }
  return absl::OkStatus();
}

}  // namespace sparrow::cli
