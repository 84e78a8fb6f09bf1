// sparrowd end to end: the real binary as a child process (fork/exec), driven
// over gRPC and HTTP. Upload, submit, watch, fetch, predict and /metrics; a
// SIGKILL in the middle of training and a restart on the same data directory
// (the job resumes from its checkpoint, a reconnecting watcher misses nothing
// and sees nothing twice, nothing stored is lost; an RLS job ends with the
// uninterrupted run's model to the last bit); a graceful SIGTERM; and
// malformed requests that must leave the server serving.
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/util/field_comparator.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "server/service/dataset_service.h"
#include "sparrow/v1/datasets.grpc.pb.h"
#include "sparrow/v1/job_state.h"
#include "sparrow/v1/jobs.grpc.pb.h"
#include "sparrow/v1/model_service.grpc.pb.h"
#include "tests/server/testing/server_fixture.h"
#include "tests/server/testing/sparrowd_process.h"

namespace sparrow::server {
namespace {

using testing::SmallSpec;
using testing::SparrowdProcess;
using testing::TanksCsv;

std::chrono::system_clock::time_point After(absl::Duration d) {
  return std::chrono::system_clock::now() + absl::ToChronoMilliseconds(d);
}

// A port that was free a moment ago (for --metrics-listen, which has no
// port-0 reporting).
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

// GET http://127.0.0.1:port/path over a raw socket (HTTP/1.0, so the server
// closes the connection after the body; 5 s timeouts). Returns the body and
// sets *status to the HTTP status (0 when there was no valid response).
// (cpp-httplib's Debian header is not header-only; this needs no library.)
std::string HttpGet(int port, const std::string& path, int* status) {
  *status = 0;
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "";
  timeval timeout{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  std::string response;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    const std::string request = absl::StrCat(
        "GET ", path, " HTTP/1.0\r\nHost: 127.0.0.1:", port, "\r\n\r\n");
    if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
        static_cast<ssize_t>(request.size())) {
      char buffer[4096];
      ssize_t n;
      while ((n = recv(fd, buffer, sizeof buffer, 0)) > 0) {
        response.append(buffer, static_cast<size_t>(n));
      }
    }
  }
  close(fd);
  // "HTTP/1.x 200 OK\r\n...\r\n\r\nbody"
  const size_t body = response.find("\r\n\r\n");
  if (!absl::StartsWith(response, "HTTP/1.") || body == std::string::npos ||
      response.size() < 12 ||
      !absl::SimpleAtoi(response.substr(9, 3), status)) {
    return response;
  }
  return response.substr(body + 4);
}

// grpc.health.v1.Health/Check with service "" through the generic stub (the
// C++ health client stub is not shipped): the request is an empty message
// and the response's field 1 is the status enum (SERVING = 1, NOT_SERVING =
// 2). Returns -1 when the call itself fails (then *rpc_status says why).
constexpr int kServing = 1;
constexpr int kNotServing = 2;

int HealthCheck(const std::shared_ptr<grpc::Channel>& channel,
                absl::Duration timeout, grpc::Status* rpc_status = nullptr) {
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(After(timeout));
  grpc::Slice empty("");
  grpc::ByteBuffer request(&empty, 1);
  grpc::ByteBuffer response;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  grpc::Status status;
  stub.UnaryCall(&context, "/grpc.health.v1.Health/Check", grpc::StubOptions(),
                 &request, &response, [&](grpc::Status s) {
                   std::lock_guard<std::mutex> lock(mu);
                   status = std::move(s);
                   done = true;
                   cv.notify_all();
                 });
  {
    std::unique_lock<std::mutex> lock(mu);
    // The deadline ends the call; the cancel is a second line of defence.
    if (!cv.wait_for(lock,
                     absl::ToChronoMilliseconds(timeout + absl::Seconds(5)),
                     [&] { return done; })) {
      context.TryCancel();
      cv.wait(lock, [&] { return done; });
    }
  }
  if (rpc_status != nullptr) *rpc_status = status;
  if (!status.ok()) return -1;
  std::vector<grpc::Slice> slices;
  if (!response.Dump(&slices).ok()) return -1;
  std::string bytes;
  for (const grpc::Slice& s : slices) {
    bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  google::protobuf::io::CodedInputStream in(
      reinterpret_cast<const uint8_t*>(bytes.data()),
      static_cast<int>(bytes.size()));
  int serving = 0;  // UNKNOWN when the field is absent
  while (const uint32_t tag = in.ReadTag()) {
    uint32_t value = 0;
    if (tag != 8 || !in.ReadVarint32(&value)) return -1;  // field 1, varint
    serving = static_cast<int>(value);
  }
  return serving;
}

// A raw unary call (for malformed request bytes).
grpc::Status RawCall(const std::shared_ptr<grpc::Channel>& channel,
                     const std::string& method, const std::string& bytes) {
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(After(absl::Seconds(10)));
  grpc::Slice slice(bytes);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  grpc::Status status;
  stub.UnaryCall(&context, method, grpc::StubOptions(), &request, &response,
                 [&](grpc::Status s) {
                   std::lock_guard<std::mutex> lock(mu);
                   status = std::move(s);
                   done = true;
                   cv.notify_all();
                 });
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return done; });  // the deadline bounds it
  return status;
}

