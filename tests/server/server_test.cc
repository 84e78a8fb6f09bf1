// The service end to end, in-process: upload, submit, watch, fetch, predict,
// cancel, restart.
#include "server/server.h"

#include "grpc/health/v1/health.grpc.pb.h"
#include "gtest/gtest.h"
#include "tests/server/testing/server_fixture.h"

namespace sparrow::server {
namespace {

using testing::ServerFixture;
using testing::SmallSpec;
using testing::TanksCsv;

TEST_F(ServerFixture, UploadSubmitWatchFetchPredict) {
  const std::string csv = TanksCsv();
  const std::string id = UploadOrDie(csv);
  EXPECT_EQ(id.size(), 64u);
  v1::Job job;
  ASSERT_TRUE(Submit(SmallSpec(id), &job).ok());
  EXPECT_EQ(job.state(), v1::Job::QUEUED);
  std::vector<v1::ProgressEvent> events;
  ASSERT_TRUE(Watch(job.id(), 0, &events).ok());
  ASSERT_FALSE(events.empty());
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].seq(), static_cast<int64_t>(i + 1));
  }
  EXPECT_EQ(events.front().state(), v1::Job::QUEUED);
  EXPECT_EQ(events.back().kind(), v1::ProgressEvent::STATE);
  EXPECT_EQ(events.back().state(), v1::Job::SUCCEEDED)
      << events.back().reason();
  int iterations = 0;
  for (const auto& e : events)
    iterations += e.kind() == v1::ProgressEvent::ITERATION;
  EXPECT_EQ(iterations, 30);

  const v1::Job done = GetJob(job.id());
  EXPECT_EQ(done.state(), v1::Job::SUCCEEDED);
  EXPECT_EQ(done.attempts(), 1);
  EXPECT_EQ(done.last_seq(), events.back().seq());
  EXPECT_FALSE(done.summary().empty());

  v1::GetModelRequest get;
  get.set_job_id(job.id());
  v1::TrainedModel model;
  auto context = Context();
  ASSERT_TRUE(models_->Get(context.get(), get, &model).ok());
  EXPECT_EQ(model.epochs(), 30);

  v1::PredictRequest predict;
  predict.set_job_id(job.id());
  predict.set_csv(csv);
  v1::PredictResponse prediction;
  context = Context();
  grpc::Status s = models_->Predict(context.get(), predict, &prediction);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(prediction.samples(), 400);
  EXPECT_TRUE(prediction.has_bfr());
}

TEST_F(ServerFixture, HealthIsServing) {
  auto health = grpc::health::v1::Health::NewStub(channel_);
  grpc::health::v1::HealthCheckRequest request;
  grpc::health::v1::HealthCheckResponse response;
  auto context = Context();
  grpc::Status s = health->Check(context.get(), request, &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(response.status(), grpc::health::v1::HealthCheckResponse::SERVING);
}

}  // namespace
}  // namespace sparrow::server
