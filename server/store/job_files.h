// The contents of the files a job reads, from the store.
#ifndef SPARROW_SERVER_STORE_JOB_FILES_H_
#define SPARROW_SERVER_STORE_JOB_FILES_H_

#include <string>

#include "absl/status/statusor.h"
#include "server/store/store.h"
#include "sparrow/v1/spec.pb.h"

namespace sparrow::server {

// spec.data's dataset, and spec.validation_data's and spec.test_data's when
// set (empty otherwise).
struct JobFiles {
  std::string data, validation, test;
};

// Reads them; NOT_FOUND names the field whose dataset is gone.
absl::StatusOr<JobFiles> ReadJobFiles(Store* store, const std::string& tenant,
                                      const v1::JobSpec& spec);

}  // namespace sparrow::server

#endif  // SPARROW_SERVER_STORE_JOB_FILES_H_