// ---------------------------------------------------------------------------
// Watches one job from a thread across server restarts: on a broken stream it
// reconnects (to the latest address given to SetAddress) with after_seq = the
// last seq it received, until the job's final event or the deadline.
class Watcher {
 public:
  Watcher(std::string job_id, std::string address, absl::Duration timeout)
      : job_id_(std::move(job_id)),
        address_(std::move(address)),
        deadline_(absl::Now() + timeout) {
    thread_ = std::thread([this] { Run(); });
  }
  ~Watcher() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      if (context_ != nullptr) context_->TryCancel();
    }
    cv_.notify_all();
    thread_.join();
  }

  void SetAddress(const std::string& address) {
    std::lock_guard<std::mutex> lock(mu_);
    address_ = address;
    cv_.notify_all();
  }

  // Until an ITERATION event with iteration >= n arrived (true), the stream
  // ended, or the timeout.
  bool WaitForIteration(int n, absl::Duration timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, absl::ToChronoMilliseconds(timeout), [&] {
      return max_iteration_ >= n || finished_;
    }) && max_iteration_ >= n;
  }

  // Until the final event arrived or the watcher gave up (deadline).
  bool WaitForEnd(absl::Duration timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, absl::ToChronoMilliseconds(timeout), [&] {
      return finished_;
    }) && final_seen_;
  }

  // Until the current stream ended with an error (e.g. at server shutdown).
  bool WaitForBrokenStream(absl::Duration timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, absl::ToChronoMilliseconds(timeout), [&] {
      return !errors_.empty() || finished_;
    }) && !errors_.empty();
  }

  std::vector<v1::ProgressEvent> events() const {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }
  std::vector<grpc::Status> errors() const {
    std::lock_guard<std::mutex> lock(mu_);
    return errors_;
  }
  int streams() const {
    std::lock_guard<std::mutex> lock(mu_);
    return streams_;
  }
  int max_iteration() const {
    std::lock_guard<std::mutex> lock(mu_);
    return max_iteration_;
  }

 private:
  void Run() {
    int64_t last_seq = 0;
    std::string last_error_address;
    while (true) {
      std::string address;
      {
        std::unique_lock<std::mutex> lock(mu_);
        if (stop_ || final_seen_ || absl::Now() >= deadline_) break;
        address = address_;
      }
      auto channel =
          grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
      auto stub = v1::JobService::NewStub(channel);
      grpc::ClientContext context;
      context.set_deadline(absl::ToChronoTime(deadline_));
      v1::WatchJobRequest request;
      request.set_id(job_id_);
      request.set_after_seq(last_seq);
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stop_) break;
        context_ = &context;
      }
      auto reader = stub->Watch(&context, request);
      v1::ProgressEvent e;
      bool got_any = false;
      while (reader->Read(&e)) {
        std::lock_guard<std::mutex> lock(mu_);
        got_any = true;
        last_seq = e.seq();
        events_.push_back(e);
        if (e.kind() == v1::ProgressEvent::ITERATION) {
          max_iteration_ = std::max(max_iteration_, e.iteration());
        } else if (v1::IsFinalEvent(e)) {
          final_seen_ = true;
        }
        cv_.notify_all();
      }
      const grpc::Status status = reader->Finish();
      std::unique_lock<std::mutex> lock(mu_);
      context_ = nullptr;
      ++streams_;
      if (final_seen_ || stop_) break;
      // A stream that delivered nothing on an address that already failed
      // (the dead server before the restart) is not worth recording again.
      if (got_any || address != last_error_address) {
        errors_.push_back(status);
        last_error_address = address;
      }
      cv_.notify_all();
      if (status.ok()) break;  // ended OK without the final event: a bug
      cv_.wait_for(lock, std::chrono::milliseconds(50), [&] { return stop_; });
    }
    std::lock_guard<std::mutex> lock(mu_);
    finished_ = true;
    cv_.notify_all();
  }

  const std::string job_id_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string address_;
  const absl::Time deadline_;
  grpc::ClientContext* context_ = nullptr;
  std::vector<v1::ProgressEvent> events_;
  std::vector<grpc::Status> errors_;
  int streams_ = 0;
  int max_iteration_ = 0;
  bool final_seen_ = false;
  bool finished_ = false;
  bool stop_ = false;
  std::thread thread_;
};

// Every seq from 1 to the last exactly once, in order.
void ExpectDenseSeqs(const std::vector<v1::ProgressEvent>& events) {
  for (size_t i = 0; i < events.size(); ++i) {
    ASSERT_EQ(events[i].seq(), static_cast<int64_t>(i + 1))
        << "event " << i << " of " << events.size();
  }
}

// The long job of the crash and SIGTERM tests: SmallSpec on kLongRows rows
// of TanksCsv with more epochs and a wider hidden layer, ~3 s with a
// checkpoint every 5 epochs on a 2-core machine.
constexpr int kLongRows = 2000;
constexpr int kLongEpochs = 3000;
v1::JobSpec LongSpec(const std::string& dataset_id, int epochs = kLongEpochs) {
  v1::JobSpec spec = SmallSpec(dataset_id, epochs);
  spec.set_name("long");
  spec.mutable_split()->mutable_train(0)->set_last(1600);
  spec.mutable_split()->mutable_test(0)->set_first(1601);
  spec.mutable_split()->mutable_test(0)->set_last(kLongRows);
  spec.mutable_model()->mutable_narx_mlp()->set_hidden(0, 32);
  return spec;
}

