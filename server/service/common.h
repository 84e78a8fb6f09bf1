// What every service needs, and the one way a unary RPC runs: authenticate,
// refuse while starting or draining, run the body, map its absl::Status to a
// gRPC status, count it.
#ifndef SPARROW_SERVER_SERVICE_COMMON_H_
#define SPARROW_SERVER_SERVICE_COMMON_H_

#include <atomic>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/server_callback.h"
#include "server/auth.h"
#include "server/jobs/event_hub.h"
#include "server/jobs/job_manager.h"
#include "server/metrics.h"
#include "server/service/upload_spool.h"
#include "server/status.h"
#include "server/store/store.h"

namespace sparrow::server {

struct ServiceDeps {
  Store* store = nullptr;
  JobManager* jobs = nullptr;
  EventHub* hub = nullptr;
  ServerMetrics* metrics = nullptr;
  const Authenticator* auth = nullptr;
  const Limits* limits = nullptr;
  // Calls are refused (UNAVAILABLE) while either is set. starting: sparrowd
  // serves before it has recovered the stored jobs, and until then the job
  // manager cannot apply a call (a Cancel would find no job to stop).
  const std::atomic<bool>* starting = nullptr;
  const std::atomic<bool>* draining = nullptr;
  // RPCs of the three services that have started and not yet completed (see
  // ActiveCall), so that a shutdown waits for them and not for idle
  // connections.
  std::atomic<int>* active_calls = nullptr;
  UploadSpool* uploads = nullptr;
};

// Counts one RPC in ServiceDeps::active_calls from construction until
// destruction; a member of every reactor, which gRPC deletes (OnDone) only
// after the call has completed.
class ActiveCall {
 public:
  explicit ActiveCall(std::atomic<int>* counter) : counter_(counter) {
    if (counter_ != nullptr) ++*counter_;
  }
  ~ActiveCall() {
    if (counter_ != nullptr) --*counter_;
  }
  ActiveCall(const ActiveCall&) = delete;
  ActiveCall& operator=(const ActiveCall&) = delete;

 private:
  std::atomic<int>* counter_;
};

// A unary reactor that counts its call as active until gRPC is done with it.
class CountedUnaryReactor final : public grpc::ServerUnaryReactor {
 public:
  explicit CountedUnaryReactor(std::atomic<int>* counter) : active_(counter) {}
  void OnDone() override { delete this; }

 private:
  ActiveCall active_;
};

// The caller's tenant, or why the call is refused (UNAUTHENTICATED,
// UNAVAILABLE while starting or draining).
absl::StatusOr<std::string> Admit(const ServiceDeps& deps,
                                  const grpc::CallbackServerContext* context);

// Clamps an AIP-158 page size: 0 -> 50, above 1000 -> 1000, negative ->
// INVALID_ARGUMENT.
absl::StatusOr<int> PageSize(int requested);

template <typename Body>
grpc::ServerUnaryReactor* RunUnary(const ServiceDeps& deps,
                                   grpc::CallbackServerContext* context,
                                   const char* method, Body&& body) {
  grpc::ServerUnaryReactor* reactor =
      new CountedUnaryReactor(deps.active_calls);
  absl::StatusOr<std::string> tenant = Admit(deps, context);
  const grpc::Status status = ToGrpcStatus(
      tenant.ok() ? std::forward<Body>(body)(*tenant) : tenant.status());
  deps.metrics->CountRpc(method, status.error_code());
  reactor->Finish(status);
  return reactor;
}

}  // namespace sparrow::server

#endif  // SPARROW_SERVER_SERVICE_COMMON_H_
