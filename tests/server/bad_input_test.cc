// The bad-input catalogue: malformed requests to every service, each of which
// must be answered with its status code while the server stays healthy and
// keeps what it stored. One server takes the whole table in sequence; after
// every case it must still serve the health check and a listing, with neither
// a dataset nor a job more than before.
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "server/service/dataset_service.h"
#include "tests/server/testing/service_fixture.h"

namespace sparrow::server {
namespace {

using testing::ServiceFixture;
using testing::SmallSpec;
using testing::TanksCsv;

// Who answers a bad request: sparrowd, or gRPC before the call reaches it
// (messages over the size limit, requests that do not parse).
enum class By { kServer, kGrpc };

struct BadInput {
  BadInput(std::string name, grpc::StatusCode code,
           std::function<grpc::Status()> call, std::string mentions = "",
           By by = By::kServer)
      : name(std::move(name)),
        code(code),
        call(std::move(call)),
        mentions(std::move(mentions)),
        by(by) {}
  std::string name;
  grpc::StatusCode code;
  std::function<grpc::Status()> call;
  // A substring the error message must contain ("" = not checked).
  std::string mentions;
  By by;
};

class BadInputTest : public ServiceFixture {
 protected:
  static constexpr int kMaxMessageBytes = 64 << 10;

  void Configure(ServerOptions* options) override {
    WriteTokens(options);
    options->jobs.limits.max_message_bytes = kMaxMessageBytes;
  }

  void SetUp() override {
    ServiceFixture::SetUp();
    csv_ = TanksCsv();
    dataset_ = UploadOrDie(csv_, kTokenA);
    bob_dataset_ = UploadOrDie(TanksCsv(400, 2), kTokenB);
    v1::SubmitJobRequest request;
    *request.mutable_spec() = SmallSpec(dataset_, 5);
    request.set_request_id("catalogue");
    v1::Job job;
    ASSERT_TRUE(SubmitRequest(request, &job, kTokenA).ok());
    job_ = WaitForState(job.id(), v1::Job::SUCCEEDED, kTokenA).id();
    bob_job_ = TrainedJob(bob_dataset_, kTokenB, 5).id();
    // Cancelled while it waits behind a running job (one worker): it never
    // ran, so it has no model.
    const std::string running =
        SubmitOrDie(SmallSpec(dataset_, 100000), kTokenA).id();
    WaitForState(running, v1::Job::RUNNING, kTokenA);
    cancelled_job_ = SubmitOrDie(SmallSpec(dataset_, 100000), kTokenA).id();
    EXPECT_TRUE(CancelJob(cancelled_job_, nullptr, kTokenA).ok());
    WaitForState(cancelled_job_, v1::Job::CANCELLED, kTokenA);
    EXPECT_TRUE(CancelJob(running, nullptr, kTokenA).ok());
    WaitForState(running, v1::Job::CANCELLED, kTokenA);
  }

  // ---- request builders (all as tenant A unless said otherwise) ----

  grpc::Status Chunks(const std::vector<v1::UploadDatasetRequest>& chunks,
                      const std::string& token = kTokenA) {
    return UploadRequests(chunks, nullptr, token);
  }

  // The whole content in one well-formed message.
  grpc::Status UploadCsv(const std::string& content) {
    return Chunks({Chunk(0, content, true, Sha256Hex(content))});
  }

  // SmallSpec on tenant A's dataset, changed by `edit`.
  grpc::Status SubmitSpec(const std::function<void(v1::JobSpec*)>& edit,
                          const std::string& token = kTokenA) {
    v1::JobSpec spec = SmallSpec(dataset_, 5);
    edit(&spec);
    v1::Job job;
    return Submit(spec, &job, "", token);
  }

  grpc::Status WatchFrom(const std::string& id, int64_t after_seq,
                         const std::string& token = kTokenA) {
    std::vector<v1::ProgressEvent> events;
    grpc::Status s = Watch(id, after_seq, &events, token);
    if (s.ok() || !events.empty()) {
      ADD_FAILURE() << "Watch " << id << " sent " << events.size() << " events";
    }
    return s;
  }