// Equal messages, NaN == NaN (unused metrics are NaN); a failure names the
// differences.
::testing::AssertionResult SameMessage(const google::protobuf::Message& a,
                                       const google::protobuf::Message& b) {
  google::protobuf::util::DefaultFieldComparator comparator;
  comparator.set_treat_nan_as_equal(true);
  google::protobuf::util::MessageDifferencer differencer;
  differencer.set_field_comparator(&comparator);
  std::string differences;
  differencer.ReportDifferencesToString(&differences);
  if (differencer.Compare(a, b)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << differences;
}

// ---------------------------------------------------------------------------
class SparrowdE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           absl::StrFormat(
               "sparrowd-e2e-%d-%s", getpid(),
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }

  void TearDown() override {
    if (HasFailure()) {
      for (size_t i = 0; i < processes_.size(); ++i) {
        const std::string out = processes_[i]->output();
        std::cerr << "---- sparrowd #" << i << " output (last 4000 bytes):\n"
                  << out.substr(out.size() > 4000 ? out.size() - 4000 : 0)
                  << "\n";
      }
    }
    processes_.clear();  // SIGKILL and reap whatever still runs
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // Starts sparrowd on dir_ (a new process each time) and points the stubs at
  // it.
  void StartServer(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {
        "--listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--data-dir",
        (dir_ / "data").string(), "--workers", "1", "--checkpoint-every", "5",
        // Every iteration is an event and every 5th a checkpoint: the
        // crash tests count them.
        "--min-event-interval-ms", "0", "--checkpoint-min-seconds", "0"};
    args.insert(args.end(), extra.begin(), extra.end());
    processes_.push_back(std::make_unique<SparrowdProcess>(args));
    address_ = process()->WaitForAddress();
    ASSERT_FALSE(address_.empty())
        << "sparrowd did not report its address; output:\n"
        << process()->WaitForOutput(absl::Seconds(2));
    channel_ =
        grpc::CreateChannel(address_, grpc::InsecureChannelCredentials());
    datasets_ = v1::DatasetService::NewStub(channel_);
    jobs_ = v1::JobService::NewStub(channel_);
    models_ = v1::ModelService::NewStub(channel_);
  }

  SparrowdProcess* process() { return processes_.back().get(); }

  static std::unique_ptr<grpc::ClientContext> Context(
      absl::Duration timeout = absl::Seconds(20)) {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(After(timeout));
    return context;
  }

  // A chunked upload: offsets in order, the SHA-256 with the last chunk.
  grpc::Status Upload(const std::string& csv, v1::UploadDatasetResponse* out,
                      size_t chunk = 1000) {
    auto context = Context();
    return testing::UploadChunks(datasets_.get(), context.get(), csv, chunk,
                                 out);
  }

  std::string UploadOrDie(const std::string& csv) {
    v1::UploadDatasetResponse response;
    const grpc::Status s = Upload(csv, &response);
    EXPECT_TRUE(s.ok()) << s.error_code() << ": " << s.error_message();
    return response.dataset().id();
  }

  v1::Job SubmitOrDie(const v1::JobSpec& spec,
                      const std::string& request_id = "") {
    v1::SubmitJobRequest request;
    *request.mutable_spec() = spec;
    request.set_request_id(request_id);
    v1::Job job;
    auto context = Context();
    const grpc::Status s = jobs_->Submit(context.get(), request, &job);
    EXPECT_TRUE(s.ok()) << s.error_code() << ": " << s.error_message();
    return job;
  }

  grpc::Status GetJob(const std::string& id, v1::Job* job) {
    v1::GetJobRequest request;
    request.set_id(id);
    auto context = Context();
    return jobs_->Get(context.get(), request, job);
  }

  v1::Job GetJobOrDie(const std::string& id) {
    v1::Job job;
    const grpc::Status s = GetJob(id, &job);
    EXPECT_TRUE(s.ok()) << s.error_code() << ": " << s.error_message();
    return job;
  }

  grpc::Status GetModel(const std::string& job_id, v1::TrainedModel* model) {
    v1::GetModelRequest request;
    request.set_job_id(job_id);
    auto context = Context();
    return models_->Get(context.get(), request, model);
  }

  // Every event after after_seq until the stream ends (or the timeout).
  grpc::Status Watch(const std::string& job_id, int64_t after_seq,
                     std::vector<v1::ProgressEvent>* events,
                     absl::Duration timeout = absl::Seconds(30)) {
    v1::WatchJobRequest request;
    request.set_id(job_id);
    request.set_after_seq(after_seq);
    auto context = Context(timeout);
    auto reader = jobs_->Watch(context.get(), request);
    v1::ProgressEvent e;
    while (reader->Read(&e)) events->push_back(e);
    return reader->Finish();
  }

  std::filesystem::path dir_;
  std::vector<std::unique_ptr<SparrowdProcess>> processes_;
  std::string address_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::DatasetService::Stub> datasets_;
  std::unique_ptr<v1::JobService::Stub> jobs_;
  std::unique_ptr<v1::ModelService::Stub> models_;
};

// ---------------------------------------------------------------------------
TEST_F(SparrowdE2E, HelpListsEveryFlag) {
  processes_.push_back(
      std::make_unique<SparrowdProcess>(std::vector<std::string>{"--help"}));
  const std::string out = process()->WaitForOutput(absl::Seconds(10));
  EXPECT_EQ(process()->Wait(absl::Seconds(10)), 0) << out;
  for (const char* flag :
       {"--listen", "--data-dir", "--workers", "--checkpoint-every",
        "--event-flush-ms", "--tokens-file", "--tls-cert", "--tls-key",
        "--metrics-listen", "--max-upload-bytes",
        "--max-upload-bytes-in-flight",
        "--max-upload-bytes-in-flight-per-tenant", "--max-message-bytes",
        "--max-queued-jobs", "--max-queued-per-tenant", "--max-model-params",
        "--job-deadline", "--log-level"}) {
    EXPECT_TRUE(absl::StrContains(out, flag)) << flag << " missing in:\n"
                                              << out;
  }
  EXPECT_TRUE(absl::StrContains(out, "Example")) << out;
}

TEST_F(SparrowdE2E, UploadSubmitWatchFetchPredictAndMetrics) {
  const int metrics_port = FreePort();
  ASSERT_GT(metrics_port, 0);
  ASSERT_NO_FATAL_FAILURE(StartServer(
      {"--metrics-listen", absl::StrCat("127.0.0.1:", metrics_port)}));
  EXPECT_EQ(HealthCheck(channel_, absl::Seconds(5)), kServing);

  // Upload in 1000-byte chunks; the id is the content's SHA-256.
  const std::string csv = TanksCsv();
  v1::UploadDatasetResponse uploaded;
  grpc::Status s = Upload(csv, &uploaded);
  ASSERT_TRUE(s.ok()) << s.error_message();
  const v1::Dataset& dataset = uploaded.dataset();
  EXPECT_EQ(dataset.id(), Sha256Hex(csv));
  EXPECT_EQ(dataset.size_bytes(), static_cast<int64_t>(csv.size()));
  EXPECT_EQ(dataset.rows(), 400);
  EXPECT_EQ(absl::StrJoin(dataset.columns(), ","), "u,y");
  EXPECT_FALSE(uploaded.already_existed());
  v1::UploadDatasetResponse again;
  ASSERT_TRUE(Upload(csv, &again, 4096).ok());
  EXPECT_TRUE(again.already_existed());
  EXPECT_EQ(again.dataset().id(), dataset.id());

  // Submit (idempotent by request_id), then watch to the end.
  const v1::Job job = SubmitOrDie(SmallSpec(dataset.id()), "e2e-submit-1");
  ASSERT_FALSE(job.id().empty());
  EXPECT_EQ(job.state(), v1::Job::QUEUED);
  EXPECT_EQ(SubmitOrDie(SmallSpec(dataset.id()), "e2e-submit-1").id(),
            job.id());
  std::vector<v1::ProgressEvent> events;
  s = Watch(job.id(), 0, &events);
  ASSERT_TRUE(s.ok()) << s.error_code() << ": " << s.error_message();
  ASSERT_FALSE(events.empty());
  ASSERT_NO_FATAL_FAILURE(ExpectDenseSeqs(events));
  EXPECT_EQ(events.front().kind(), v1::ProgressEvent::STATE);
  EXPECT_EQ(events.front().state(), v1::Job::QUEUED);
  EXPECT_EQ(events.back().kind(), v1::ProgressEvent::STATE);
  EXPECT_EQ(events.back().state(), v1::Job::SUCCEEDED)
      << events.back().reason();
  std::vector<int> iterations;
  for (const auto& e : events) {
    EXPECT_EQ(e.job_id(), job.id());
    if (e.kind() == v1::ProgressEvent::ITERATION) {
      iterations.push_back(e.iteration());
      EXPECT_TRUE(std::isfinite(e.loss()));
    }
  }
  ASSERT_EQ(iterations.size(), 30u);
  for (int i = 0; i < 30; ++i) EXPECT_EQ(iterations[i], i + 1);

  const v1::Job done = GetJobOrDie(job.id());
  EXPECT_EQ(done.state(), v1::Job::SUCCEEDED);
  EXPECT_EQ(done.attempts(), 1);
  EXPECT_EQ(done.last_seq(), events.back().seq());
  EXPECT_EQ(done.iterations(), 30);
  EXPECT_FALSE(done.summary().empty());

  // The model: Get, Export as JSON (the same model) and as proto, Predict.
  v1::TrainedModel model;
  s = GetModel(job.id(), &model);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(model.epochs(), 30);
  EXPECT_GT(model.parameters_size(), 0);
  EXPECT_EQ(model.num_inputs(), 1);
  EXPECT_EQ(model.num_outputs(), 1);

  v1::ExportModelRequest export_request;
  export_request.set_job_id(job.id());
  export_request.set_format(v1::ExportModelRequest::JSON);
  v1::ExportModelResponse exported;
  auto context = Context();
  s = models_->Export(context.get(), export_request, &exported);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(exported.content_type(), "application/json");
  v1::TrainedModel from_json;
  ASSERT_TRUE(
      google::protobuf::util::JsonStringToMessage(exported.data(), &from_json)
          .ok())
      << exported.data().substr(0, 200);
  EXPECT_TRUE(SameMessage(from_json, model));

  export_request.set_format(v1::ExportModelRequest::PROTO);
  context = Context();
  s = models_->Export(context.get(), export_request, &exported);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(exported.content_type(), "application/x-protobuf");
  v1::TrainedModel from_proto;
  ASSERT_TRUE(from_proto.ParseFromString(exported.data()));
  EXPECT_TRUE(SameMessage(from_proto, model));

  v1::PredictRequest predict;
  predict.set_job_id(job.id());
  predict.set_csv(csv);
  v1::PredictResponse prediction;
  context = Context();
  s = models_->Predict(context.get(), predict, &prediction);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(prediction.samples(), 400);
  EXPECT_TRUE(prediction.has_bfr());
  EXPECT_TRUE(prediction.has_rmse());
  EXPECT_TRUE(absl::StartsWith(prediction.csv(), "y_pred"))
      << prediction.csv().substr(0, 100);

  // /metrics over HTTP.
  int http_status = 0;
  const std::string text = HttpGet(metrics_port, "/metrics", &http_status);
  EXPECT_EQ(http_status, 200) << text;
  for (const char* needle :
       {"sparrow_queue_depth", "sparrow_running_jobs",
        "sparrow_progress_events_total",
        "sparrow_job_duration_seconds_count{state=\"succeeded\"} 1",
        "sparrow_job_duration_seconds_bucket"}) {
    EXPECT_TRUE(absl::StrContains(text, needle)) << needle << " in\n" << text;
  }
  bool rpc_with_code = false;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::StartsWith(line, "sparrow_rpcs_total{") &&
        absl::StrContains(line, "code=\"OK\"") &&
        absl::StrContains(line, "method=\"JobService.Submit\"")) {
      rpc_with_code = true;
    }
  }
  EXPECT_TRUE(rpc_with_code) << text;
}

