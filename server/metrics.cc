#include "server/metrics.h"

#include "absl/strings/str_cat.h"

namespace sparrow::server {
namespace {

const char* CodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::UNKNOWN:
      return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED:
      return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS:
      return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    default:
      return "UNKNOWN";
  }
}

}  // namespace

ServerMetrics::ServerMetrics()
    : registry_(std::make_shared<prometheus::Registry>()) {
  queue_depth_ = &prometheus::BuildGauge()
                      .Name("sparrow_queue_depth")
                      .Help("Jobs waiting in the queue")
                      .Register(*registry_)
                      .Add({});
  running_jobs_ = &prometheus::BuildGauge()
                       .Name("sparrow_running_jobs")
                       .Help("Jobs a worker is running")
                       .Register(*registry_)
                       .Add({});
  events_ = &prometheus::BuildCounter()
                 .Name("sparrow_progress_events_total")
                 .Help("Progress events stored and published")
                 .Register(*registry_)
                 .Add({});
  job_seconds_ = &prometheus::BuildHistogram()
                      .Name("sparrow_job_duration_seconds")
                      .Help("Wall time of a job attempt, by final state")
                      .Register(*registry_);
  rpcs_ = &prometheus::BuildCounter()
               .Name("sparrow_rpcs_total")
               .Help("Finished RPCs by method and status code")
               .Register(*registry_);
}

void ServerMetrics::ObserveJobEnd(const std::string& state, double seconds) {
  static const prometheus::Histogram::BucketBoundaries kBuckets = {
      0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600};
  job_seconds_->Add({{"state", state}}, kBuckets).Observe(seconds);
}

void ServerMetrics::CountRpc(const std::string& method, grpc::StatusCode code) {
  rpcs_->Add({{"method", method}, {"code", CodeName(code)}}).Increment();
}

}  // namespace sparrow::server
