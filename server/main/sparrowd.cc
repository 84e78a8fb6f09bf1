// sparrowd: the Sparrow training service. Holds a durable queue of training
// jobs in --data-dir, runs them on --workers threads, streams their progress,
// and serves the trained models over gRPC (sparrow.v1 DatasetService,
// JobService, ModelService; grpc.health.v1 and server reflection).
//
// SIGTERM / SIGINT: stop accepting, report NOT_SERVING, checkpoint running
// jobs, exit 0; they resume at the next start.
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>

#include "CLI/CLI.hpp"
#include "core/util/eigen_blocking.h"
#include "server/server.h"
#include "server/worker/worker.h"
#include "spdlog/spdlog.h"
#include "translate/malloc_arenas.h"

namespace {

// sparrowd's flags: the server's options, and the flags given in other units
// than the options hold them in.
struct Flags {
  sparrow::server::ServerOptions options;
  double flush_ms =
      absl::ToDoubleMilliseconds(options.jobs.event_flush_interval);
  double checkpoint_min_seconds = 1.0;
  double min_event_ms = 2.0;
  double lease_renew_seconds = 5.0;
  double lease_expiry_seconds = 30.0;
  std::string log_level = "info";
};

// Where sparrowd serves, its store, its workers and their checkpoints and
// events.
void AddServiceFlags(CLI::App* app, Flags* f) {
  app->add_option("--listen", f->options.listen,
                  "HOST:PORT to serve gRPC on (port 0 picks a free port)")
      ->capture_default_str();
  app->add_option("--data-dir", f->options.data_dir,
                  "Directory of the store (sparrow.db, SQLite in WAL mode) "
                  "and of unfinished uploads; created when missing")
      ->capture_default_str();
  app->add_option("--store", f->options.store,
                  "Keep the store in PostgreSQL instead of --data-dir: a libpq "
                  "URI, e.g. postgresql://sparrow@db.example.com/sparrow (the "
                  "password from ~/.pgpass or PGPASSWORD); any number of "
                  "sparrowd replicas may share one database");
  app->add_option("--replica-name", f->options.jobs.replica_name,
                  "This replica's name in the jobs it runs (Job.replica); "
                  "default: <host name>-<pid>");
  app->add_option("--lease-renew-seconds", f->lease_renew_seconds,
                  "With --store postgresql: a replica renews the lease of each "
                  "job it runs this often")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  app->add_option("--lease-expiry-seconds", f->lease_expiry_seconds,
                  "With --store postgresql: a job whose lease was not renewed "
                  "for this long is resumed by another replica from its "
                  "checkpoint (keep it several times --lease-renew-seconds)")
      ->check(CLI::Range(0.5, 86400.0))
      ->capture_default_str();
  app->add_option("--workers", f->options.jobs.workers,
                  "Jobs run at the same time (default: the number of cores)")
      ->check(CLI::Range(1, 1024));
  app->add_option("--checkpoint-every", f->options.jobs.checkpoint_every,
                  "Iterations between checkpoints of a running job (0 = only "
                  "at shutdown)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app->add_option("--checkpoint-min-seconds", f->checkpoint_min_seconds,
                  "... but at most once per this many seconds (0 = every "
                  "--checkpoint-every iterations)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app->add_option("--min-event-interval-ms", f->min_event_ms,
                  "Iteration events closer together than this are thinned out "
                  "(the last of a run is always kept); 0 = keep every one")
      ->check(CLI::Range(0.0, 60000.0))
      ->capture_default_str();
  app->add_option("--event-flush-ms", f->flush_ms,
                  "Progress events are stored and published in batches at "
                  "most this many ms apart")
      ->check(CLI::Range(0.0, 60000.0))
      ->capture_default_str();
  app->add_option("--tokens-file", f->options.tokens_file,
                  "File of 'TOKEN TENANT' lines; clients then need "
                  "'authorization: Bearer TOKEN' and see only their tenant's "
                  "data. Without it: no authentication, one tenant");
  app->add_option("--tls-cert", f->options.tls_cert,
                  "PEM certificate chain: serve TLS (with --tls-key)");
  app->add_option("--tls-key", f->options.tls_key,
                  "PEM private key for --tls-cert");
  app->add_option("--metrics-listen", f->options.metrics_listen,
                  "HOST:PORT to serve Prometheus /metrics on (off when empty)");
  sparrow::server::http::HttpOptions& http = f->options.http;
  http.listen = "127.0.0.1:8080";
  app->add_option("--http-listen", http.listen,
                  "HOST:PORT of the dashboard and JSON API (port 0 picks a "
                  "free port; empty turns HTTP off)")
      ->capture_default_str();
  app->add_option("--http-threads", http.threads,
                  "Threads serving HTTP requests other than event streams")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app->add_option("--http-max-streams", http.max_streams,
                  "Event streams (SSE) open at once; more get 503")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app->add_option("--http-max-sessions", http.max_sessions,
                  "Browser login sessions kept; the oldest ends first")
      ->check(CLI::Range(1, 10000000))
      ->capture_default_str();
}

// What a tenant, a job and an upload may use.
void AddLimitFlags(CLI::App* app, Flags* f) {
  sparrow::server::Limits& limits = f->options.jobs.limits;
  app->add_option("--max-upload-bytes", limits.max_upload_bytes,
                  "Largest dataset upload")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app->add_option("--max-upload-bytes-in-flight",
                  f->options.uploads.max_in_flight,
                  "Bytes of all unfinished uploads together (spooled under "
                  "--data-dir until complete)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app->add_option("--max-upload-bytes-in-flight-per-tenant",
                  f->options.uploads.max_in_flight_per_tenant,
                  "Bytes of one tenant's unfinished uploads")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app->add_option("--max-message-bytes", limits.max_message_bytes,
                  "Largest single gRPC message (upload chunk, prediction)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app->add_option("--max-queued-jobs", limits.max_queued_jobs,
                  "Queue capacity over all tenants")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app->add_option("--max-queued-per-tenant", limits.max_queued_per_tenant,
                  "Queued jobs one tenant may have")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app->add_option("--max-model-params", limits.max_model_params,
                  "Largest model (trainable parameters) a job may ask for")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app->add_option("--max-job-memory", limits.max_job_memory,
                  "Memory one job may use, in bytes: a job estimated to need "
                  "more is refused at submission, and its worker process is "
                  "limited to it")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app->add_option("--max-total-job-memory", limits.max_total_job_memory,
                  "Memory all running jobs together may use, in bytes (by "
                  "their estimates); a job waits in the queue until it fits. "
                  "0 = 3/4 of this machine's memory")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app->add_option("--max-worker-crashes", f->options.jobs.max_worker_crashes,
                  "A job whose worker process dies this many times (a crash, "
                  "or the kernel's OOM killer) fails instead of resuming")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app->add_option("--job-deadline", limits.job_deadline_seconds,
                  "Wall-clock seconds one job attempt may run (0 = no limit)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
}

// Serves until SIGTERM or SIGINT, then drains.
int Serve(const sparrow::server::ServerOptions& o) {
  // Block the stop signals in every thread; the main thread waits for them.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  auto server = sparrow::server::SparrowServer::Start(o);
  if (!server.ok()) {
    std::cerr << "sparrowd: error: " << server.status().message() << "\n";
    return 2;
  }
  std::cout << "sparrowd: listening on " << (*server)->address() << std::endl;
  if ((*server)->http_port() != 0) {
    std::cout << "sparrowd: dashboard on " << (*server)->dashboard_url()
              << std::endl;
  }
  int signal = 0;
  sigwait(&stop, &signal);
  spdlog::info(
      "received {}: draining (running jobs checkpoint and resume at "
      "the next start)",
      signal == SIGTERM ? "SIGTERM" : "SIGINT");
  (*server)->Shutdown(absl::Seconds(5));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Both before any thread starts.
  sparrow::translate::UseOneMallocArena();
  sparrow::core::PinEigenBlocking();  // results independent of the CPU's caches
  // A job's worker process (server/worker/worker.h), started by sparrowd.
  if (argc == 3 && std::string(argv[1]) == sparrow::server::kWorkerFlag) {
    return sparrow::server::RunWorker(0, 1, std::atoi(argv[2]));
  }
  Flags f;
  f.options.jobs.workers =
      std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  CLI::App app{
      "sparrowd: the Sparrow training service (gRPC, and the dashboard over "
      "HTTP).\n\n"
      "Example:\n"
      "  sparrowd --listen 127.0.0.1:50051 --data-dir ./sparrow-data "
      "--workers 2\n"
      "  sparrowd --listen 0.0.0.0:50051 --tokens-file tokens.txt "
      "--tls-cert server.pem --tls-key server.key --metrics-listen "
      "0.0.0.0:9464\n"
      "  sparrowd --store postgresql://sparrow@db/sparrow --workers 1 "
      "--replica-name sparrowd-a   # one of several replicas\n"};
  AddServiceFlags(&app, &f);
  AddLimitFlags(&app, &f);
  app.add_option("--log-level", f.log_level,
                 "trace, debug, info, warn, error or off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (f.lease_expiry_seconds < 2 * f.lease_renew_seconds) {
    std::cerr << "--lease-expiry-seconds (" << f.lease_expiry_seconds
              << ") must be at least twice --lease-renew-seconds ("
              << f.lease_renew_seconds
              << "), or one late renewal hands a running job to another "
                 "replica\n";
    return 2;
  }
  sparrow::server::ServerOptions& o = f.options;
  o.jobs.event_flush_interval = absl::Milliseconds(f.flush_ms);
  o.jobs.checkpoint_min_interval = absl::Seconds(f.checkpoint_min_seconds);
  o.jobs.min_event_interval = absl::Milliseconds(f.min_event_ms);
  o.jobs.lease_renew = absl::Seconds(f.lease_renew_seconds);
  o.jobs.lease_expiry = absl::Seconds(f.lease_expiry_seconds);
  spdlog::set_level(spdlog::level::from_str(f.log_level));
  return Serve(o);
}
