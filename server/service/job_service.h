// sparrow.v1.JobService: submit, inspect, cancel and watch jobs.
#ifndef SPARROW_SERVER_SERVICE_JOB_SERVICE_H_
#define SPARROW_SERVER_SERVICE_JOB_SERVICE_H_

#include "server/service/common.h"
#include "sparrow/v1/jobs.grpc.pb.h"

namespace sparrow::server {

class JobService final : public v1::JobService::CallbackService {
 public:
  explicit JobService(ServiceDeps deps) : deps_(deps) {}

  grpc::ServerUnaryReactor* Submit(grpc::CallbackServerContext* context,
                                   const v1::SubmitJobRequest* request,
                                   v1::Job* response) override;
  grpc::ServerUnaryReactor* Get(grpc::CallbackServerContext* context,
                                const v1::GetJobRequest* request,
                                v1::Job* response) override;
  grpc::ServerUnaryReactor* List(grpc::CallbackServerContext* context,
                                 const v1::ListJobsRequest* request,
                                 v1::ListJobsResponse* response) override;
  grpc::ServerUnaryReactor* Cancel(grpc::CallbackServerContext* context,
                                   const v1::CancelJobRequest* request,
                                   v1::Job* response) override;
  grpc::ServerWriteReactor<v1::ProgressEvent>* Watch(
      grpc::CallbackServerContext* context,
      const v1::WatchJobRequest* request) override;

 private:
  ServiceDeps deps_;
};

}  // namespace sparrow::server

#endif  // SPARROW_SERVER_SERVICE_JOB_SERVICE_H_
