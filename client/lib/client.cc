#include "client/lib/client.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/util/status_macros.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/byte_buffer.h"
#include "sparrow/v1/job_state.h"
#include "translate/sha256.h"
#include "translate/text.h"

namespace sparrow::client {
namespace {

// Refuses a HOST:PORT that gRPC would misread (a port above 65535 wraps:
// 117737 reaches port 52201, another server) or only fail to resolve after
// its retries. Targets with a scheme ("unix:PATH", "dns:///HOST:PORT") pass
// as they are.
absl::Status CheckAddress(absl::string_view address) {
  const auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("server address '", address, "' ", why,
                     "; use HOST:PORT, e.g. 127.0.0.1:50051 or [::1]:50051"));
  };
  const size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos) return bad("has no port");
  const absl::string_view host = address.substr(0, colon);
  const absl::string_view port = address.substr(colon + 1);
  if (absl::StartsWith(address, "unix:") ||
      absl::StartsWith(address, "unix-abstract:") ||
      absl::StrContains(address, ":///")) {
    return absl::OkStatus();
  }
  if (host.empty()) return bad("has no host");
  if (host.front() == '[' ? host.back() != ']'
                          : host.find_first_of("[]") != host.npos) {
    return bad("has unbalanced brackets (an IPv6 host is written [::1])");
  }
  if (host.front() != '[' && absl::StrContains(host, ':')) {
    return bad("has an IPv6 host without brackets");
  }
  int value = 0;
  if (port.empty() || port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), absl::ascii_isdigit) ||
      !absl::SimpleAtoi(port, &value) || value < 1 || value > 65535) {
    return bad("has no port from 1 to 65535");
  }
  return absl::OkStatus();
}

absl::StatusCode ToAbslCode(grpc::StatusCode code) {
  // gRPC and absl share the canonical numbering (google.rpc.Code).
  return static_cast<absl::StatusCode>(static_cast<int>(code));
}

std::string RandomRequestId() {
  static std::mutex mu;
  static std::mt19937_64 rng(std::random_device{}());
  std::lock_guard<std::mutex> lock(mu);
  return absl::StrFormat("req-%016x%016x", rng(), rng());
}

absl::Status UnreadableAnswer() {
  return absl::InternalError(
      "sparrowd sent an answer this client cannot read (a text field that is "
      "not valid UTF-8, or a different protocol version); report it to the "
      "server's operator");
}

absl::Status ParseAnswer(const grpc::ByteBuffer& answer,
                         google::protobuf::Message* message) {
  std::vector<grpc::Slice> slices;
  if (!answer.Dump(&slices).ok()) return UnreadableAnswer();
  std::string bytes;
  for (const grpc::Slice& slice : slices) {
    bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  if (!message->ParseFromString(bytes)) return UnreadableAnswer();
  return absl::OkStatus();
}

}  // namespace

absl::Status FromGrpc(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  // What gRPC's blocking unary call reports when the answer arrived but did
  // not parse.
  if (status.error_code() == grpc::StatusCode::UNIMPLEMENTED &&
      status.error_message() == "No message returned for unary request") {
    return UnreadableAnswer();
  }
  return absl::Status(ToAbslCode(status.error_code()), status.error_message());
}

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(
    const ClientOptions& options) {
  if (options.address.empty()) {
    return absl::InvalidArgumentError(
        "no server address: pass --server HOST:PORT or set SPARROW_ADDR");
  }
  SPARROW_RETURN_IF_ERROR(CheckAddress(options.address));
  if (options.max_attempts < 1) {
    return absl::InvalidArgumentError("max_attempts must be at least 1");
  }
  if (options.chunk_bytes < 1) {
    return absl::InvalidArgumentError("chunk_bytes must be positive");
  }
  std::shared_ptr<grpc::ChannelCredentials> credentials =
      grpc::InsecureChannelCredentials();
  if (options.tls) {
    grpc::SslCredentialsOptions ssl;
    if (!options.tls_ca_file.empty()) {
      std::ifstream in(options.tls_ca_file);
      if (!in) {
        return absl::NotFoundError(absl::StrCat(
            "cannot read the CA certificate '", options.tls_ca_file, "'"));
      }
      std::ostringstream pem;
      pem << in.rdbuf();
      ssl.pem_root_certs = pem.str();
    }
    credentials = grpc::SslCredentials(ssl);
  }
  grpc::ChannelArguments args;
  // Agree with sparrowd's keepalive policy (it permits pings every 10 s):
  // long Watch streams survive idle NATs without "too_many_pings".
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 30000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetMaxReceiveMessageSize(-1);
  // Reconnect quickly after a server restart.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 200);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  auto channel = grpc::CreateCustomChannel(options.address, credentials, args);
  return std::unique_ptr<Client>(new Client(options, std::move(channel)));
}

