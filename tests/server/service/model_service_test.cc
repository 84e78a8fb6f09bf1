// sparrow.v1.ModelService in-process: Get, Export (binary and JSON round
// trips, ONNX, the size limit), Predict (free-run simulation and one step
// ahead), the refusal of unfinished jobs' models, and bearer-token tenancy.
#include "server/service/model_service.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "google/protobuf/util/field_comparator.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"
#include "tests/server/testing/service_fixture.h"

namespace sparrow::server {
namespace {

using testing::ServiceFixture;
using testing::SmallSpec;
using testing::TanksCsv;

// Equal field by field, NaN equal to NaN (unset metrics can be NaN).
bool SameModel(const v1::TrainedModel& a, const v1::TrainedModel& b,
               std::string* diff) {
  google::protobuf::util::DefaultFieldComparator comparator;
  comparator.set_treat_nan_as_equal(true);
  google::protobuf::util::MessageDifferencer differencer;
  differencer.set_field_comparator(&comparator);
  differencer.ReportDifferencesToString(diff);
  return differencer.Compare(a, b);
}

std::vector<std::string> Lines(const std::string& csv) {
  return absl::StrSplit(csv, '\n', absl::SkipEmpty());
}

class ModelServiceTest : public ServiceFixture {
 protected:
  void SetUp() override {
    ServiceFixture::SetUp();
    csv_ = TanksCsv();
    dataset_ = UploadOrDie(csv_);
    job_ = TrainedJob(dataset_);
  }
  std::string csv_;
  std::string dataset_;
  v1::Job job_;
};

TEST_F(ModelServiceTest, GetReturnsTheTrainedModel) {
  v1::TrainedModel model;
  grpc::Status s = GetModel(job_.id(), &model);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(model.epochs(), 20);
  EXPECT_EQ(model.num_inputs(), 1);
  EXPECT_EQ(model.num_outputs(), 1);
  EXPECT_TRUE(model.model().has_narx_mlp());
  // (1 + 2 + 2) inputs * 8 + 8 biases + 8 + 1 output weights and bias.
  EXPECT_EQ(model.parameters_size(), 57);
  ASSERT_EQ(model.input_scaling().names_size(), 1);
  EXPECT_EQ(model.input_scaling().names(0), "u");
  ASSERT_EQ(model.output_scaling().names_size(), 1);
  EXPECT_EQ(model.output_scaling().names(0), "y");
  EXPECT_EQ(model.seed(), 1u);
  EXPECT_FALSE(model.termination().empty());
  EXPECT_GT(model.metrics().test_rmse(), 0);
  // The same model every time.
  v1::TrainedModel again;
  ASSERT_TRUE(GetModel(job_.id(), &again).ok());
  EXPECT_EQ(again.SerializeAsString(), model.SerializeAsString());
}

TEST_F(ModelServiceTest, ExportRoundTripsAsProtoAndJson) {
  v1::TrainedModel model;
  ASSERT_TRUE(GetModel(job_.id(), &model).ok());

  for (auto format : {v1::ExportModelRequest::PROTO,
                      v1::ExportModelRequest::FORMAT_UNSPECIFIED}) {
    v1::ExportModelResponse exported;
    grpc::Status s = Export(job_.id(), format, &exported);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(exported.content_type(), "application/x-protobuf");
    v1::TrainedModel parsed;
    ASSERT_TRUE(parsed.ParseFromString(exported.data()));
    std::string diff;
    EXPECT_TRUE(SameModel(parsed, model, &diff)) << diff;
  }

  v1::ExportModelResponse json;
  grpc::Status s = Export(job_.id(), v1::ExportModelRequest::JSON, &json);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(json.content_type(), "application/json");
  EXPECT_NE(json.data().find("\"parameters\""), std::string::npos);
  v1::TrainedModel parsed;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto parse = google::protobuf::util::JsonStringToMessage(
      json.data(), &parsed, options);
  ASSERT_TRUE(parse.ok()) << parse.ToString();
  std::string diff;
  EXPECT_TRUE(SameModel(parsed, model, &diff)) << diff;
}

TEST_F(ModelServiceTest, ExportsOnnx) {
  v1::ExportModelResponse exported;
  grpc::Status s = Export(job_.id(), v1::ExportModelRequest::ONNX, &exported);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(exported.content_type(), "application/onnx");
  EXPECT_EQ(exported.epochs(), 20);
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(exported.data()));
  ASSERT_EQ(model.graph().input_size(), 2);
  EXPECT_EQ(model.graph().input(0).name(), "u");
  EXPECT_EQ(model.graph().input(1).name(), "y");
  EXPECT_EQ(model.graph().output(0).name(), "y_pred");
}

// Refused before anything is built, naming the flag that sets the limit.
class ExportLimitTest : public ServiceFixture {
 protected:
  void Configure(ServerOptions* options) override {
    options->jobs.limits.max_message_bytes = 64 << 10;
  }
};

TEST_F(ExportLimitTest, AModelTooLargeToSendIsResourceExhausted) {
  const std::string dataset = UploadOrDie(TanksCsv());
  v1::JobSpec spec = SmallSpec(dataset, 1);
  spec.mutable_model()->mutable_narx_mlp()->set_hidden(0, 1500);
  const v1::Job job = SubmitOrDie(spec);
  WaitForState(job.id(), v1::Job::SUCCEEDED);
  for (auto format :
       {v1::ExportModelRequest::PROTO, v1::ExportModelRequest::JSON,
        v1::ExportModelRequest::ONNX}) {
    const grpc::Status s = Export(job.id(), format);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
        << s.error_message();
    EXPECT_NE(s.error_message().find("--max-message-bytes"), std::string::npos)
        << s.error_message();
  }
}

TEST_F(ModelServiceTest, PredictSimulatesAndPredictsOneStepAhead) {
  v1::PredictRequest request;
  request.set_job_id(job_.id());
  request.set_csv(csv_);
  v1::PredictResponse simulation;
  grpc::Status s = Predict(request, &simulation);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(simulation.samples(), 400);
  ASSERT_TRUE(simulation.has_bfr());
  ASSERT_TRUE(simulation.has_rmse());
  EXPECT_GT(simulation.rmse(), 0);
  std::vector<std::string> lines = Lines(simulation.csv());
  ASSERT_EQ(lines.size(), 401u);
  EXPECT_EQ(lines[0], "y_pred");

  request.set_one_step(true);
  v1::PredictResponse one_step;
  s = Predict(request, &one_step);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(one_step.samples(), 400);
  ASSERT_TRUE(one_step.has_bfr());
  EXPECT_EQ(Lines(one_step.csv()).size(), 401u);
  EXPECT_NE(one_step.csv(), simulation.csv());
  // One step ahead reads the measured outputs: it tracks them at least as
  // well as the free-run simulation.
  EXPECT_GE(one_step.bfr(), simulation.bfr());

  // Deterministic.
  v1::PredictResponse again;
  ASSERT_TRUE(Predict(request, &again).ok());
  EXPECT_EQ(again.csv(), one_step.csv());

  // A shorter record with its columns in another order, plus an extra one.
  std::string reordered = "extra,y,u\n";
  for (const std::string& line : Lines(TanksCsv(60, 9))) {
    if (line == "u,y") continue;
    const std::vector<std::string> f = absl::StrSplit(line, ',');
    reordered += "0," + f[1] + "," + f[0] + "\n";
  }
  request.set_csv(reordered);
  request.set_one_step(false);
  v1::PredictResponse shorter;
  s = Predict(request, &shorter);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(shorter.samples(), 60);
}

TEST_F(ModelServiceTest, PredictRefusesBadRequests) {
  v1::PredictRequest request;
  request.set_job_id(job_.id());
  // The model's input column is missing.
  request.set_csv("v,y\n1,2\n3,4\n");
  grpc::Status s = Predict(request);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("'u'"), std::string::npos)
      << s.error_message();
  // A sequence model also needs its output column (the NARX history).
  request.set_csv("u\n1\n2\n");
  s = Predict(request);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << s.error_message();
  // NaN in the data.
  request.set_csv("u,y\n1,2\nnan,4\n");
  s = Predict(request);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << s.error_message();
  EXPECT_NE(s.error_message().find("line 3"), std::string::npos)
      << s.error_message();
  // Empty CSV.
  request.set_csv("");
  EXPECT_EQ(Predict(request).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  // Intervals are one-step intervals.
  request.set_csv(csv_);
  request.set_intervals(true);
  s = Predict(request);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << s.error_message();
  // ... and need a model with weight variances (SBDL); this one is Adam's.
  request.set_one_step(true);
  s = Predict(request);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION)
      << s.error_message();
  request.set_intervals(false);
  request.set_x0_samples(-1);
  s = Predict(request);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << s.error_message();
}

