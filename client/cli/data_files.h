// The CSV files a spec names on the client's machine: read for a local run,
// uploaded by `sparrow submit`.
#ifndef SPARROW_CLIENT_CLI_DATA_FILES_H_
#define SPARROW_CLIENT_CLI_DATA_FILES_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/lib/client.h"
#include "sparrow/v1/spec.pb.h"
#include "translate/data.h"

namespace sparrow::cli {

// The contents of data.csv_path and of validation_data / test_data's
// csv_path when set.
struct LocalFiles {
  std::string data, validation, test;
  translate::DataFiles View() const { return {data, validation, test}; }
};

// Reads them; a dataset_id (sparrowd's) is an error that says to submit.
absl::StatusOr<LocalFiles> ReadLocalFiles(const v1::JobSpec& spec);

// `sparrow submit`: uploads validation_data's and test_data's csv_path and
// puts the datasets' ids in their place.
absl::Status UploadRecordFiles(client::Client* client, v1::JobSpec* spec);

}  // namespace sparrow::cli

#endif  // SPARROW_CLIENT_CLI_DATA_FILES_H_
