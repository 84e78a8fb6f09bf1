// RPC request bytes -> an in-process sparrowd (SQLite store in a temporary
// directory, one worker): the services' own checks, JobManager::Submit's
// validation against the stored dataset, the store queries and Predict.
//
// Input: the first byte picks the method; the rest is its request message in
// the protobuf wire format (for Upload, a sequence of varint-length-prefixed
// UploadDatasetRequest chunks). So that short inputs reach past the lookups,
// a few placeholder strings are replaced before the call: "@dataset" by the id
// of a dataset uploaded at start-up, "@job" by the id of a job that trained on
// it and succeeded, and, in an upload's last chunk, "@sha" by the SHA-256 of
// the chunks' data. Jobs that the fuzzer submits are cancelled at once, and
// the server's limits are small, so that the worker stays mostly idle.
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "fuzz/fuzz_common.h"
#include "google/protobuf/io/coded_stream.h"
#include "grpcpp/grpcpp.h"
#include "server/server.h"
#include "sparrow/v1/datasets.grpc.pb.h"
#include "sparrow/v1/jobs.grpc.pb.h"
#include "sparrow/v1/model_service.grpc.pb.h"
#include "translate/json.h"
#include "translate/sha256.h"

namespace {

namespace v1 = sparrow::v1;

void Check(bool condition, const char* what) {
  if (!condition) {
    fprintf(stderr, "rpc_fuzz setup: %s\n", what);
    std::abort();
  }
}

struct Env {
  std::filesystem::path dir;
  std::unique_ptr<sparrow::server::SparrowServer> server;
  std::unique_ptr<v1::DatasetService::Stub> datasets;
  std::unique_ptr<v1::JobService::Stub> jobs;
  std::unique_ptr<v1::ModelService::Stub> models;
  std::string dataset_id, job_id;
};

Env* env = nullptr;

std::unique_ptr<grpc::ClientContext> Context() {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() +
                        std::chrono::seconds(10));
  return context;
}

void Substitute(std::string* s) {
  if (*s == "@dataset") *s = env->dataset_id;
  if (*s == "@job") *s = env->job_id;
}

grpc::Status Upload(std::vector<v1::UploadDatasetRequest> chunks) {
  std::string content;
  for (auto& c : chunks) {
    content += c.data();
    if (c.sha256() == "@sha")
      c.set_sha256(sparrow::translate::Sha256Hex(content));
  }
  v1::UploadDatasetResponse response;
  auto context = Context();
  auto writer = env->datasets->Upload(context.get(), &response);
  for (const auto& c : chunks) {
    if (!writer->Write(c)) break;
  }
  writer->WritesDone();
  return writer->Finish();
}

void Cleanup() {
  if (env != nullptr) std::filesystem::remove_all(env->dir);
}

Env* Start() {
  env = new Env;
  const std::filesystem::path base =
      std::filesystem::exists("/dev/shm")
          ? "/dev/shm"
          : std::filesystem::temp_directory_path();
  env->dir = base / ("sparrow-rpc-fuzz-" + std::to_string(getpid()));
  std::filesystem::remove_all(env->dir);
  std::atexit(Cleanup);
  sparrow::server::ServerOptions options;
  options.listen = "127.0.0.1:0";
  options.data_dir = env->dir.string();
  options.jobs.workers = 1;
  options.jobs.worker_binary = SPARROW_WORKER_BINARY;
  options.jobs.limits.max_upload_bytes = 1 << 20;
  options.jobs.limits.max_model_params = 2000;
  options.jobs.limits.job_deadline_seconds = 5;
  auto server = sparrow::server::SparrowServer::Start(options);
  Check(server.ok(), "cannot start sparrowd");
  env->server = *std::move(server);
  auto channel = grpc::CreateChannel(env->server->address(),
                                     grpc::InsecureChannelCredentials());
  env->datasets = v1::DatasetService::NewStub(channel);
  env->jobs = v1::JobService::NewStub(channel);
  env->models = v1::ModelService::NewStub(channel);

  const std::string csv = sparrow::fuzz::SmallCsv();
  v1::UploadDatasetRequest chunk;
  chunk.set_name("small.csv");
  chunk.set_data(csv);
  chunk.set_finish(true);
  chunk.set_sha256(sparrow::translate::Sha256Hex(csv));
  env->dataset_id = chunk.sha256();
  Check(Upload({chunk}).ok(), "cannot upload the dataset");

  auto spec =
      sparrow::translate::ParseJobSpecJson(sparrow::fuzz::kSmallSpecs[0]);
  Check(spec.ok(), "bad spec");
  spec->mutable_data()->set_dataset_id(env->dataset_id);
  v1::SubmitJobRequest submit;
  *submit.mutable_spec() = *spec;
  v1::Job job;
  Check(env->jobs->Submit(Context().get(), submit, &job).ok(), "cannot submit");
  env->job_id = job.id();
  for (int i = 0; i < 3000 && job.state() != v1::Job::SUCCEEDED; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    v1::GetJobRequest get;
    get.set_id(env->job_id);
    Check(env->jobs->Get(Context().get(), get, &job).ok(), "cannot get job");
  }
  Check(job.state() == v1::Job::SUCCEEDED, "the job did not succeed");
  return env;
}