// A categorical column is one input at submission and its one-hot levels in
// the model: a warm start from such a model is accepted and checked by name.
TEST_F(ModelServiceTest, AWarmStartWithCategoricalInputs) {
  std::string csv = "u,c,y\n";
  for (int i = 0; i < 120; ++i) {
    csv += std::to_string(0.1 * (i % 9)) + "," + "abc"[i % 3] + "," +
           std::to_string(0.3 * (i % 9) + (i % 3)) + "\n";
  }
  v1::JobSpec spec;
  spec.mutable_data()->set_dataset_id(UploadOrDie(csv));
  spec.mutable_data()->add_inputs("u");
  spec.mutable_data()->add_inputs("c");
  spec.mutable_data()->add_outputs("y");
  spec.mutable_data()->add_categorical("c");
  spec.mutable_model()->mutable_mlp()->add_hidden(4);
  spec.mutable_optimizer()->mutable_adam()->set_learning_rate(0.01);
  spec.mutable_stopping()->set_max_epochs(3);
  const v1::Job first = WaitForFinal(SubmitOrDie(spec).id());
  ASSERT_EQ(first.state(), v1::Job::SUCCEEDED) << first.reason();
  spec.mutable_warm_start()->set_job_id(first.id());
  const v1::Job warm = WaitForFinal(SubmitOrDie(spec).id());
  EXPECT_EQ(warm.state(), v1::Job::SUCCEEDED) << warm.reason();
}

