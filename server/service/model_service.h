// sparrow.v1.ModelService: the trained model of a succeeded job — fetch it,
// export it, run it on new data.
#ifndef SPARROW_SERVER_SERVICE_MODEL_SERVICE_H_
#define SPARROW_SERVER_SERVICE_MODEL_SERVICE_H_

#include "server/service/common.h"
#include "sparrow/v1/model_service.grpc.pb.h"

namespace sparrow::server {

class ModelService final : public v1::ModelService::CallbackService {
 public:
  explicit ModelService(ServiceDeps deps) : deps_(deps) {}

  grpc::ServerUnaryReactor* Get(grpc::CallbackServerContext* context,
                                const v1::GetModelRequest* request,
                                v1::TrainedModel* response) override;
  grpc::ServerUnaryReactor* Export(grpc::CallbackServerContext* context,
                                   const v1::ExportModelRequest* request,
                                   v1::ExportModelResponse* response) override;
  grpc::ServerUnaryReactor* Predict(grpc::CallbackServerContext* context,
                                    const v1::PredictRequest* request,
                                    v1::PredictResponse* response) override;

 private:
  // The model of the tenant's job; FAILED_PRECONDITION until it succeeded.
  absl::StatusOr<v1::TrainedModel> Load(const std::string& tenant,
                                        const std::string& job_id);
  ServiceDeps deps_;
};

}  // namespace sparrow::server

#endif  // SPARROW_SERVER_SERVICE_MODEL_SERVICE_H_