template <typename Request>
bool Parse(const uint8_t* bytes, size_t size, Request* request) {
  return request->ParseFromArray(bytes, static_cast<int>(size));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  static Env* const e = Start();
  if (size < 1) return 0;
  const uint8_t method = bytes[0];
  ++bytes;
  --size;
  switch (method % 12) {
    case 0: {  // DatasetService.Upload
      std::vector<v1::UploadDatasetRequest> chunks;
      google::protobuf::io::CodedInputStream in(bytes, static_cast<int>(size));
      uint32_t length = 0;
      while (chunks.size() < 16 && in.ReadVarint32(&length)) {
        const auto limit = in.PushLimit(static_cast<int>(length));
        v1::UploadDatasetRequest chunk;
        if (!chunk.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage()) {
          return 0;
        }
        in.PopLimit(limit);
        chunks.push_back(std::move(chunk));
      }
      (void)Upload(std::move(chunks));
      break;
    }
    case 1: {  // DatasetService.Get
      v1::GetDatasetRequest request;
      if (!Parse(bytes, size, &request)) return 0;
      Substitute(request.mutable_id());
      v1::Dataset response;
      (void)e->datasets->Get(Context().get(), request, &response);
      break;
    }
    case 2: {  // DatasetService.List
      v1::ListDatasetsRequest request;
      if (!Parse(bytes, size, &request)) return 0;
      v1::ListDatasetsResponse response;
      (void)e->datasets->List(Context().get(), request, &response);
      break;
    }
    case 3: {  // JobService.Submit; an accepted job is cancelled at once
      v1::SubmitJobRequest request;
      if (!Parse(bytes, size, &request)) return 0;
      Substitute(request.mutable_spec()->mutable_data()->mutable_dataset_id());
      v1::Job job;
      if (e->jobs->Submit(Context().get(), request, &job).ok() &&
          job.id() != e->job_id) {
        v1::CancelJobRequest cancel;
        cancel.set_id(job.id());
        (void)e->jobs->Cancel(Context().get(), cancel, &job);
      }
      break;
    }
    case 4: {  // JobService.Get
      v1::GetJobRequest request;
      if (!Parse(bytes, size, &request)) return 0;
      Substitute(request.mutable_id());
      v1::Job response;
      (void)e->jobs->Get(Context().get(), request, &response);
      break;
    }
    case 5: {  // JobService.List
      v1::ListJobsRequest request;
      if (!Parse(bytes, size, &request)) return 0;
      v1::ListJobsResponse response;
      (void)e->jobs->List(Context().get(), request, &response);
      break;
    }
    case 6: {  // JobService.Cancel (the trained job has finished: a no-op)
      v1::CancelJobRequest request;
      if (!Parse(bytes, size, &request)) return 0;
      Substitute(request.mutable_id());
      v1::Job response;
      (void)e->jobs->Cancel(Context().get(), request, &response);
      break;
    }
    case 7: {  // JobService.Watch, read to the end
      v1::WatchJobRequest request;
      if (!Parse(bytes, size, &request)) return 0;
      Substitute(request.mutable_id());
      auto context = Context();
      auto reader = e->jobs->Watch(context.get(), request);
      v1::ProgressEvent event;
      while (reader->Read(&event)) {
      }
      (void)reader->Finish();
      break;
    }
    case 8: {  // ModelService.Get
      v1::GetModelRequest request;
      if (!Parse(bytes, size, &request)) return 0;
      Substitute(request.mutable_job_id());
      v1::TrainedModel response;
      (void)e->models->Get(Context().get(), request, &response);
      break;
    }
    case 9: {  // ModelService.Export
      v1::ExportModelRequest request;
      if (!Parse(bytes, size, &request)) return 0;
      Substitute(request.mutable_job_id());
      v1::ExportModelResponse response;
      (void)e->models->Export(Context().get(), request, &response);
      break;
    }
    case 10: {  // ModelService.Predict
      v1::PredictRequest request;
      if (!Parse(bytes, size, &request)) return 0;
      Substitute(request.mutable_job_id());
      v1::PredictResponse response;
      (void)e->models->Predict(Context().get(), request, &response);
      break;
    }
    case 11: {  // DatasetService.Delete, never of the shared dataset
      v1::DeleteDatasetRequest request;
      if (!Parse(bytes, size, &request)) return 0;
      if (request.id() == e->dataset_id || request.id() == "@dataset") {
        return 0;
      }
      v1::DeleteDatasetResponse response;
      (void)e->datasets->Delete(Context().get(), request, &response);
      break;
    }
  }
  return 0;
}