Client::Client(const ClientOptions& options,
               std::shared_ptr<grpc::Channel> channel)
    : options_(options),
      channel_(std::move(channel)),
      datasets_(v1::DatasetService::NewStub(channel_)),
      jobs_(v1::JobService::NewStub(channel_)),
      models_(v1::ModelService::NewStub(channel_)) {}

std::unique_ptr<grpc::ClientContext> Client::Context(
    absl::Duration deadline) const {
  auto context = std::make_unique<grpc::ClientContext>();
  if (deadline != absl::InfiniteDuration()) {
    context->set_deadline(std::chrono::system_clock::now() +
                          absl::ToChronoMilliseconds(deadline));
  }
  if (!options_.token.empty()) {
    context->AddMetadata("authorization", "Bearer " + options_.token);
  }
  return context;
}

absl::Status Client::WithRetries(
    const std::function<grpc::Status(grpc::ClientContext*)>& call,
    absl::Duration deadline) const {
  absl::Duration backoff = options_.initial_backoff;
  grpc::Status status;
  for (int attempt = 1;; ++attempt) {
    auto context = Context(deadline);
    status = call(context.get());
    if (status.error_code() != grpc::StatusCode::UNAVAILABLE ||
        attempt >= options_.max_attempts) {
      break;
    }
    std::this_thread::sleep_for(absl::ToChronoMilliseconds(backoff));
    backoff = std::min(2 * backoff, options_.max_backoff);
  }
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE) {
    return absl::UnavailableError(
        absl::StrCat("cannot reach sparrowd at ", options_.address, ": ",
                     status.error_message(),
                     " (is it running? check --server / SPARROW_ADDR)"));
  }
  if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    return absl::DeadlineExceededError(absl::StrCat(
        "sparrowd at ", options_.address, " did not answer within ",
        absl::FormatDuration(deadline)));
  }
  return FromGrpc(status);
}

absl::StatusOr<v1::Dataset> Client::Upload(absl::string_view bytes,
                                           const std::string& name,
                                           bool* already_existed) {
  const std::string sha = translate::Sha256Hex(bytes);
  if (already_existed != nullptr) *already_existed = false;
  // Content-addressed: skip the transfer when the server has these bytes.
  auto existing = GetDataset(sha);
  if (existing.ok()) {
    if (already_existed != nullptr) *already_existed = true;
    return existing;
  }
  if (!absl::IsNotFound(existing.status())) return existing.status();
  // The name is a display name taken from a file name, which is bytes; a
  // proto string field must be UTF-8.
  const std::string display_name = translate::ToValidUtf8(name);
  grpc::ByteBuffer answer;
  SPARROW_RETURN_IF_ERROR(WithRetries(
      [&](grpc::ClientContext* context) {
        auto writer = UploadWriter(context, &answer);
        const int64_t size = static_cast<int64_t>(bytes.size());
        int64_t offset = 0;
        do {
          const int64_t n = std::min(options_.chunk_bytes, size - offset);
          v1::UploadDatasetRequest chunk;
          if (offset == 0) chunk.set_name(display_name);
          chunk.set_offset(offset);
          chunk.set_data(bytes.data() + offset, static_cast<size_t>(n));
          offset += n;
          if (offset == size) {
            chunk.set_finish(true);
            chunk.set_sha256(sha);
          }
          if (!writer->Write(chunk)) break;  // the server ended the call
        } while (offset < size);
        writer->WritesDone();
        return writer->Finish();
      },
      10 * options_.deadline));
  v1::UploadDatasetResponse response;
  SPARROW_RETURN_IF_ERROR(ParseAnswer(answer, &response));
  if (already_existed != nullptr) {
    *already_existed = response.already_existed();
  }
  return response.dataset();
}

// gRPC 1.51's typed ClientWriter aborts the process (GPR_CODEGEN_ASSERT in
// ClientWriter::Finish) when the server's answer does not parse, e.g. a
// string field that is not UTF-8. Reading the answer as raw bytes through the
// same factory the generated stub uses, and parsing it here, turns that into
// an error.
std::unique_ptr<grpc::ClientWriter<v1::UploadDatasetRequest>>
Client::UploadWriter(grpc::ClientContext* context,
                     grpc::ByteBuffer* answer) const {
  static const std::string method =
      absl::StrCat("/", v1::DatasetService::service_full_name(), "/Upload");
  const grpc::internal::RpcMethod rpc(
      method.c_str(), grpc::internal::RpcMethod::CLIENT_STREAMING, channel_);
  return std::unique_ptr<grpc::ClientWriter<v1::UploadDatasetRequest>>(
      grpc::internal::ClientWriterFactory<v1::UploadDatasetRequest>::Create(
          channel_.get(), rpc, context, answer));
}