// ---------------------------------------------------------------------------
// The important one: SIGKILL mid-training, restart on the same data.
TEST_F(SparrowdE2E, SigkillMidTrainingResumesFromCheckpointAndLosesNothing) {
  ASSERT_NO_FATAL_FAILURE(StartServer());

  // Stored before the crash: two datasets and a finished job with its model.
  const std::string csv1 = TanksCsv(kLongRows, 1);
  const std::string csv2 = TanksCsv(400, 2);
  const std::string ds1 = UploadOrDie(csv1);
  const std::string ds2 = UploadOrDie(csv2);
  ASSERT_NE(ds1, ds2);
  const v1::Job small = SubmitOrDie(SmallSpec(ds2));
  std::vector<v1::ProgressEvent> small_events;
  ASSERT_TRUE(Watch(small.id(), 0, &small_events).ok());
  ASSERT_EQ(GetJobOrDie(small.id()).state(), v1::Job::SUCCEEDED);
  v1::TrainedModel small_model;
  ASSERT_TRUE(GetModel(small.id(), &small_model).ok());

  // The long job runs; a second one waits behind it (one worker).
  const v1::Job job = SubmitOrDie(LongSpec(ds1));
  const int queued_epochs = 300;
  const v1::Job queued = SubmitOrDie(SmallSpec(ds2, queued_epochs));
  Watcher watcher(job.id(), address_, absl::Seconds(30));

  // Two checkpoints' worth and more (checkpoint every 5; kill at ~ 1/6).
  const int kill_after = kLongEpochs / 6;
  const absl::Time t0 = absl::Now();
  ASSERT_TRUE(watcher.WaitForIteration(kill_after, absl::Seconds(20)))
      << "max iteration seen " << watcher.max_iteration();
  EXPECT_EQ(GetJobOrDie(queued.id()).state(), v1::Job::QUEUED);
  process()->Kill();
  const int seen_before_kill = watcher.max_iteration();
  ASSERT_LT(seen_before_kill, kLongEpochs) << "the job finished before the "
                                              "kill; make it longer";
  std::cerr << "[ info ] killed at iteration >= " << seen_before_kill
            << " after " << absl::ToDoubleSeconds(absl::Now() - t0) << " s\n";
  EXPECT_TRUE(watcher.WaitForBrokenStream(absl::Seconds(5)));

  // Restart on the same data directory (a new port).
  ASSERT_NO_FATAL_FAILURE(StartServer());
  // The queued job is still queued (the resumed one goes first).
  EXPECT_EQ(GetJobOrDie(queued.id()).state(), v1::Job::QUEUED);
  watcher.SetAddress(address_);
  ASSERT_TRUE(watcher.WaitForEnd(absl::Seconds(25)))
      << "errors: " << watcher.errors().size()
      << ", max iteration: " << watcher.max_iteration();
  std::cerr << "[ info ] long job done after "
            << absl::ToDoubleSeconds(absl::Now() - t0) << " s, "
            << watcher.streams() << " streams\n";

  // The watcher saw every seq exactly once, in order, ending SUCCEEDED.
  const std::vector<v1::ProgressEvent> events = watcher.events();
  ASSERT_NO_FATAL_FAILURE(ExpectDenseSeqs(events));
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().kind(), v1::ProgressEvent::STATE);
  EXPECT_EQ(events.back().state(), v1::Job::SUCCEEDED)
      << events.back().reason();
  EXPECT_GE(watcher.streams(), 2);

  // A replay from 0 on the new server is the same sequence.
  std::vector<v1::ProgressEvent> replay;
  ASSERT_TRUE(Watch(job.id(), 0, &replay).ok());
  ASSERT_EQ(replay.size(), events.size());
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_TRUE(SameMessage(replay[i], events[i])) << "seq " << i + 1;
  }

  // The resume: a RUNNING history entry (and event) naming the checkpoint.
  const v1::Job done = GetJobOrDie(job.id());
  EXPECT_EQ(done.state(), v1::Job::SUCCEEDED) << done.reason();
  EXPECT_EQ(done.attempts(), 2);
  EXPECT_EQ(done.last_seq(), events.back().seq());
  EXPECT_EQ(done.iterations(), kLongEpochs);
  int checkpoint = -1;
  for (const v1::Job::Transition& t : done.history()) {
    if (t.state() == v1::Job::RUNNING &&
        absl::StrContains(t.reason(), "checkpoint")) {
      EXPECT_TRUE(absl::StrContains(t.reason(), "resumed")) << t.reason();
      const size_t at = t.reason().rfind(' ');
      ASSERT_TRUE(absl::SimpleAtoi(t.reason().substr(at + 1), &checkpoint))
          << t.reason();
    }
  }
  ASSERT_GT(checkpoint, 0) << done.DebugString();
  EXPECT_EQ(checkpoint % 5, 0);
  EXPECT_GE(checkpoint, 10);

  // The ITERATION events: 1..K before the crash (K >= the checkpoint), then
  // checkpoint + 1 .. max_epochs after the resume.
  size_t resume_at = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i].kind() == v1::ProgressEvent::STATE &&
        events[i].state() == v1::Job::RUNNING &&
        absl::StrContains(events[i].reason(), "checkpoint")) {
      resume_at = i;
    }
  }
  ASSERT_GT(resume_at, 0u);
  std::vector<int> before, after;
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i].kind() != v1::ProgressEvent::ITERATION) continue;
    (i < resume_at ? before : after).push_back(events[i].iteration());
  }
  ASSERT_FALSE(before.empty());
  ASSERT_FALSE(after.empty());
  for (size_t i = 0; i < before.size(); ++i) {
    ASSERT_EQ(before[i], static_cast<int>(i) + 1);
  }
  EXPECT_GE(before.back(), checkpoint);
  EXPECT_GE(before.back(), seen_before_kill);
  for (size_t i = 0; i < after.size(); ++i) {
    ASSERT_EQ(after[i], checkpoint + static_cast<int>(i) + 1);
  }
  EXPECT_EQ(after.back(), kLongEpochs);

  // The model and the summary count the iterations of both attempts.
  v1::TrainedModel model;
  ASSERT_TRUE(GetModel(job.id(), &model).ok());
  EXPECT_EQ(model.epochs(), kLongEpochs);
  EXPECT_TRUE(absl::StrContains(done.summary(),
                                absl::StrCat("after ", kLongEpochs, " ")))
      << done.summary();

  // Nothing stored before the crash was lost.
  for (const auto& [id, csv] : {std::pair{ds1, csv1}, std::pair{ds2, csv2}}) {
    v1::GetDatasetRequest request;
    request.set_id(id);
    v1::Dataset dataset;
    auto context = Context();
    const grpc::Status s = datasets_->Get(context.get(), request, &dataset);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(dataset.size_bytes(), static_cast<int64_t>(csv.size()));
    EXPECT_EQ(dataset.rows(), id == ds1 ? kLongRows : 400);
  }
  const v1::Job small_after = GetJobOrDie(small.id());
  EXPECT_EQ(small_after.state(), v1::Job::SUCCEEDED);
  EXPECT_EQ(small_after.attempts(), 1);
  v1::TrainedModel small_model_after;
  ASSERT_TRUE(GetModel(small.id(), &small_model_after).ok());
  EXPECT_TRUE(SameMessage(small_model_after, small_model));

  // The job that was queued at the kill runs after the resumed one.
  std::vector<v1::ProgressEvent> queued_events;
  const grpc::Status s = Watch(queued.id(), 0, &queued_events);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_NO_FATAL_FAILURE(ExpectDenseSeqs(queued_events));
  ASSERT_FALSE(queued_events.empty());
  EXPECT_EQ(queued_events.back().state(), v1::Job::SUCCEEDED)
      << queued_events.back().reason();
  const v1::Job queued_done = GetJobOrDie(queued.id());
  EXPECT_EQ(queued_done.attempts(), 1);
  EXPECT_EQ(queued_done.iterations(), queued_epochs);
  EXPECT_GE(queued_done.start_time().seconds(), done.end_time().seconds());
  std::cerr << "[ info ] queued job done after "
            << absl::ToDoubleSeconds(absl::Now() - t0) << " s\n";
}

