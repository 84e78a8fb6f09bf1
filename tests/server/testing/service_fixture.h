// ServerFixture plus the helpers the per-service and bad-input tests share:
// one wrapper per RPC returning its grpc::Status, raw uploads of hand-made
// chunks, bounded polling of a job's state, the health check, bearer-token
// tenants, and a "long" job that runs until it is cancelled.
#ifndef SPARROW_TESTS_SERVER_TESTING_SERVICE_FIXTURE_H_
#define SPARROW_TESTS_SERVER_TESTING_SERVICE_FIXTURE_H_

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "gtest/gtest.h"
#include "sparrow/v1/job_state.h"
#include "tests/server/testing/server_fixture.h"

namespace sparrow::server::testing {

// Iterations of a job that, in these tests, only ends by cancellation, the
// deadline or a shutdown (SmallSpec takes about a millisecond per epoch).
inline constexpr int kLongEpochs = 100000;

inline std::string StateName(v1::Job::State s) {
  return v1::Job::State_Name(s);
}

// A STATE event's state, or STATE_UNSPECIFIED for ITERATION events.
inline std::vector<v1::Job::State> States(
    const std::vector<v1::ProgressEvent>& events) {
  std::vector<v1::Job::State> out;
  for (const auto& e : events) {
    if (e.kind() == v1::ProgressEvent::STATE) out.push_back(e.state());
  }
  return out;
}

inline int CountIterations(const std::vector<v1::ProgressEvent>& events) {
  int n = 0;
  for (const auto& e : events) n += e.kind() == v1::ProgressEvent::ITERATION;
  return n;
}

class ServiceFixture : public ServerFixture {
 protected:
  // Two tenants for the tests that configure tokens (WriteTokens).
  static constexpr char kTokenA[] = "token-alice";
  static constexpr char kTokenB[] = "token-bob";

  // Call from Configure(): writes a tokens file for tenants alice (kTokenA)
  // and bob (kTokenB) into the test's directory and points the server at it.
  void WriteTokens(ServerOptions* options) {
    std::filesystem::create_directories(dir_);
    const std::string path = (dir_ / "tokens").string();
    std::ofstream out(path);
    out << "# test tenants\n" << kTokenA << " alice\n" << kTokenB << " bob\n";
    options->tokens_file = path;
  }

  // ---- datasets ----

  // Sends exactly these messages, then closes the stream.
  grpc::Status UploadRequests(
      const std::vector<v1::UploadDatasetRequest>& requests,
      v1::UploadDatasetResponse* out = nullptr, const std::string& token = "") {
    v1::UploadDatasetResponse ignored;
    auto context = Context(token);
    auto writer = datasets_->Upload(context.get(), out ? out : &ignored);
    for (const auto& r : requests) {
      if (!writer->Write(r)) break;
    }
    writer->WritesDone();
    return writer->Finish();
  }

  static v1::UploadDatasetRequest Chunk(int64_t offset, const std::string& data,
                                        bool finish = false,
                                        const std::string& sha = "") {
    v1::UploadDatasetRequest r;
    r.set_offset(offset);
    r.set_data(data);
    r.set_finish(finish);
    r.set_sha256(sha);
    return r;
  }

  grpc::Status GetDataset(const std::string& id, v1::Dataset* out = nullptr,
                          const std::string& token = "") {
    v1::GetDatasetRequest request;
    request.set_id(id);
    v1::Dataset ignored;
    auto context = Context(token);
    return datasets_->Get(context.get(), request, out ? out : &ignored);
  }

  grpc::Status ListDatasets(int page_size, const std::string& page_token,
                            v1::ListDatasetsResponse* out,
                            const std::string& token = "") {
    v1::ListDatasetsRequest request;
    request.set_page_size(page_size);
    request.set_page_token(page_token);
    auto context = Context(token);
    return datasets_->List(context.get(), request, out);
  }

