#include "server/server.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "core/util/status_macros.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"
#include "prometheus/exposer.h"
#include "server/service/dataset_service.h"
#include "server/service/job_service.h"
#include "server/service/model_service.h"
#include "spdlog/spdlog.h"

namespace sparrow::server {
namespace {

absl::StatusOr<std::string> ReadPem(const std::string& path, const char* flag) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("cannot read ", flag, " '", path, "'"));
  }
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The server's credentials: TLS with --tls-cert and --tls-key, else none.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> Credentials(
    const ServerOptions& options) {
  std::shared_ptr<grpc::ServerCredentials> credentials =
      grpc::InsecureServerCredentials();
  if (options.tls_cert.empty() != options.tls_key.empty()) {
    return absl::InvalidArgumentError(
        "--tls-cert and --tls-key go together: pass both or neither");
  }
  if (!options.tls_cert.empty()) {
    grpc::SslServerCredentialsOptions ssl;
    grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
    SPARROW_ASSIGN_OR_RETURN(pair.cert_chain,
                             ReadPem(options.tls_cert, "--tls-cert"));
    SPARROW_ASSIGN_OR_RETURN(pair.private_key,
                             ReadPem(options.tls_key, "--tls-key"));
    ssl.pem_key_cert_pairs.push_back(pair);
    credentials = grpc::SslServerCredentials(ssl);
  }
  return credentials;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SparrowServer>> SparrowServer::Start(
    const ServerOptions& options) {
  std::unique_ptr<SparrowServer> server(new SparrowServer());
  server->options_ = options;
  SPARROW_RETURN_IF_ERROR(server->OpenStorage());
  SPARROW_ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> credentials,
                           Credentials(options));
  server->CreateServices();
  SPARROW_RETURN_IF_ERROR(server->Listen(credentials));
  // Calls wait (UNAVAILABLE) for the recovery: before it the job manager
  // knows no stored job, so a Cancel would be acknowledged and forgotten and
  // a Submit could be queued twice (by itself and by the recovery).
  SPARROW_RETURN_IF_ERROR(server->jobs_->Start());
  server->starting_ = false;
  SPARROW_RETURN_IF_ERROR(server->ServeMetrics());
  SPARROW_RETURN_IF_ERROR(server->ServeHttp());
  server->server_->GetHealthCheckService()->SetServingStatus(true);
  spdlog::info("sparrowd listening on {} (data in {}, {} workers{})",
               server->address(),
               options.store.empty() ? options.data_dir
                                     : std::string("PostgreSQL, --store"),
               options.jobs.workers,
               server->auth_.enabled() ? ", bearer tokens required" : "");
  return server;
}

absl::Status SparrowServer::OpenStorage() {
  const ServerOptions& options = options_;
  std::error_code ec;
  std::filesystem::create_directories(options.data_dir, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("--data-dir '", options.data_dir,
                     "' cannot be created: ", ec.message()));
  }
  if (options.store.empty()) {
    SPARROW_ASSIGN_OR_RETURN(
        store_,
        OpenSqliteStore(
            (std::filesystem::path(options.data_dir) / "sparrow.db").string()));
  } else if (absl::StartsWith(options.store, "postgresql://") ||
             absl::StartsWith(options.store, "postgres://")) {
    SPARROW_ASSIGN_OR_RETURN(store_, OpenPostgresStore(options.store));
  } else {
    return absl::InvalidArgumentError(
        "--store must be a PostgreSQL URI (postgresql://USER@HOST/DB); leave "
        "it out for the SQLite store in --data-dir");
  }
  SPARROW_ASSIGN_OR_RETURN(
      uploads_,
      UploadSpool::Open(
          (std::filesystem::path(options.data_dir) / "uploads").string(),
          options.uploads));
  if (!options.tokens_file.empty()) {
    SPARROW_ASSIGN_OR_RETURN(auth_,
                             Authenticator::FromFile(options.tokens_file));
  }
  return absl::OkStatus();
}