TEST_F(ModelServiceTest, AChosenInitialStateNeedsAStateSpaceModel) {
  v1::PredictRequest request;
  request.set_job_id(job_.id());
  request.set_csv(csv_);
  request.set_initial_state(v1::PredictRequest::X0_ZERO);
  grpc::Status s = Predict(request);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("this is a narx_mlp"), std::string::npos)
      << s.error_message();
  request.set_initial_state(v1::PredictRequest::X0_ESTIMATE);
  request.add_x0(0.5);
  s = Predict(request);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("X0_GIVEN"), std::string::npos)
      << s.error_message();
  request.set_initial_state(static_cast<v1::PredictRequest::InitialState>(7));
  s = Predict(request);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("initial_state is 7"), std::string::npos)
      << s.error_message();
  // The estimate of a NARX model has no state to report.
  request.clear_x0();
  request.set_initial_state(v1::PredictRequest::X0_ESTIMATE);
  v1::PredictResponse response;
  ASSERT_TRUE(Predict(request, &response).ok());
  EXPECT_EQ(response.x0_size(), 0);
}

TEST_F(ModelServiceTest, UnknownJobIsNotFound) {
  const std::string id = "job-0000000000000000";
  EXPECT_EQ(GetModel(id).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Export(id, v1::ExportModelRequest::PROTO).error_code(),
            grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Predict(id, csv_).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Export(job_.id(), static_cast<v1::ExportModelRequest::Format>(9))
                .error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(ModelServiceTest, OnlyEndedJobsHaveAModel) {
  const v1::Job running = StartLongJob(dataset_);
  const v1::Job queued = SubmitOrDie(SmallSpec(dataset_, 3));
  v1::Job cancelled = SubmitOrDie(SmallSpec(dataset_, 3));
  ASSERT_TRUE(CancelJob(cancelled.id(), &cancelled).ok());
  for (const v1::Job& job : {running, queued, cancelled}) {
    SCOPED_TRACE(job.id());
    grpc::Status s = GetModel(job.id());
    EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION)
        << s.error_message();
    EXPECT_NE(s.error_message().find(job.id()), std::string::npos)
        << s.error_message();
    EXPECT_EQ(Export(job.id(), v1::ExportModelRequest::JSON).error_code(),
              grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_EQ(Predict(job.id(), csv_).error_code(),
              grpc::StatusCode::FAILED_PRECONDITION);
  }
  EXPECT_NE(GetModel(cancelled.id()).error_message().find("kept no model"),
            std::string::npos);
  // A job cancelled while it runs keeps the model it had reached, marked.
  WaitForIterations(running.id(), 1);
  CancelAndWait(running.id());
  v1::TrainedModel partial;
  grpc::Status s = GetModel(running.id(), &partial);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_TRUE(partial.partial());
  EXPECT_EQ(partial.termination(), "cancelled");
  EXPECT_GE(partial.epochs(), 1);
  EXPECT_GT(partial.parameters_size(), 0);
  for (double p : partial.parameters()) ASSERT_TRUE(std::isfinite(p));
  EXPECT_TRUE(Predict(running.id(), csv_).ok());
  // The queued job then runs, and has a model once it has succeeded.
  WaitForState(queued.id(), v1::Job::SUCCEEDED);
  EXPECT_TRUE(GetModel(queued.id()).ok());
}

TEST_F(ModelServiceTest, FailedJobHasNoModel) {
  // Data that makes the loss NaN: inputs and outputs of astronomic size.
  std::string csv = "u,y\n";
  for (int i = 0; i < 400; ++i) {
    csv += std::to_string(i % 7) + "e300," + std::to_string(i % 5) + "e300\n";
  }
  const std::string dataset = UploadOrDie(csv);
  v1::JobSpec spec = SmallSpec(dataset, 5);
  spec.set_normalization(v1::NORMALIZATION_NONE);
  const v1::Job job = SubmitOrDie(spec);
  const v1::Job failed = WaitForFinal(job.id());
  ASSERT_EQ(failed.state(), v1::Job::FAILED) << failed.reason();
  EXPECT_FALSE(failed.reason().empty());
  grpc::Status s = GetModel(job.id());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION)
      << s.error_message();
  EXPECT_NE(s.error_message().find("failed"), std::string::npos)
      << s.error_message();
}

TEST_F(ModelServiceTest, AJobWarmStartsFromAnotherJobsModel) {
  v1::TrainedModel source;
  ASSERT_TRUE(GetModel(job_.id(), &source).ok());
  // One tiny SGD step from the model: it stays where the model is.
  v1::JobSpec spec = SmallSpec(dataset_, 1);
  spec.mutable_optimizer()->mutable_sgd()->set_learning_rate(1e-9);
  spec.mutable_warm_start()->set_job_id(job_.id());
  const v1::Job warm = WaitForFinal(SubmitOrDie(spec).id());
  ASSERT_EQ(warm.state(), v1::Job::SUCCEEDED) << warm.reason();
  v1::TrainedModel model;
  ASSERT_TRUE(GetModel(warm.id(), &model).ok());
  ASSERT_EQ(model.parameters_size(), source.parameters_size());
  for (int i = 0; i < model.parameters_size(); ++i) {
    ASSERT_NEAR(model.parameters(i), source.parameters(i), 1e-6) << i;
  }
  EXPECT_NEAR(model.metrics().test_rmse(), source.metrics().test_rmse(),
              1e-6 * source.metrics().test_rmse());
  EXPECT_EQ(model.input_scaling().mean(0), source.input_scaling().mean(0));
  EXPECT_EQ(model.epochs(), 1);

  // Refused at submission: an unknown job, one without a model yet.
  v1::SubmitJobRequest request;
  *request.mutable_spec() = spec;
  request.mutable_spec()->mutable_warm_start()->set_job_id(
      "job-0000000000000000");
  grpc::Status s = SubmitRequest(request, nullptr);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();
  EXPECT_NE(s.error_message().find("warm_start.job_id"), std::string::npos)
      << s.error_message();
  const v1::Job running = StartLongJob(dataset_);
  request.mutable_spec()->mutable_warm_start()->set_job_id(running.id());
  s = SubmitRequest(request, nullptr);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION)
      << s.error_message();
  CancelAndWait(running.id());
  // Another structure passes submission and fails the job, saying why.
  spec.mutable_model()->mutable_narx_mlp()->set_hidden(0, 9);
  const v1::Job wider = WaitForFinal(SubmitOrDie(spec).id());
  EXPECT_EQ(wider.state(), v1::Job::FAILED);
  EXPECT_NE(wider.reason().find("parameter blocks"), std::string::npos)
      << wider.reason();
}