// An RLS job (docs/optimizers/rls.md) on LongSpec's data: an mlp whose hidden
// layer RLS preconditions with momentum and l1 while Adam trains the output
// layer, so the checkpoint carries P, the momentum and Adam's moments.
v1::JobSpec RlsSpec(const std::string& dataset_id, int epochs) {
  v1::JobSpec spec = LongSpec(dataset_id, epochs);
  spec.set_name("rls");
  spec.mutable_model()->mutable_mlp()->add_hidden(16);
  spec.mutable_model()->mutable_mlp()->set_activation(v1::ACTIVATION_TANH);
  v1::RlsOptions* rls = spec.mutable_optimizer()->mutable_rls();
  rls->set_momentum(0.5);
  rls->set_l1(1e-5);
  rls->set_clip_norm(5.0);
  rls->set_output_layer("adam");
  rls->mutable_batch()->set_batch_size(64);
  rls->mutable_batch()->set_threads(2);
  return spec;
}

// SIGKILL during an RLS job, restart: the job resumes from its checkpoint and
// ends with the model an uninterrupted run of the same spec gives, to the
// last bit.
TEST_F(SparrowdE2E, SigkilledRlsJobEndsWithTheUninterruptedModelBitForBit) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  const std::string ds = UploadOrDie(TanksCsv(kLongRows, 1));
  const int epochs = 400;
  const v1::Job reference = SubmitOrDie(RlsSpec(ds, epochs));
  std::vector<v1::ProgressEvent> events;
  ASSERT_TRUE(Watch(reference.id(), 0, &events, absl::Seconds(60)).ok());
  ASSERT_EQ(GetJobOrDie(reference.id()).state(), v1::Job::SUCCEEDED)
      << GetJobOrDie(reference.id()).reason();
  v1::TrainedModel expected;
  ASSERT_TRUE(GetModel(reference.id(), &expected).ok());

  const v1::Job job = SubmitOrDie(RlsSpec(ds, epochs));
  Watcher watcher(job.id(), address_, absl::Seconds(60));
  ASSERT_TRUE(watcher.WaitForIteration(epochs / 4, absl::Seconds(30)))
      << "max iteration seen " << watcher.max_iteration();
  process()->Kill();
  ASSERT_LT(watcher.max_iteration(), epochs) << "the job finished before the "
                                                "kill; make it longer";
  ASSERT_NO_FATAL_FAILURE(StartServer());
  watcher.SetAddress(address_);
  ASSERT_TRUE(watcher.WaitForEnd(absl::Seconds(60)))
      << "max iteration: " << watcher.max_iteration();

  const v1::Job done = GetJobOrDie(job.id());
  ASSERT_EQ(done.state(), v1::Job::SUCCEEDED) << done.reason();
  EXPECT_EQ(done.attempts(), 2);
  v1::TrainedModel model;
  ASSERT_TRUE(GetModel(job.id(), &model).ok());
  ASSERT_EQ(model.parameters_size(), expected.parameters_size());
  int different = 0;
  for (int i = 0; i < model.parameters_size(); ++i) {
    // Bitwise: -0.0 != 0.0 and the same NaN payload count as they should.
    const double a = model.parameters(i), b = expected.parameters(i);
    different += std::memcmp(&a, &b, sizeof(double)) != 0;
  }
  EXPECT_EQ(different, 0) << "of " << model.parameters_size()
                          << " parameters differ from the uninterrupted run";
  EXPECT_EQ(model.epochs(), epochs);
  EXPECT_TRUE(SameMessage(model.metrics(), expected.metrics()));
}