void SparrowServer::CreateServices() {
  hub_ = std::make_unique<EventHub>();
  jobs_ = std::make_unique<JobManager>(store_.get(), hub_.get(), &metrics_,
                                       options_.jobs);
  ServiceDeps deps;
  deps.store = store_.get();
  deps.jobs = jobs_.get();
  deps.hub = hub_.get();
  deps.metrics = &metrics_;
  deps.auth = &auth_;
  deps.limits = &options_.jobs.limits;
  deps.starting = &starting_;
  deps.draining = &draining_;
  deps.active_calls = &active_calls_;
  deps.uploads = uploads_.get();
  dataset_service_ = std::make_unique<DatasetService>(deps);
  job_service_ = std::make_unique<JobService>(deps);
  model_service_ = std::make_unique<ModelService>(deps);
}

absl::Status SparrowServer::Listen(
    std::shared_ptr<grpc::ServerCredentials> credentials) {
  const ServerOptions& options = options_;
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen, credentials, &port_);
  // A second sparrowd on the same port must fail to start, not split the
  // clients between two stores (gRPC sets SO_REUSEPORT by default).
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(options.jobs.limits.max_message_bytes);
  builder.SetMaxSendMessageSize(options.jobs.limits.max_message_bytes);
  // Long Watch streams: keepalive pings every 30 s, and clients may ping as
  // often as every 10 s without data (grpc's default minimum is 5 min, which
  // closes clients with "too_many_pings").
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 30000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(
      GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  builder.RegisterService(dataset_service_.get());
  builder.RegisterService(job_service_.get());
  builder.RegisterService(model_service_.get());
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port_ == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on --listen ", options.listen,
                     " (address in use, or not HOST:PORT?)"));
  }
  return absl::OkStatus();
}

absl::Status SparrowServer::ServeMetrics() {
  if (options_.metrics_listen.empty()) return absl::OkStatus();
  try {
    exposer_ = std::make_unique<prometheus::Exposer>(options_.metrics_listen);
    exposer_->RegisterCollectable(metrics_.registry());
  } catch (const std::exception& e) {
    Shutdown(absl::ZeroDuration());
    return absl::UnavailableError(
        absl::StrCat("cannot serve /metrics on --metrics-listen ",
                     options_.metrics_listen, ": ", e.what()));
  }
  return absl::OkStatus();
}

absl::Status SparrowServer::ServeHttp() {
  if (options_.http.listen.empty()) return absl::OkStatus();
  http::HttpOptions http = options_.http;
  http.tls_cert = options_.tls_cert;
  http.tls_key = options_.tls_key;
  auto server = http::HttpServer::Start(
      http, {store_.get(), jobs_.get(), hub_.get(), &auth_});
  if (!server.ok()) {
    Shutdown(absl::ZeroDuration());
    return server.status();
  }
  http_ = *std::move(server);
  spdlog::info("dashboard on {}", dashboard_url());
  return absl::OkStatus();
}

std::string SparrowServer::dashboard_url() const {
  if (http_ == nullptr) return "";
  absl::string_view listen = options_.http.listen;
  return absl::StrCat(options_.tls_cert.empty() ? "http" : "https", "://",
                      listen.substr(0, listen.rfind(':')), ":", http_->port(),
                      "/");
}

std::string SparrowServer::address() const {
  absl::string_view listen = options_.listen;
  const size_t colon = listen.rfind(':');
  return absl::StrCat(listen.substr(0, colon), ":", port_);
}

void SparrowServer::Shutdown(absl::Duration grace) {
  if (stopped_) return;
  stopped_ = true;
  draining_ = true;
  if (http_ != nullptr) http_->Stop();
  if (server_ != nullptr) {
    server_->GetHealthCheckService()->SetServingStatus(false);
  }
  if (jobs_ != nullptr) jobs_->Shutdown();
  if (hub_ != nullptr) hub_->Shutdown();
  if (server_ != nullptr) {
    // gRPC's Shutdown(deadline) also waits, up to the deadline, for clients
    // to close their connections, which idle ones never do. So wait for our
    // own calls only, then shut down with no further grace.
    const absl::Time deadline = absl::Now() + grace;
    while (active_calls_.load() > 0 && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(5));
    }
    server_->Shutdown(std::chrono::system_clock::now());
    server_->Wait();
  }
  exposer_.reset();
  spdlog::info("sparrowd stopped");
}

SparrowServer::~SparrowServer() { Shutdown(absl::ZeroDuration()); }

}  // namespace sparrow::server