  // Every dataset id of the tenant, following page tokens.
  std::vector<std::string> AllDatasetIds(const std::string& token = "",
                                         int page_size = 0) {
    std::vector<std::string> ids;
    std::string page_token;
    do {
      v1::ListDatasetsResponse response;
      grpc::Status s = ListDatasets(page_size, page_token, &response, token);
      EXPECT_TRUE(s.ok()) << s.error_message();
      if (!s.ok()) break;
      for (const auto& d : response.datasets()) ids.push_back(d.id());
      page_token = response.next_page_token();
    } while (!page_token.empty());
    return ids;
  }

  grpc::Status DeleteDataset(const std::string& id,
                             const std::string& token = "") {
    v1::DeleteDatasetRequest request;
    request.set_id(id);
    v1::DeleteDatasetResponse response;
    auto context = Context(token);
    return datasets_->Delete(context.get(), request, &response);
  }

  // ---- jobs ----

  grpc::Status SubmitRequest(const v1::SubmitJobRequest& request, v1::Job* job,
                             const std::string& token = "") {
    v1::Job ignored;
    auto context = Context(token);
    return jobs_->Submit(context.get(), request, job ? job : &ignored);
  }

  v1::Job SubmitOrDie(const v1::JobSpec& spec, const std::string& token = "",
                      int priority = 0) {
    v1::SubmitJobRequest request;
    *request.mutable_spec() = spec;
    request.set_priority(priority);
    v1::Job job;
    grpc::Status s = SubmitRequest(request, &job, token);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return job;
  }

  grpc::Status GetJobStatus(const std::string& id, v1::Job* out = nullptr,
                            const std::string& token = "") {
    v1::GetJobRequest request;
    request.set_id(id);
    v1::Job ignored;
    auto context = Context(token);
    return jobs_->Get(context.get(), request, out ? out : &ignored);
  }

  grpc::Status ListJobs(v1::Job::State state, int page_size,
                        const std::string& page_token,
                        v1::ListJobsResponse* out,
                        const std::string& token = "") {
    v1::ListJobsRequest request;
    request.set_state(state);
    request.set_page_size(page_size);
    request.set_page_token(page_token);
    auto context = Context(token);
    return jobs_->List(context.get(), request, out);
  }

  std::vector<std::string> AllJobIds(v1::Job::State state,
                                     const std::string& token = "",
                                     int page_size = 0) {
    std::vector<std::string> ids;
    std::string page_token;
    do {
      v1::ListJobsResponse response;
      grpc::Status s = ListJobs(state, page_size, page_token, &response, token);
      EXPECT_TRUE(s.ok()) << s.error_message();
      if (!s.ok()) break;
      for (const auto& j : response.jobs()) ids.push_back(j.id());
      page_token = response.next_page_token();
    } while (!page_token.empty());
    return ids;
  }

  grpc::Status CancelJob(const std::string& id, v1::Job* out = nullptr,
                         const std::string& token = "") {
    v1::CancelJobRequest request;
    request.set_id(id);
    v1::Job ignored;
    auto context = Context(token);
    return jobs_->Cancel(context.get(), request, out ? out : &ignored);
  }