// ---------------------------------------------------------------------------
TEST_F(SparrowdE2E, SigtermCheckpointsAndExitsZeroThenResumes) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  const std::string ds = UploadOrDie(TanksCsv(kLongRows));
  const int epochs = 2000;
  const v1::Job job = SubmitOrDie(LongSpec(ds, epochs));
  Watcher watcher(job.id(), address_, absl::Seconds(30));
  ASSERT_TRUE(watcher.WaitForIteration(epochs / 5, absl::Seconds(20)))
      << "max iteration seen " << watcher.max_iteration();

  // SIGTERM, then poll health until the process is gone: once it stopped
  // answering SERVING it never does again.
  const absl::Time sent = absl::Now();
  process()->Signal(SIGTERM);
  std::vector<int> health;  // -1: the call failed
  std::optional<int> exit_code;
  while (!(exit_code = process()->Poll()).has_value() &&
         absl::Now() - sent < absl::Seconds(10)) {
    grpc::Status rpc;
    const int h = HealthCheck(channel_, absl::Seconds(1), &rpc);
    if (h < 0) {
      // Refused (UNAVAILABLE), cut off by the server's stop (CANCELLED), or
      // unanswered by a busy machine; never another error.
      EXPECT_TRUE(rpc.error_code() == grpc::StatusCode::UNAVAILABLE ||
                  rpc.error_code() == grpc::StatusCode::CANCELLED ||
                  rpc.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED)
          << rpc.error_code() << ": " << rpc.error_message();
    }
    health.push_back(h);
    absl::SleepFor(absl::Milliseconds(5));
  }
  if (!exit_code.has_value()) exit_code = process()->Wait(absl::Seconds(5));
  const double stop_seconds = absl::ToDoubleSeconds(absl::Now() - sent);
  std::cerr << "[ info ] exited " << exit_code.value_or(-1) << " "
            << stop_seconds << " s after SIGTERM; health answers: "
            << absl::StrJoin(health, ",") << "\n";
  ASSERT_EQ(exit_code, 0);
  EXPECT_LT(stop_seconds, 6.0);
  const auto first_not_serving = std::find_if(
      health.begin(), health.end(), [](int h) { return h != kServing; });
  EXPECT_TRUE(std::all_of(first_not_serving, health.end(), [](int h) {
    return h == kNotServing || h < 0;
  })) << absl::StrJoin(health, ",");

  // The watcher's stream ended (UNAVAILABLE), not the job.
  ASSERT_TRUE(watcher.WaitForBrokenStream(absl::Seconds(5)));
  EXPECT_EQ(watcher.errors().front().error_code(),
            grpc::StatusCode::UNAVAILABLE)
      << watcher.errors().front().error_message();
  const int stopped_at = watcher.max_iteration();
  ASSERT_LT(stopped_at, epochs);

  // Restart: the job resumes from the shutdown checkpoint, which is its last
  // stored iteration, so no iteration is done twice.
  ASSERT_NO_FATAL_FAILURE(StartServer());
  watcher.SetAddress(address_);
  ASSERT_TRUE(watcher.WaitForEnd(absl::Seconds(25)))
      << "max iteration " << watcher.max_iteration();
  const std::vector<v1::ProgressEvent> events = watcher.events();
  ASSERT_NO_FATAL_FAILURE(ExpectDenseSeqs(events));
  EXPECT_EQ(events.back().state(), v1::Job::SUCCEEDED)
      << events.back().reason();
  // Every iteration exactly once, and the resume event right after the last
  // one stored before the shutdown.
  std::vector<int> iterations;
  int stored_before_resume = -1;
  for (const auto& e : events) {
    if (e.kind() == v1::ProgressEvent::ITERATION) {
      iterations.push_back(e.iteration());
    } else if (e.state() == v1::Job::RUNNING &&
               absl::StrContains(e.reason(), "resumed")) {
      stored_before_resume = iterations.empty() ? 0 : iterations.back();
    }
  }
  ASSERT_EQ(iterations.size(), static_cast<size_t>(epochs));
  for (int i = 0; i < epochs; ++i) ASSERT_EQ(iterations[i], i + 1);
  EXPECT_GE(stored_before_resume, stopped_at);

  const v1::Job done = GetJobOrDie(job.id());
  EXPECT_EQ(done.state(), v1::Job::SUCCEEDED) << done.reason();
  EXPECT_EQ(done.attempts(), 2);
  EXPECT_EQ(done.iterations(), epochs);
  bool resumed = false;
  for (const v1::Job::Transition& t : done.history()) {
    if (t.state() == v1::Job::RUNNING &&
        absl::StrContains(t.reason(), "resumed") &&
        absl::StrContains(t.reason(), "checkpoint")) {
      resumed = true;
      // The shutdown checkpoint is at the last stored iteration.
      EXPECT_TRUE(
          absl::EndsWith(t.reason(), absl::StrCat(" ", stored_before_resume)))
          << t.reason() << " (last iteration stored before the SIGTERM: "
          << stored_before_resume << ")";
    }
  }
  EXPECT_TRUE(resumed) << done.DebugString();
}

