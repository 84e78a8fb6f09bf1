// sparrow::client::Client — the C++ client of sparrowd.
//
//   auto client = sparrow::client::Client::Connect({.address =
//   "127.0.0.1:50051"}); auto dataset = (*client)->Upload(csv_bytes,
//   "tanks.csv"); spec.mutable_data()->set_dataset_id(dataset->id()); auto job
//   = (*client)->Submit(spec); auto done = (*client)->Watch(job->id(), 0,
//   [](const v1::ProgressEvent& e) {
//     std::cout << e.iteration() << " " << e.loss() << "\n";
//   });
//   auto model = (*client)->GetModel(job->id());
//
// Every call returns absl::Status / absl::StatusOr carrying the server's code
// and message. Every unary call has a deadline (ClientOptions::deadline).
// Calls are retried only on UNAVAILABLE, with exponential backoff; Submit is
// made safe to retry with a request_id. Watch reconnects after a dropped
// connection or a server restart and resumes from the last seq it delivered,
// so the callback sees every event exactly once. Upload streams the bytes in
// chunks with offsets and a SHA-256, and skips the transfer when the server
// already has them.
//
// A Client is thread-safe; calls may run concurrently.
#ifndef SPARROW_CLIENT_LIB_CLIENT_H_
#define SPARROW_CLIENT_LIB_CLIENT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "grpcpp/channel.h"
#include "sparrow/v1/datasets.grpc.pb.h"
#include "sparrow/v1/jobs.grpc.pb.h"
#include "sparrow/v1/model_service.grpc.pb.h"

namespace sparrow::client {

struct ClientOptions {
  // HOST:PORT of sparrowd (the CLI reads --server or SPARROW_ADDR).
  std::string address = "127.0.0.1:50051";
  // Bearer token (--token or SPARROW_TOKEN); empty = none.
  std::string token;
  // TLS: when tls is set, the server's certificate is checked against
  // tls_ca_file (PEM), or against the system roots when that is empty.
  bool tls = false;
  std::string tls_ca_file;
  // Deadline of each unary call attempt (uploads get 10x).
  absl::Duration deadline = absl::Seconds(30);
  // Attempts of a call answered UNAVAILABLE (1 = no retries) and the backoff
  // between them: initial, doubling, capped.
  int max_attempts = 5;
  absl::Duration initial_backoff = absl::Milliseconds(200);
  absl::Duration max_backoff = absl::Seconds(5);
  // Upload chunk size.
  int64_t chunk_bytes = int64_t{1} << 20;
  // Watch: how long to keep reconnecting to an unreachable server before
  // giving up with UNAVAILABLE.
  absl::Duration watch_reconnect_for = absl::Seconds(120);
};

// gRPC status -> absl::Status (same code and message).
absl::Status FromGrpc(const grpc::Status& status);

class Client {
 public:
  // Creates the channel; does not wait for the server (the first call does).
  static absl::StatusOr<std::unique_ptr<Client>> Connect(
      const ClientOptions& options);

  // ---- datasets ----
  // Uploads the bytes (or finds them already on the server: the id is their
  // SHA-256) and returns the dataset.
  absl::StatusOr<v1::Dataset> Upload(absl::string_view bytes,
                                     const std::string& name,
                                     bool* already_existed = nullptr);
  absl::StatusOr<v1::Dataset> GetDataset(const std::string& id);
  absl::StatusOr<v1::ListDatasetsResponse> ListDatasets(
      int page_size = 0, const std::string& page_token = "");
  absl::Status DeleteDataset(const std::string& id);

  // ---- jobs ----
  // With an empty request_id the client makes one, so that its own retries
  // never submit twice.
  absl::StatusOr<v1::Job> Submit(const v1::JobSpec& spec,
                                 std::string request_id = "", int priority = 0);
  absl::StatusOr<v1::Job> GetJob(const std::string& id);
  absl::StatusOr<v1::ListJobsResponse> ListJobs(
      v1::Job::State state = v1::Job::STATE_UNSPECIFIED, int page_size = 0,
      const std::string& page_token = "");
  absl::StatusOr<v1::Job> CancelJob(const std::string& id);
  // Delivers the job's events with seq > after_seq, in order and each once,
  // until the final state's event; then returns the finished job. Returning
  // false from on_event stops watching early (the job as last seen is
  // returned). Reconnects on UNAVAILABLE / dropped streams.
  absl::StatusOr<v1::Job> Watch(
      const std::string& job_id, int64_t after_seq,
      const std::function<bool(const v1::ProgressEvent&)>& on_event);

  // ---- models ----
  absl::StatusOr<v1::TrainedModel> GetModel(const std::string& job_id);
  absl::StatusOr<v1::ExportModelResponse> ExportModel(
      const std::string& job_id, v1::ExportModelRequest::Format format);
  absl::StatusOr<v1::PredictResponse> Predict(
      const v1::PredictRequest& request);

  // ---- server ----
  // grpc.health.v1 Check: "SERVING", "NOT_SERVING", ...
  absl::StatusOr<std::string> Health();

  const ClientOptions& options() const { return options_; }

 private:
  explicit Client(const ClientOptions& options,
                  std::shared_ptr<grpc::Channel> channel);
  std::unique_ptr<grpc::ClientContext> Context(absl::Duration deadline) const;
  std::unique_ptr<grpc::ClientWriter<v1::UploadDatasetRequest>> UploadWriter(
      grpc::ClientContext* context, grpc::ByteBuffer* answer) const;
  // Runs `call` (one attempt, given a fresh context) until it is not
  // UNAVAILABLE or the attempts run out.
  absl::Status WithRetries(
      const std::function<grpc::Status(grpc::ClientContext*)>& call,
      absl::Duration deadline) const;
  // Between Watch reconnects: up to `backoff`, less if sparrowd is back.
  void WaitBeforeReconnect(absl::Duration backoff) const;

  ClientOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::DatasetService::Stub> datasets_;
  std::unique_ptr<v1::JobService::Stub> jobs_;
  std::unique_ptr<v1::ModelService::Stub> models_;
};

}  // namespace sparrow::client

#endif  // SPARROW_CLIENT_LIB_CLIENT_H_
