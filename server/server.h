// sparrowd assembled: the store, the job manager, the event hub, the three
// services, health checking, reflection and metrics, on one gRPC server. Used
// by sparrowd's main and, in-process, by the tests and benchmarks.
#ifndef SPARROW_SERVER_SERVER_H_
#define SPARROW_SERVER_SERVER_H_

#include <atomic>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "server/auth.h"
#include "server/http/http_server.h"
#include "server/jobs/event_hub.h"
#include "server/jobs/job_manager.h"
#include "server/metrics.h"
#include "server/service/upload_spool.h"
#include "server/store/store.h"

namespace prometheus {
class Exposer;
}

namespace sparrow::server {

class DatasetService;
class JobService;
class ModelService;

struct ServerOptions {
  // HOST:PORT; port 0 picks a free port (see SparrowServer::port()).
  std::string listen = "127.0.0.1:50051";
  std::string data_dir = "./sparrow-data";
  // A PostgreSQL URI (postgresql://...) for the store; empty: SQLite in
  // data_dir. The upload spool stays in data_dir either way.
  std::string store;
  std::string tokens_file;  // empty: no authentication, one tenant "default"
  std::string tls_cert, tls_key;  // PEM files; both or neither
  std::string metrics_listen;     // HOST:PORT of /metrics; empty: off
  // The dashboard and JSON API; off while http.listen is empty. TLS as gRPC's.
  http::HttpOptions http;
  JobManagerOptions jobs;
  UploadLimits uploads;
};

class SparrowServer {
 public:
  // Opens (or creates) the store in data_dir, recovers its jobs, and starts
  // serving. Errors name the flag or path at fault.
  static absl::StatusOr<std::unique_ptr<SparrowServer>> Start(
      const ServerOptions& options);
  ~SparrowServer();

  int port() const { return port_; }
  // The HTTP port (0 when HTTP is off).
  int http_port() const { return http_ != nullptr ? http_->port() : 0; }
  // "http://HOST:PORT/" of the dashboard, or "" while it is off.
  std::string dashboard_url() const;
  std::string address() const;  // host:port actually bound

  // Graceful stop: new calls get UNAVAILABLE, health turns NOT_SERVING,
  // running jobs checkpoint and stay RUNNING (they resume at the next start),
  // watchers end with UNAVAILABLE, and in-flight calls get `grace` to finish.
  // Connections without a call in flight are closed at once: an idle client
  // does not hold the shutdown for the whole grace. Idempotent.
  void Shutdown(absl::Duration grace = absl::Seconds(5));

  JobManager* jobs() { return jobs_.get(); }
  ServerMetrics* metrics() { return &metrics_; }

 private:
  SparrowServer() = default;

  // The stages of Start, in order.
  // Creates data_dir, opens the store and the upload spool, reads the tokens.
  absl::Status OpenStorage();
  // The event hub, the job manager and the three services over them.
  void CreateServices();
  // Builds the gRPC server and binds options_.listen.
  absl::Status Listen(std::shared_ptr<grpc::ServerCredentials> credentials);
  // Serves /metrics when options_.metrics_listen is set.
  absl::Status ServeMetrics();
  // Serves the dashboard when options_.http.listen is set.
  absl::Status ServeHttp();

  ServerOptions options_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<UploadSpool> uploads_;
  ServerMetrics metrics_;
  Authenticator auth_;
  std::atomic<bool> starting_{true};  // until the job manager has started
  std::atomic<bool> draining_{false};
  std::atomic<int> active_calls_{0};
  std::unique_ptr<EventHub> hub_;
  std::unique_ptr<JobManager> jobs_;
  std::unique_ptr<DatasetService> dataset_service_;
  std::unique_ptr<JobService> job_service_;
  std::unique_ptr<ModelService> model_service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  std::unique_ptr<http::HttpServer> http_;
  int port_ = 0;
  bool stopped_ = false;
};

}  // namespace sparrow::server

#endif  // SPARROW_SERVER_SERVER_H_