  grpc::Status PredictCsv(const std::string& job_id, const std::string& csv) {
    return Predict(job_id, csv, nullptr, kTokenA);
  }

  std::vector<BadInput> Catalogue();

  std::string csv_, dataset_, bob_dataset_, job_, bob_job_, cancelled_job_;
};

std::vector<BadInput> BadInputTest::Catalogue() {
  using grpc::StatusCode;
  const std::string head = csv_.substr(0, 100);
  const std::string tail = csv_.substr(100);
  const std::string sha = Sha256Hex(csv_);
  const std::string unknown_job = "job-00000000deadbeef";
  const std::string unknown_dataset = Sha256Hex("never uploaded");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<BadInput> c;

  // ---- uploads: the stream ----
  c.push_back({"upload ended without finish", StatusCode::INVALID_ARGUMENT,
               [=] {
                 return Chunks({Chunk(0, head), Chunk(100, tail)});
               },
               "finish"});
  c.push_back({"upload with no messages at all", StatusCode::INVALID_ARGUMENT,
               [=] { return Chunks({}); }});
  c.push_back({"upload chunks out of order", StatusCode::INVALID_ARGUMENT,
               [=] {
                 return Chunks({Chunk(100, tail, true, sha), Chunk(0, head)});
               },
               "offset"});
  c.push_back(
      {"upload chunks overlapping (offset goes back)",
       StatusCode::INVALID_ARGUMENT,
       [=] {
         return Chunks({Chunk(0, head), Chunk(50, csv_.substr(50), true, sha)});
       },
       "offset 50"});
  c.push_back({"upload chunk repeated", StatusCode::INVALID_ARGUMENT, [=] {
                 return Chunks({Chunk(0, head), Chunk(0, head),
                                Chunk(100, tail, true, sha)});
               }});
  c.push_back({"upload with a gap", StatusCode::INVALID_ARGUMENT,
               [=] {
                 return Chunks(
                     {Chunk(0, head), Chunk(110, csv_.substr(110), true, sha)});
               },
               "offset 110"});
  c.push_back({"upload with a negative offset", StatusCode::INVALID_ARGUMENT,
               [=] { return Chunks({Chunk(-1, csv_, true, sha)}); }});
  c.push_back(
      {"upload with the wrong sha256", StatusCode::INVALID_ARGUMENT,
       [=] { return Chunks({Chunk(0, csv_, true, Sha256Hex(csv_ + "x"))}); },
       "sha256"});
  c.push_back({"upload with a truncated body and the full sha256",
               StatusCode::INVALID_ARGUMENT,
               [=] { return Chunks({Chunk(0, head, true, sha)}); }, "sha256"});
  c.push_back({"upload without sha256", StatusCode::INVALID_ARGUMENT,
               [=] { return Chunks({Chunk(0, csv_, true, "")}); }, "sha256"});
  c.push_back({"upload with a non-hex sha256", StatusCode::INVALID_ARGUMENT,
               [=] { return Chunks({Chunk(0, csv_, true, "zz")}); }});
  c.push_back({"upload of a single message bigger than the message limit",
               StatusCode::RESOURCE_EXHAUSTED,
               [=] {
                 const std::string big = TanksCsv(3000);
                 EXPECT_GT(big.size(), static_cast<size_t>(kMaxMessageBytes));
                 return UploadCsv(big);
               },
               "", By::kGrpc});
  c.push_back({"upload without a token", StatusCode::UNAUTHENTICATED,
               [=] { return Chunks({Chunk(0, csv_, true, sha)}, ""); }});
  c.push_back({"upload with an unknown token", StatusCode::UNAUTHENTICATED,
               [=] { return Chunks({Chunk(0, csv_, true, sha)}, "bogus"); }});

  // ---- uploads: the content ----
  c.push_back({"empty upload", StatusCode::INVALID_ARGUMENT,
               [=] { return UploadCsv(""); }, "empty"});
  c.push_back({"non-CSV bytes", StatusCode::INVALID_ARGUMENT, [=] {
                 return UploadCsv(
                     std::string("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16));
               }});
  // Values are not checked at upload (a job converts only the columns it
  // selects; DatasetServiceTest.UploadKeepsTextAndMissingCells), the
  // structure is.
  c.push_back({"ragged CSV (a row too long)", StatusCode::INVALID_ARGUMENT,
               [=] { return UploadCsv("u,y\n1,2\n3,4,5\n"); }, "line 3"});
  c.push_back({"ragged CSV (a row too short)", StatusCode::INVALID_ARGUMENT,
               [=] { return UploadCsv("u,y\n1,2\n3\n"); }, "line 3"});
  c.push_back({"header only", StatusCode::INVALID_ARGUMENT,
               [=] { return UploadCsv("u,y\n"); }, "no data rows"});
  c.push_back({"duplicate header names", StatusCode::INVALID_ARGUMENT,
               [=] { return UploadCsv("u,u\n1,2\n"); }, "duplicate"});
  c.push_back({"empty header name", StatusCode::INVALID_ARGUMENT,
               [=] { return UploadCsv("u,,y\n1,2,3\n"); }});

  // ---- datasets ----
  c.push_back({"get an unknown dataset", StatusCode::NOT_FOUND,
               [=] { return GetDataset(unknown_dataset, nullptr, kTokenA); }});
  c.push_back({"get another tenant's dataset", StatusCode::NOT_FOUND,
               [=] { return GetDataset(bob_dataset_, nullptr, kTokenA); }});
  c.push_back({"delete an unknown dataset", StatusCode::NOT_FOUND,
               [=] { return DeleteDataset(unknown_dataset, kTokenA); }});
  c.push_back({"delete another tenant's dataset", StatusCode::NOT_FOUND,
               [=] { return DeleteDataset(bob_dataset_, kTokenA); }});
  c.push_back({"list datasets with a negative page_size",
               StatusCode::INVALID_ARGUMENT,
               [=] {
                 v1::ListDatasetsResponse r;
                 return ListDatasets(-1, "", &r, kTokenA);
               },
               "page_size"});
  c.push_back({"list datasets with a forged page_token",
               StatusCode::INVALID_ARGUMENT,
               [=] {
                 v1::ListDatasetsResponse r;
                 return ListDatasets(0, "ZGF0YXNldHM6LTU", &r, kTokenA);
               },
               "page_token"});

  // ---- submit: data ----
  c.push_back({"spec with an unknown input column",
               StatusCode::INVALID_ARGUMENT,
               [=] {
                 return SubmitSpec([](v1::JobSpec* s) {
                   s->mutable_data()->set_inputs(0, "v");
                 });
               },
               "spec.data.inputs"});
  c.push_back({"spec with an unknown output column",
               StatusCode::INVALID_ARGUMENT,
               [=] {
                 return SubmitSpec([](v1::JobSpec* s) {
                   s->mutable_data()->set_outputs(0, "force");
                 });
               },
               "force"});
  c.push_back({"spec with a column index beyond the table",
               StatusCode::INVALID_ARGUMENT, [=] {
                 return SubmitSpec([](v1::JobSpec* s) {
                   s->mutable_data()->set_inputs(0, "7");
                 });
               }});
  c.push_back(
      {"spec with an unknown trace column", StatusCode::INVALID_ARGUMENT, [=] {
         return SubmitSpec([](v1::JobSpec* s) {
           s->mutable_data()->set_trace_column("run");
         });
       }});
  c.push_back({"spec with no input columns", StatusCode::INVALID_ARGUMENT,
               [=] {
                 return SubmitSpec(
                     [](v1::JobSpec* s) { s->mutable_data()->clear_inputs(); });
               },
               "inputs"});
  c.push_back({"spec with csv_path instead of dataset_id",
               StatusCode::INVALID_ARGUMENT,
               [=] {
                 return SubmitSpec([](v1::JobSpec* s) {
                   s->mutable_data()->set_csv_path("/etc/passwd");
                 });
               },
               "dataset_id"});
  c.push_back({"spec with no data source", StatusCode::INVALID_ARGUMENT,
               [=] {
                 return SubmitSpec(
                     [](v1::JobSpec* s) { s->mutable_data()->clear_source(); });
               },
               "dataset_id"});
  c.push_back({"spec with an unknown dataset", StatusCode::NOT_FOUND, [=] {
                 return SubmitSpec([&](v1::JobSpec* s) {
                   s->mutable_data()->set_dataset_id(unknown_dataset);
                 });
               }});
  c.push_back(
      {"spec with another tenant's dataset", StatusCode::NOT_FOUND, [=] {
         return SubmitSpec([&](v1::JobSpec* s) {
           s->mutable_data()->set_dataset_id(bob_dataset_);
         });
       }});
  c.push_back({"spec with a split beyond the data",
               StatusCode::INVALID_ARGUMENT,
               [=] {
                 return SubmitSpec([](v1::JobSpec* s) {
                   s->mutable_split()->mutable_test(0)->set_last(10000);
                 });
               },
               "split.test"});
  c.push_back({"spec with a test split overlapping the training split",
               StatusCode::INVALID_ARGUMENT,
               [=] {
                 return SubmitSpec([](v1::JobSpec* s) {
                   s->mutable_split()->mutable_test(0)->set_first(200);
                 });
               },
               "overlaps"});
  c.push_back({"spec with a validation split overlapping the training split",
               StatusCode::INVALID_ARGUMENT,
               [=] {
                 return SubmitSpec([](v1::JobSpec* s) {
                   auto* v = s->mutable_split()->add_validation();
                   v->set_first(300);
                   v->set_last(320);
                 });
               },
               "split.validation overlaps"});
  c.push_back({"spec giving one column two roles", StatusCode::INVALID_ARGUMENT,
               [=] {
                 return SubmitSpec([](v1::JobSpec* s) {
                   s->mutable_data()->set_outputs(0, "0");  // = "u"
                 });
               },
               "selected twice"});
  c.push_back({"spec with test columns that do not match the inputs",
               StatusCode::INVALID_ARGUMENT,
               [=] {
                 return SubmitSpec([](v1::JobSpec* s) {
                   s->mutable_data()->add_test_inputs("u");
                 });
               },
               "test_inputs"});
  c.push_back({"spec with train_fraction 2", StatusCode::INVALID_ARGUMENT,
               [=] {
                 return SubmitSpec([](v1::JobSpec* s) {
                   s->mutable_split()->set_train_fraction(2);
                 });
               },
               "train_fraction"});

  // ---- submit: absurd options ----
  c.push_back({"negative max_epochs", StatusCode::INVALID_ARGUMENT,
               [=] {
                 return SubmitSpec([](v1::JobSpec* s) {
                   s->mutable_stopping()->set_max_epochs(-3);
                 });
               },
               "stopping.max_epochs"});
  c.push_back({"hidden layer of size -5", StatusCode::INVALID_ARGUMENT,
               [=] {
                 return SubmitSpec([](v1::JobSpec* s) {
                   s->mutable_model()->mutable_narx_mlp()->set_hidden(0, -5);
                 });
               },
               "-5"});
  c.push_back({"negative lag", StatusCode::INVALID_ARGUMENT,
               [=] {
                 return SubmitSpec([](v1::JobSpec* s) {
                   s->mutable_model()->mutable_narx_mlp()->set_input_lags(-1);
                 });
               },
               "input_lags"});
  c.push_back({"model over max_model_params", StatusCode::RESOURCE_EXHAUSTED,
               [=] {
                 return SubmitSpec([](v1::JobSpec* s) {
                   // 1e8 parameters: over the server's limit but within
                   // what a model can have (2^31 - 1; more is
                   // INVALID_ARGUMENT, like a layer above 100000).
                   auto* narx = s->mutable_model()->mutable_narx_mlp();
                   narx->set_hidden(0, 10000);
                   narx->add_hidden(10000);
                 });
               },
               "--max-model-params"});
  c.push_back({"learning rate NaN", StatusCode::INVALID_ARGUMENT,
               [=] {
                 return SubmitSpec([=](v1::JobSpec* s) {
                   s->mutable_optimizer()->mutable_adam()->set_learning_rate(
                       nan);
                 });
               },
               "learning_rate"});
  c.push_back({"negative learning rate", StatusCode::INVALID_ARGUMENT,
               [=] {
                 return SubmitSpec([](v1::JobSpec* s) {
                   s->mutable_optimizer()->mutable_adam()->set_learning_rate(
                       -0.1);
                 });
               },
               "learning_rate"});
  c.push_back({"beta1 of 1", StatusCode::INVALID_ARGUMENT,
               [=] {
                 return SubmitSpec([](v1::JobSpec* s) {
                   s->mutable_optimizer()->mutable_adam()->set_beta1(1);
                 });
               },
               "beta1"});
  c.push_back({"negative batch size", StatusCode::INVALID_ARGUMENT,
               [=] {
                 return SubmitSpec([](v1::JobSpec* s) {
                   s->mutable_optimizer()
                       ->mutable_adam()
                       ->mutable_batch()
                       ->set_batch_size(-8);
                 });
               },
               "batch_size"});
  c.push_back({"init_scale NaN", StatusCode::INVALID_ARGUMENT,
               [=] {
                 return SubmitSpec([=](v1::JobSpec* s) {
                   s->mutable_model()->set_init_scale(nan);
                 });
               },
               "init_scale"});
  c.push_back({"negative rho_theta", StatusCode::INVALID_ARGUMENT,
               [=] {
                 return SubmitSpec([](v1::JobSpec* s) {
                   s->mutable_regularization()->set_rho_theta(-1);
                 });
               },
               "rho_theta"});
  c.push_back({"negative report_every", StatusCode::INVALID_ARGUMENT,
               [=] {
                 return SubmitSpec([](v1::JobSpec* s) {
                   s->mutable_stopping()->set_report_every(-1);
                 });
               },
               "report_every"});
  c.push_back({"unknown loss enum value", StatusCode::INVALID_ARGUMENT,
               [=] {
                 return SubmitSpec([](v1::JobSpec* s) {
                   s->mutable_loss()->set_kind(static_cast<v1::LossKind>(99));
                 });
               },
               "loss.kind"});
  c.push_back({"unknown activation enum value", StatusCode::INVALID_ARGUMENT,
               [=] {
                 return SubmitSpec([](v1::JobSpec* s) {
                   s->mutable_model()->mutable_narx_mlp()->set_activation(
                       static_cast<v1::Activation>(77));
                 });
               },
               "activation"});
  c.push_back(
      {"unknown field in the optimizer options", StatusCode::INVALID_ARGUMENT,
       [=] {
         return SubmitSpec([](v1::JobSpec* s) {
           auto* adam = s->mutable_optimizer()->mutable_adam();
           adam->GetReflection()->MutableUnknownFields(adam)->AddVarint(99, 1);
         });
       },
       "spec.optimizer.adam"});
  c.push_back({"no model", StatusCode::INVALID_ARGUMENT,
               [=] {
                 return SubmitSpec(
                     [](v1::JobSpec* s) { s->mutable_model()->clear_kind(); });
               },
               "model"});
  c.push_back({"no optimizer", StatusCode::INVALID_ARGUMENT,
               [=] {
                 return SubmitSpec(
                     [](v1::JobSpec* s) { s->mutable_optimizer()->Clear(); });
               },
               "optimizer"});
  c.push_back({"optimizer that does not train this model",
               StatusCode::INVALID_ARGUMENT,
               [=] {
                 return SubmitSpec([](v1::JobSpec* s) {
                   s->mutable_optimizer()->mutable_nails();
                 });
               },
               "nails"});
  c.push_back({"penalty without an ADMM optimizer",
               StatusCode::INVALID_ARGUMENT,
               [=] {
                 return SubmitSpec([](v1::JobSpec* s) {
                   s->mutable_regularization()->mutable_l1()->set_tau(0.1);
                 });
               },
               "ADMM"});
  c.push_back({"rls without a minibatch size", StatusCode::INVALID_ARGUMENT,
               [=] {
                 return SubmitSpec([](v1::JobSpec* s) {
                   s->mutable_optimizer()->mutable_rls();
                 });
               },
               "optimizer.rls"});
  c.push_back({"request_id reused with another spec",
               StatusCode::ALREADY_EXISTS,
               [=] {
                 v1::SubmitJobRequest request;
                 *request.mutable_spec() = SmallSpec(dataset_, 6);
                 request.set_request_id("catalogue");
                 return SubmitRequest(request, nullptr, kTokenA);
               },
               job_});
  c.push_back({"submit without a token", StatusCode::UNAUTHENTICATED,
               [=] { return SubmitSpec([](v1::JobSpec*) {}, ""); }});

  // ---- jobs ----
  c.push_back({"get an unknown job", StatusCode::NOT_FOUND,
               [=] { return GetJobStatus(unknown_job, nullptr, kTokenA); },
               unknown_job});
  c.push_back({"get another tenant's job", StatusCode::NOT_FOUND,
               [=] { return GetJobStatus(bob_job_, nullptr, kTokenA); }});
  c.push_back({"cancel an unknown job", StatusCode::NOT_FOUND,
               [=] { return CancelJob(unknown_job, nullptr, kTokenA); }});
  c.push_back({"cancel another tenant's job", StatusCode::NOT_FOUND,
               [=] { return CancelJob(bob_job_, nullptr, kTokenA); }});
  c.push_back({"cancel a finished job", StatusCode::FAILED_PRECONDITION,
               [=] { return CancelJob(job_, nullptr, kTokenA); }});
  c.push_back({"watch an unknown job", StatusCode::NOT_FOUND,
               [=] { return WatchFrom(unknown_job, 0); }});
  c.push_back({"watch another tenant's job", StatusCode::NOT_FOUND,
               [=] { return WatchFrom(bob_job_, 0); }});
  c.push_back({"watch with a negative after_seq", StatusCode::INVALID_ARGUMENT,
               [=] { return WatchFrom(job_, -1); }, "after_seq"});
  c.push_back({"watch without a token", StatusCode::UNAUTHENTICATED,
               [=] { return WatchFrom(job_, 0, ""); }});
  c.push_back({"list jobs with an invalid state", StatusCode::INVALID_ARGUMENT,
               [=] {
                 v1::ListJobsResponse r;
                 return ListJobs(static_cast<v1::Job::State>(17), 0, "", &r,
                                 kTokenA);
               },
               "state"});
  c.push_back({"list jobs with a negative page_size",
               StatusCode::INVALID_ARGUMENT, [=] {
                 v1::ListJobsResponse r;
                 return ListJobs(v1::Job::STATE_UNSPECIFIED,
                                 std::numeric_limits<int32_t>::min(), "", &r,
                                 kTokenA);
               }});
  c.push_back({"list jobs with a garbage page_token",
               StatusCode::INVALID_ARGUMENT,
               [=] {
                 v1::ListJobsResponse r;
                 return ListJobs(v1::Job::STATE_UNSPECIFIED, 0,
                                 "%%not a token%%", &r, kTokenA);
               },
               "page_token"});

  // ---- models ----
  c.push_back({"model of an unknown job", StatusCode::NOT_FOUND,
               [=] { return GetModel(unknown_job, nullptr, kTokenA); }});
  c.push_back({"model of another tenant's job", StatusCode::NOT_FOUND,
               [=] { return GetModel(bob_job_, nullptr, kTokenA); }});
  c.push_back({"model of a job cancelled before it ran",
               StatusCode::FAILED_PRECONDITION,
               [=] { return GetModel(cancelled_job_, nullptr, kTokenA); },
               "kept no model"});
  c.push_back({"export in an invalid format", StatusCode::INVALID_ARGUMENT,
               [=] {
                 return Export(job_,
                               static_cast<v1::ExportModelRequest::Format>(5),
                               nullptr, kTokenA);
               },
               "format"});
  c.push_back({"export another tenant's model", StatusCode::NOT_FOUND, [=] {
                 return Export(bob_job_, v1::ExportModelRequest::PROTO, nullptr,
                               kTokenA);
               }});
  c.push_back({"predict with an unknown job", StatusCode::NOT_FOUND,
               [=] { return PredictCsv(unknown_job, csv_); }});
  c.push_back({"predict with another tenant's model", StatusCode::NOT_FOUND,
               [=] { return PredictCsv(bob_job_, csv_); }});
  c.push_back({"predict with a job that kept no model",
               StatusCode::FAILED_PRECONDITION,
               [=] { return PredictCsv(cancelled_job_, csv_); }});
  c.push_back({"predict with a CSV missing the model's columns",
               StatusCode::INVALID_ARGUMENT,
               [=] { return PredictCsv(job_, "a,b\n1,2\n"); }, "'u'"});
  c.push_back({"predict with NaN in the CSV", StatusCode::INVALID_ARGUMENT,
               [=] { return PredictCsv(job_, "u,y\n1,2\n3,nan\n"); }});
  c.push_back({"predict with non-CSV bytes", StatusCode::INVALID_ARGUMENT,
               [=] { return PredictCsv(job_, std::string("\0\1\2\3", 4)); }});
  c.push_back({"predict with a negative x0_samples",
               StatusCode::INVALID_ARGUMENT,
               [=] {
                 v1::PredictRequest r;
                 r.set_job_id(job_);
                 r.set_csv(csv_);
                 r.set_x0_samples(-4);
                 return Predict(r, nullptr, kTokenA);
               },
               "x0_samples"});
  c.push_back({"predict with a CSV bigger than the message limit",
               StatusCode::RESOURCE_EXHAUSTED,
               [=] { return PredictCsv(job_, TanksCsv(3000)); }, "",
               By::kGrpc});
  // A proto3 string must be UTF-8; the request does not parse. gRPC 1.51's
  // callback API answers such a request UNIMPLEMENTED, with no message,
  // before sparrowd sees it.
  c.push_back({"request that does not parse (invalid UTF-8 in a string)",
               StatusCode::UNIMPLEMENTED,
               [=] {
                 v1::ListJobsResponse r;
                 return ListJobs(v1::Job::STATE_UNSPECIFIED, 0,
                                 std::string("\xff\xfe", 2), &r, kTokenA);
               },
               "", By::kGrpc});
  return c;
}

TEST_F(BadInputTest, EveryMalformedRequestGetsItsCodeAndTheServerStaysUp) {
  const std::vector<BadInput> catalogue = Catalogue();
  ASSERT_GE(catalogue.size(), 25u);
  std::vector<std::string> datasets = AllDatasetIds(kTokenA);
  std::vector<std::string> jobs =
      AllJobIds(v1::Job::STATE_UNSPECIFIED, kTokenA);
  ASSERT_EQ(datasets.size(), 1u);
  ASSERT_EQ(jobs.size(), 3u);
  for (const BadInput& bad : catalogue) {
    SCOPED_TRACE(bad.name);
    const grpc::Status s = bad.call();
    EXPECT_EQ(s.error_code(), bad.code) << s.error_message();
    if (bad.by == By::kServer) {
      EXPECT_FALSE(s.error_message().empty());
    }
    if (!bad.mentions.empty()) {
      EXPECT_NE(s.error_message().find(bad.mentions), std::string::npos)
          << "the message should mention '" << bad.mentions
          << "': " << s.error_message();
    }
    // Still serving, and nothing was added, lost or changed.
    grpc::health::v1::HealthCheckResponse::ServingStatus health;
    ASSERT_TRUE(Health(&health).ok());
    ASSERT_EQ(health, grpc::health::v1::HealthCheckResponse::SERVING);
    const std::vector<std::string> datasets_now = AllDatasetIds(kTokenA);
    EXPECT_EQ(datasets_now, datasets);
    const std::vector<std::string> jobs_now =
        AllJobIds(v1::Job::STATE_UNSPECIFIED, kTokenA);
    EXPECT_EQ(jobs_now, jobs);
    datasets = datasets_now;  // one failure per case, not for every later one
    jobs = jobs_now;
  }
  // Tenant B's things are untouched too, and the finished job still serves
  // its model.
  EXPECT_TRUE(GetDataset(bob_dataset_, nullptr, kTokenB).ok());
  EXPECT_EQ(GetJob(bob_job_, kTokenB).state(), v1::Job::SUCCEEDED);
  EXPECT_TRUE(PredictCsv(job_, csv_).ok());
}

}  // namespace
}  // namespace sparrow::server