// The test split from its own dataset (spec.test_data) gives the model the
// metrics that the same rows as split.test give.
TEST_F(ModelServiceTest, TheTestSplitFromItsOwnDataset) {
  std::string test_csv = "u,y\n";
  const std::vector<std::string> lines = Lines(csv_);
  for (size_t i = 301; i < lines.size(); ++i) test_csv += lines[i] + "\n";
  const std::string test_ds = UploadOrDie(test_csv);
  v1::JobSpec spec = SmallSpec(dataset_, 20);
  spec.mutable_split()->clear_test();
  spec.mutable_test_data()->set_dataset_id(test_ds);
  const v1::Job job = WaitForFinal(SubmitOrDie(spec).id());
  ASSERT_EQ(job.state(), v1::Job::SUCCEEDED) << job.reason();
  v1::TrainedModel model, ranges;
  ASSERT_TRUE(GetModel(job.id(), &model).ok());
  ASSERT_TRUE(GetModel(job_.id(), &ranges).ok());
  ASSERT_TRUE(std::isfinite(model.metrics().test_rmse()));
  EXPECT_EQ(model.metrics().test_rmse(), ranges.metrics().test_rmse());

  // Refused at submission: an unknown dataset, columns it lacks, and two
  // ways of giving the test split.
  v1::SubmitJobRequest request;
  *request.mutable_spec() = spec;
  request.mutable_spec()->mutable_test_data()->set_dataset_id(
      std::string(64, 'a'));
  grpc::Status s = SubmitRequest(request, nullptr);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();
  EXPECT_NE(s.error_message().find("test_data.dataset_id"), std::string::npos)
      << s.error_message();
  *request.mutable_spec() = spec;
  request.mutable_spec()->mutable_test_data()->add_outputs("force");
  s = SubmitRequest(request, nullptr);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << s.error_message();
  EXPECT_NE(s.error_message().find("force"), std::string::npos)
      << s.error_message();
  *request.mutable_spec() = SmallSpec(dataset_, 20);
  request.mutable_spec()->mutable_test_data()->set_dataset_id(test_ds);
  s = SubmitRequest(request, nullptr);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << s.error_message();
  EXPECT_NE(s.error_message().find("keep one"), std::string::npos)
      << s.error_message();
}

// ---- tenancy ----

class ModelAuthTest : public ServiceFixture {
 protected:
  void Configure(ServerOptions* options) override { WriteTokens(options); }
};

TEST_F(ModelAuthTest, ModelsAreTheirTenantsOnly) {
  const std::string csv = TanksCsv();
  const v1::Job job = TrainedJob(UploadOrDie(csv, kTokenA), kTokenA, 5);
  ASSERT_TRUE(GetModel(job.id(), nullptr, kTokenA).ok());
  ASSERT_TRUE(Predict(job.id(), csv, nullptr, kTokenA).ok());
  for (const std::string token : {"", "wrong"}) {
    SCOPED_TRACE(token);
    EXPECT_EQ(GetModel(job.id(), nullptr, token).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(Export(job.id(), v1::ExportModelRequest::PROTO, nullptr, token)
                  .error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(Predict(job.id(), csv, nullptr, token).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
  }
  grpc::Status s = GetModel(job.id(), nullptr, kTokenB);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();
  EXPECT_EQ(Export(job.id(), v1::ExportModelRequest::JSON, nullptr, kTokenB)
                .error_code(),
            grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Predict(job.id(), csv, nullptr, kTokenB).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

}  // namespace
}  // namespace sparrow::server