// ---------------------------------------------------------------------------
TEST_F(SparrowdE2E, MalformedRequestsLeaveTheServerServing) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  const std::string csv = TanksCsv();

  {  // Wrong checksum.
    auto context = Context();
    v1::UploadDatasetResponse response;
    auto writer = datasets_->Upload(context.get(), &response);
    v1::UploadDatasetRequest request;
    request.set_name("bad.csv");
    request.set_data(csv);
    request.set_finish(true);
    request.set_sha256(Sha256Hex(csv + "x"));
    writer->Write(request);
    writer->WritesDone();
    const grpc::Status s = writer->Finish();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << s.error_message();
    EXPECT_TRUE(absl::StrContains(s.error_message(), "sha256"))
        << s.error_message();
  }
  {  // A chunk at the wrong offset.
    auto context = Context();
    v1::UploadDatasetResponse response;
    auto writer = datasets_->Upload(context.get(), &response);
    v1::UploadDatasetRequest request;
    request.set_name("bad.csv");
    request.set_data(csv.substr(0, 100));
    writer->Write(request);
    request.set_offset(500);
    request.set_data(csv.substr(500));
    request.set_finish(true);
    request.set_sha256(Sha256Hex(csv));
    writer->Write(request);
    writer->WritesDone();
    const grpc::Status s = writer->Finish();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << s.error_message();
    EXPECT_TRUE(absl::StrContains(s.error_message(), "offset"))
        << s.error_message();
  }
  {  // No last message.
    auto context = Context();
    v1::UploadDatasetResponse response;
    auto writer = datasets_->Upload(context.get(), &response);
    v1::UploadDatasetRequest request;
    request.set_data(csv.substr(0, 100));
    writer->Write(request);
    writer->WritesDone();
    EXPECT_EQ(writer->Finish().error_code(),
              grpc::StatusCode::INVALID_ARGUMENT);
  }
  {  // Unknown ids.
    v1::Job job;
    EXPECT_EQ(GetJob("job-doesnotexist", &job).error_code(),
              grpc::StatusCode::NOT_FOUND);
    std::vector<v1::ProgressEvent> events;
    EXPECT_EQ(Watch("job-doesnotexist", 0, &events).error_code(),
              grpc::StatusCode::NOT_FOUND);
    EXPECT_TRUE(events.empty());
    v1::CancelJobRequest cancel;
    cancel.set_id("job-doesnotexist");
    auto context = Context();
    EXPECT_EQ(jobs_->Cancel(context.get(), cancel, &job).error_code(),
              grpc::StatusCode::NOT_FOUND);
    v1::TrainedModel model;
    EXPECT_EQ(GetModel("job-doesnotexist", &model).error_code(),
              grpc::StatusCode::NOT_FOUND);
    v1::GetDatasetRequest get;
    get.set_id(std::string(64, 'a'));
    v1::Dataset dataset;
    context = Context();
    EXPECT_EQ(datasets_->Get(context.get(), get, &dataset).error_code(),
              grpc::StatusCode::NOT_FOUND);
    v1::SubmitJobRequest submit;
    *submit.mutable_spec() = SmallSpec(std::string(64, 'a'));
    context = Context();
    const grpc::Status s = jobs_->Submit(context.get(), submit, &job);
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.error_code(), grpc::StatusCode::INTERNAL) << s.error_message();
  }
  // Bytes that are no protobuf message, and a method that does not exist.
  EXPECT_FALSE(
      RawCall(channel_, "/sparrow.v1.JobService/Get", "\xff\xff\xff\xff").ok());
  EXPECT_EQ(
      RawCall(channel_, "/sparrow.v1.JobService/NoSuchMethod", "").error_code(),
      grpc::StatusCode::UNIMPLEMENTED);

  // Still serving, nothing stored from the bad uploads, and a good upload
  // works.
  EXPECT_TRUE(process()->running());
  EXPECT_EQ(HealthCheck(channel_, absl::Seconds(5)), kServing);
  v1::ListDatasetsRequest list;
  v1::ListDatasetsResponse listed;
  auto context = Context();
  ASSERT_TRUE(datasets_->List(context.get(), list, &listed).ok());
  EXPECT_EQ(listed.datasets_size(), 0);
  EXPECT_EQ(UploadOrDie(csv), Sha256Hex(csv));
}

}  // namespace
}  // namespace sparrow::server