  // Polls the job (every 2 ms, at most `timeout`) until `done` holds; returns
  // the last state seen (the caller checks it).
  v1::Job WaitForJob(const std::string& id,
                     const std::function<bool(const v1::Job&)>& done,
                     const std::string& token = "",
                     absl::Duration timeout = absl::Seconds(10)) {
    const absl::Time end = absl::Now() + timeout;
    v1::Job job;
    while (true) {
      grpc::Status s = GetJobStatus(id, &job, token);
      if (!s.ok()) {
        ADD_FAILURE() << "Get " << id << ": " << s.error_message();
        return job;
      }
      if (done(job) || absl::Now() > end) return job;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }

  v1::Job WaitForState(const std::string& id, v1::Job::State state,
                       const std::string& token = "") {
    v1::Job job = WaitForJob(
        id, [&](const v1::Job& j) { return j.state() == state; }, token);
    EXPECT_EQ(job.state(), state) << job.id() << ": " << job.reason();
    return job;
  }

  v1::Job WaitForFinal(const std::string& id, const std::string& token = "") {
    v1::Job job = WaitForJob(
        id, [](const v1::Job& j) { return v1::IsFinal(j.state()); }, token);
    EXPECT_TRUE(v1::IsFinal(job.state()))
        << job.id() << " is still " << StateName(job.state());
    return job;
  }

  // Waits until the job runs and has stored at least `iterations` iterations.
  v1::Job WaitForIterations(const std::string& id, int iterations,
                            const std::string& token = "") {
    v1::Job job = WaitForJob(
        id,
        [&](const v1::Job& j) {
          return j.state() == v1::Job::RUNNING && j.iterations() >= iterations;
        },
        token);
    EXPECT_EQ(job.state(), v1::Job::RUNNING) << job.reason();
    EXPECT_GE(job.iterations(), iterations);
    return job;
  }

  // A job that keeps the (single) worker busy until it is cancelled; returns
  // once it is RUNNING.
  v1::Job StartLongJob(const std::string& dataset_id,
                       const std::string& token = "") {
    v1::Job job = SubmitOrDie(SmallSpec(dataset_id, kLongEpochs), token);
    return WaitForState(job.id(), v1::Job::RUNNING, token);
  }

  void CancelAndWait(const std::string& id, const std::string& token = "") {
    grpc::Status s = CancelJob(id, nullptr, token);
    EXPECT_TRUE(s.ok()) << s.error_message();
    WaitForState(id, v1::Job::CANCELLED, token);
  }

  // A finished SmallSpec job (for the model service).
  v1::Job TrainedJob(const std::string& dataset_id,
                     const std::string& token = "", int epochs = 20) {
    v1::Job job = SubmitOrDie(SmallSpec(dataset_id, epochs), token);
    return WaitForState(job.id(), v1::Job::SUCCEEDED, token);
  }

  // ---- models ----

  grpc::Status GetModel(const std::string& job_id,
                        v1::TrainedModel* out = nullptr,
                        const std::string& token = "") {
    v1::GetModelRequest request;
    request.set_job_id(job_id);
    v1::TrainedModel ignored;
    auto context = Context(token);
    return models_->Get(context.get(), request, out ? out : &ignored);
  }

  grpc::Status Export(const std::string& job_id,
                      v1::ExportModelRequest::Format format,
                      v1::ExportModelResponse* out = nullptr,
                      const std::string& token = "") {
    v1::ExportModelRequest request;
    request.set_job_id(job_id);
    request.set_format(format);
    v1::ExportModelResponse ignored;
    auto context = Context(token);
    return models_->Export(context.get(), request, out ? out : &ignored);
  }

  grpc::Status Predict(const v1::PredictRequest& request,
                       v1::PredictResponse* out = nullptr,
                       const std::string& token = "") {
    v1::PredictResponse ignored;
    auto context = Context(token);
    return models_->Predict(context.get(), request, out ? out : &ignored);
  }

  grpc::Status Predict(const std::string& job_id, const std::string& csv,
                       v1::PredictResponse* out = nullptr,
                       const std::string& token = "") {
    v1::PredictRequest request;
    request.set_job_id(job_id);
    request.set_csv(csv);
    return Predict(request, out, token);
  }

  // ---- health ----

  // grpc.health.v1.Health/Check for the whole server ("").
  grpc::Status Health(
      grpc::health::v1::HealthCheckResponse::ServingStatus* status) {
    auto health = grpc::health::v1::Health::NewStub(channel_);
    grpc::health::v1::HealthCheckRequest request;
    grpc::health::v1::HealthCheckResponse response;
    auto context = Context();
    grpc::Status s = health->Check(context.get(), request, &response);
    *status = response.status();
    return s;
  }
};

}  // namespace sparrow::server::testing

#endif  // SPARROW_TESTS_SERVER_TESTING_SERVICE_FIXTURE_H_
