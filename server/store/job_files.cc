#include "server/store/job_files.h"

#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"

namespace sparrow::server {
namespace {

absl::StatusOr<std::string> ReadRecord(Store* store, const std::string& tenant,
                                       bool set, const v1::RecordFile& file,
                                       const char* field) {
  if (!set) return std::string();
  absl::StatusOr<std::string> content =
      store->GetDatasetContent(tenant, file.dataset_id());
  if (!content.ok()) {
    return absl::Status(content.status().code(),
                        absl::StrCat("spec.", field, ".dataset_id: ",
                                     content.status().message()));
  }
  return content;
}

}  // namespace

absl::StatusOr<JobFiles> ReadJobFiles(Store* store, const std::string& tenant,
                                      const v1::JobSpec& spec) {
  JobFiles out;
  SPARROW_ASSIGN_OR_RETURN(
      out.data, store->GetDatasetContent(tenant, spec.data().dataset_id()));
  SPARROW_ASSIGN_OR_RETURN(
      out.validation, ReadRecord(store, tenant, spec.has_validation_data(),
                                 spec.validation_data(), "validation_data"));
  SPARROW_ASSIGN_OR_RETURN(out.test,
                           ReadRecord(store, tenant, spec.has_test_data(),
                                      spec.test_data(), "test_data"));
  return out;
}

}  // namespace sparrow::server