absl::StatusOr<v1::Dataset> Client::GetDataset(const std::string& id) {
  v1::GetDatasetRequest request;
  request.set_id(id);
  SPARROW_RETURN_IF_ERROR(translate::CheckUtf8Fields(request, "request"));
  v1::Dataset response;
  SPARROW_RETURN_IF_ERROR(WithRetries(
      [&](grpc::ClientContext* c) {
        return datasets_->Get(c, request, &response);
      },
      options_.deadline));
  return response;
}

absl::StatusOr<v1::ListDatasetsResponse> Client::ListDatasets(
    int page_size, const std::string& page_token) {
  v1::ListDatasetsRequest request;
  request.set_page_size(page_size);
  request.set_page_token(page_token);
  SPARROW_RETURN_IF_ERROR(translate::CheckUtf8Fields(request, "request"));
  v1::ListDatasetsResponse response;
  SPARROW_RETURN_IF_ERROR(WithRetries(
      [&](grpc::ClientContext* c) {
        return datasets_->List(c, request, &response);
      },
      options_.deadline));
  return response;
}

absl::Status Client::DeleteDataset(const std::string& id) {
  v1::DeleteDatasetRequest request;
  request.set_id(id);
  SPARROW_RETURN_IF_ERROR(translate::CheckUtf8Fields(request, "request"));
  v1::DeleteDatasetResponse response;
  return WithRetries(
      [&](grpc::ClientContext* c) {
        return datasets_->Delete(c, request, &response);
      },
      options_.deadline);
}

absl::StatusOr<v1::Job> Client::Submit(const v1::JobSpec& spec,
                                       std::string request_id, int priority) {
  v1::SubmitJobRequest request;
  *request.mutable_spec() = spec;
  request.set_request_id(request_id.empty() ? RandomRequestId()
                                            : std::move(request_id));
  request.set_priority(priority);
  SPARROW_RETURN_IF_ERROR(translate::CheckUtf8Fields(request, "request"));
  v1::Job response;
  SPARROW_RETURN_IF_ERROR(WithRetries(
      [&](grpc::ClientContext* c) {
        return jobs_->Submit(c, request, &response);
      },
      options_.deadline));
  return response;
}

absl::StatusOr<v1::Job> Client::GetJob(const std::string& id) {
  v1::GetJobRequest request;
  request.set_id(id);
  SPARROW_RETURN_IF_ERROR(translate::CheckUtf8Fields(request, "request"));
  v1::Job response;
  SPARROW_RETURN_IF_ERROR(WithRetries(
      [&](grpc::ClientContext* c) { return jobs_->Get(c, request, &response); },
      options_.deadline));
  return response;
}

absl::StatusOr<v1::ListJobsResponse> Client::ListJobs(
    v1::Job::State state, int page_size, const std::string& page_token) {
  v1::ListJobsRequest request;
  request.set_state(state);
  request.set_page_size(page_size);
  request.set_page_token(page_token);
  SPARROW_RETURN_IF_ERROR(translate::CheckUtf8Fields(request, "request"));
  v1::ListJobsResponse response;
  SPARROW_RETURN_IF_ERROR(WithRetries(
      [&](grpc::ClientContext* c) {
        return jobs_->List(c, request, &response);
      },
      options_.deadline));
  return response;
}

absl::StatusOr<v1::Job> Client::CancelJob(const std::string& id) {
  v1::CancelJobRequest request;
  request.set_id(id);
  SPARROW_RETURN_IF_ERROR(translate::CheckUtf8Fields(request, "request"));
  v1::Job response;
  SPARROW_RETURN_IF_ERROR(WithRetries(
      [&](grpc::ClientContext* c) {
        return jobs_->Cancel(c, request, &response);
      },
      options_.deadline));
  return response;
}

