// sparrow.v1.DatasetService: chunked, checksummed, content-addressed uploads
// of CSV files, and their listing and deletion.
#ifndef SPARROW_SERVER_SERVICE_DATASET_SERVICE_H_
#define SPARROW_SERVER_SERVICE_DATASET_SERVICE_H_

#include <string>

#include "absl/strings/string_view.h"
#include "server/service/common.h"
#include "sparrow/v1/datasets.grpc.pb.h"
#include "translate/sha256.h"

namespace sparrow::server {

// Dataset ids: the lowercase hex SHA-256 of the content.
using translate::Sha256Hex;

class DatasetService final : public v1::DatasetService::CallbackService {
 public:
  explicit DatasetService(ServiceDeps deps) : deps_(deps) {}

  grpc::ServerReadReactor<v1::UploadDatasetRequest>* Upload(
      grpc::CallbackServerContext* context,
      v1::UploadDatasetResponse* response) override;
  grpc::ServerUnaryReactor* Get(grpc::CallbackServerContext* context,
                                const v1::GetDatasetRequest* request,
                                v1::Dataset* response) override;
  grpc::ServerUnaryReactor* List(grpc::CallbackServerContext* context,
                                 const v1::ListDatasetsRequest* request,
                                 v1::ListDatasetsResponse* response) override;
  grpc::ServerUnaryReactor* Delete(
      grpc::CallbackServerContext* context,
      const v1::DeleteDatasetRequest* request,
      v1::DeleteDatasetResponse* response) override;

 private:
  ServiceDeps deps_;
};

}  // namespace sparrow::server

#endif  // SPARROW_SERVER_SERVICE_DATASET_SERVICE_H_