absl::StatusOr<v1::Job> Client::Watch(
    const std::string& job_id, int64_t after_seq,
    const std::function<bool(const v1::ProgressEvent&)>& on_event) {
  SPARROW_RETURN_IF_ERROR(translate::CheckUtf8(job_id, "the job id"));
  int64_t last = after_seq;
  absl::Time unreachable_since = absl::InfiniteFuture();
  absl::Duration backoff = options_.initial_backoff;
  while (true) {
    v1::WatchJobRequest request;
    request.set_id(job_id);
    request.set_after_seq(last);
    // No deadline: a watch lasts as long as the job. Keepalive pings detect
    // a dead connection.
    auto context = Context(absl::InfiniteDuration());
    auto reader = jobs_->Watch(context.get(), request);
    v1::ProgressEvent event;
    bool final_seen = false;
    bool stopped = false;
    while (reader->Read(&event)) {
      unreachable_since = absl::InfiniteFuture();
      backoff = options_.initial_backoff;
      if (event.seq() <= last) continue;  // never deliver twice
      last = event.seq();
      if (v1::IsFinalEvent(event)) final_seen = true;
      if (!on_event(event)) {
        stopped = true;
        context->TryCancel();
        break;
      }
    }
    const grpc::Status status = reader->Finish();
    if (stopped || final_seen) return GetJob(job_id);
    if (status.ok()) return GetJob(job_id);  // ended after the final event
    if (status.error_code() != grpc::StatusCode::UNAVAILABLE &&
        status.error_code() != grpc::StatusCode::CANCELLED &&
        status.error_code() != grpc::StatusCode::INTERNAL &&
        status.error_code() != grpc::StatusCode::UNKNOWN) {
      return FromGrpc(status);
    }
    // The connection dropped or the server is restarting: reconnect and
    // resume after the last seq delivered.
    const absl::Time now = absl::Now();
    if (unreachable_since == absl::InfiniteFuture()) unreachable_since = now;
    if (now - unreachable_since > options_.watch_reconnect_for) {
      return absl::UnavailableError(absl::StrCat(
          "lost sparrowd at ", options_.address, " for more than ",
          absl::FormatDuration(options_.watch_reconnect_for),
          " while watching job ", job_id, " (last seq ", last,
          "); resume later with: sparrow watch ", job_id, " --after ", last));
    }
    WaitBeforeReconnect(backoff);
    backoff = std::min(2 * backoff, options_.max_backoff);
  }
}

void Client::WaitBeforeReconnect(absl::Duration backoff) const {
  // A live connection (a draining server answered UNAVAILABLE): back off in
  // full. A lost one: wait at most `backoff`, but go on as soon as sparrowd
  // listens again, so a watch resumes within a reconnect of the restart.
  if (channel_->GetState(/*try_to_connect=*/true) == GRPC_CHANNEL_READY) {
    std::this_thread::sleep_for(absl::ToChronoMilliseconds(backoff));
    return;
  }
  channel_->WaitForConnected(std::chrono::system_clock::now() +
                             absl::ToChronoMilliseconds(backoff));
}

absl::StatusOr<v1::TrainedModel> Client::GetModel(const std::string& job_id) {
  v1::GetModelRequest request;
  request.set_job_id(job_id);
  SPARROW_RETURN_IF_ERROR(translate::CheckUtf8Fields(request, "request"));
  v1::TrainedModel response;
  SPARROW_RETURN_IF_ERROR(WithRetries(
      [&](grpc::ClientContext* c) {
        return models_->Get(c, request, &response);
      },
      options_.deadline));
  return response;
}

absl::StatusOr<v1::ExportModelResponse> Client::ExportModel(
    const std::string& job_id, v1::ExportModelRequest::Format format) {
  v1::ExportModelRequest request;
  request.set_job_id(job_id);
  request.set_format(format);
  SPARROW_RETURN_IF_ERROR(translate::CheckUtf8Fields(request, "request"));
  v1::ExportModelResponse response;
  SPARROW_RETURN_IF_ERROR(WithRetries(
      [&](grpc::ClientContext* c) {
        return models_->Export(c, request, &response);
      },
      options_.deadline));
  return response;
}

absl::StatusOr<v1::PredictResponse> Client::Predict(
    const v1::PredictRequest& request) {
  SPARROW_RETURN_IF_ERROR(translate::CheckUtf8Fields(request, "request"));
  v1::PredictResponse response;
  SPARROW_RETURN_IF_ERROR(WithRetries(
      [&](grpc::ClientContext* c) {
        return models_->Predict(c, request, &response);
      },
      options_.deadline));
  return response;
}

absl::StatusOr<std::string> Client::Health() {
  auto stub = grpc::health::v1::Health::NewStub(channel_);
  grpc::health::v1::HealthCheckRequest request;
  grpc::health::v1::HealthCheckResponse response;
  SPARROW_RETURN_IF_ERROR(WithRetries(
      [&](grpc::ClientContext* c) {
        return stub->Check(c, request, &response);
      },
      options_.deadline));
  return grpc::health::v1::HealthCheckResponse::ServingStatus_Name(
      response.status());
}

}  // namespace sparrow::client
