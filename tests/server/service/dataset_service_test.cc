// sparrow.v1.DatasetService in-process: Upload (content addressing, any chunk
// size, limits), Get, List (AIP-158 pagination), Delete (refused while a job
// uses the dataset), bearer-token tenancy and the health check.
#include "server/service/dataset_service.h"

#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "server/service/common.h"
#include "tests/server/testing/service_fixture.h"

namespace sparrow::server {
namespace {

using testing::ServiceFixture;
using testing::SmallSpec;
using testing::TanksCsv;

class DatasetServiceTest : public ServiceFixture {};

TEST_F(DatasetServiceTest, UploadStoresContentAddressedMetadata) {
  const std::string csv = TanksCsv();
  v1::UploadDatasetResponse response;
  grpc::Status s = Upload(csv, &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_FALSE(response.already_existed());
  const v1::Dataset& d = response.dataset();
  EXPECT_EQ(d.id(), Sha256Hex(csv));
  EXPECT_EQ(d.name(), "tanks.csv");
  EXPECT_EQ(d.size_bytes(), static_cast<int64_t>(csv.size()));
  EXPECT_EQ(d.rows(), 400);
  EXPECT_EQ(std::vector<std::string>(d.columns().begin(), d.columns().end()),
            (std::vector<std::string>{"u", "y"}));
  EXPECT_GT(d.create_time().seconds(), 0);

  v1::Dataset got;
  s = GetDataset(d.id(), &got);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(got.SerializeAsString(), d.SerializeAsString());
}

// A file as it comes from a logger or a spreadsheet: a text column, an "NA"
// and an empty cell. The upload checks the structure only, as a local run
// does; a job reads the columns it selects.
TEST_F(DatasetServiceTest, UploadKeepsTextAndMissingCells) {
  const std::vector<std::string> lines =
      absl::StrSplit(TanksCsv(), '\n', absl::SkipEmpty());
  std::string csv = "u,y,y2,note\n";
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::vector<std::string> uy = absl::StrSplit(lines[i], ',');
    const std::string y2 = i == 5 ? "NA" : i == 6 ? "" : uy[1];
    absl::StrAppend(&csv, lines[i], ",", y2, ",", i % 2 ? "red" : "blue", "\n");
  }
  v1::UploadDatasetResponse response;
  grpc::Status s = Upload(csv, &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(response.dataset().rows(), 400);
  EXPECT_EQ(response.dataset().columns_size(), 4);

  // u -> y trains; u -> y2 fails naming the line and the column.
  const v1::Job good = SubmitOrDie(SmallSpec(response.dataset().id(), 3));
  EXPECT_EQ(WaitForFinal(good.id()).state(), v1::Job::SUCCEEDED);
  v1::JobSpec spec = SmallSpec(response.dataset().id(), 3);
  spec.mutable_data()->set_outputs(0, "y2");
  const v1::Job bad = WaitForFinal(SubmitOrDie(spec).id());
  EXPECT_EQ(bad.state(), v1::Job::FAILED);
  EXPECT_NE(bad.reason().find("line 6"), std::string::npos) << bad.reason();
  EXPECT_NE(bad.reason().find("y2"), std::string::npos) << bad.reason();
}

TEST_F(DatasetServiceTest, ReuploadOfTheSameBytesIsANoOpWhateverTheChunking) {
  const std::string csv = TanksCsv(40);
  v1::UploadDatasetResponse first, second, third;
  // One byte per message...
  grpc::Status s = Upload(csv, &first, "", /*chunk=*/1);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_FALSE(first.already_existed());
  // ... then the whole file in one message ...
  s = Upload(csv, &second, "", /*chunk=*/csv.size());
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_TRUE(second.already_existed());
  EXPECT_EQ(second.dataset().SerializeAsString(),
            first.dataset().SerializeAsString());
  // ... and in uneven chunks.
  s = Upload(csv, &third, "", /*chunk=*/97);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_TRUE(third.already_existed());
  EXPECT_EQ(third.dataset().id(), first.dataset().id());
  EXPECT_EQ(AllDatasetIds(), std::vector<std::string>{first.dataset().id()});

  // Different bytes are a different dataset.
  v1::UploadDatasetResponse other;
  s = Upload(TanksCsv(40, /*seed=*/2), &other);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_FALSE(other.already_existed());
  EXPECT_NE(other.dataset().id(), first.dataset().id());
}

TEST_F(DatasetServiceTest, GetOfAnUnknownIdIsNotFound) {
  UploadOrDie(TanksCsv(40));
  grpc::Status s = GetDataset(std::string(64, 'a'));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();
  s = GetDataset("");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();
}

TEST_F(DatasetServiceTest, ListPaginatesInUploadOrder) {
  std::vector<std::string> uploaded;
  for (int i = 0; i < 5; ++i) uploaded.push_back(UploadOrDie(TanksCsv(30, i)));

  // page_size 2: pages of 2, 2 and 1; only the last has no token.
  std::vector<std::string> ids;
  std::vector<int> sizes;
  std::string token;
  do {
    v1::ListDatasetsResponse page;
    grpc::Status s = ListDatasets(2, token, &page);
    ASSERT_TRUE(s.ok()) << s.error_message();
    sizes.push_back(page.datasets_size());
    for (const auto& d : page.datasets()) ids.push_back(d.id());
    token = page.next_page_token();
  } while (!token.empty() && sizes.size() < 10);
  EXPECT_EQ(sizes, (std::vector<int>{2, 2, 1}));
  EXPECT_EQ(ids, uploaded);

  // A page that ends exactly at the end of the list has no token either.
  v1::ListDatasetsResponse exact;
  ASSERT_TRUE(ListDatasets(5, "", &exact).ok());
  EXPECT_EQ(exact.datasets_size(), 5);
  EXPECT_TRUE(exact.next_page_token().empty());

  // 0 = the default (50) and a huge size is coerced down, not refused.
  for (int size : {0, 1001, std::numeric_limits<int32_t>::max()}) {
    v1::ListDatasetsResponse all;
    grpc::Status s = ListDatasets(size, "", &all);
    ASSERT_TRUE(s.ok()) << size << ": " << s.error_message();
    EXPECT_EQ(all.datasets_size(), 5) << size;
    EXPECT_TRUE(all.next_page_token().empty()) << size;
  }
  // The page-size rule itself.
  EXPECT_EQ(*PageSize(0), 50);
  EXPECT_EQ(*PageSize(7), 7);
  EXPECT_EQ(*PageSize(1000), 1000);
  EXPECT_EQ(*PageSize(1001), 1000);
  EXPECT_EQ(*PageSize(std::numeric_limits<int32_t>::max()), 1000);
  EXPECT_EQ(PageSize(-1).status().code(), absl::StatusCode::kInvalidArgument);

  v1::ListDatasetsResponse bad;
  grpc::Status s = ListDatasets(-1, "", &bad);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("page_size"), std::string::npos)
      << s.error_message();
  s = ListDatasets(2, "not-a-token", &bad);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << s.error_message();
  EXPECT_NE(s.error_message().find("page_token"), std::string::npos)
      << s.error_message();
}

TEST_F(DatasetServiceTest, DefaultPageSizeIsFifty) {
  std::vector<std::string> uploaded;
  for (int i = 0; i < 51; ++i) uploaded.push_back(UploadOrDie(TanksCsv(8, i)));
  v1::ListDatasetsResponse page;
  ASSERT_TRUE(ListDatasets(0, "", &page).ok());
  EXPECT_EQ(page.datasets_size(), 50);
  ASSERT_FALSE(page.next_page_token().empty());
  v1::ListDatasetsResponse rest;
  ASSERT_TRUE(ListDatasets(0, page.next_page_token(), &rest).ok());
  ASSERT_EQ(rest.datasets_size(), 1);
  EXPECT_EQ(rest.datasets(0).id(), uploaded.back());
  EXPECT_TRUE(rest.next_page_token().empty());
}

TEST_F(DatasetServiceTest, PageTokensBelongToTheirListing) {
  UploadOrDie(TanksCsv(30, 1));
  UploadOrDie(TanksCsv(30, 2));
  const std::string id = UploadOrDie(TanksCsv(400, 3));
  for (int i = 0; i < 2; ++i) SubmitOrDie(SmallSpec(id, 1));
  v1::ListDatasetsResponse datasets;
  ASSERT_TRUE(ListDatasets(1, "", &datasets).ok());
  ASSERT_FALSE(datasets.next_page_token().empty());
  v1::ListJobsResponse jobs;
  ASSERT_TRUE(ListJobs(v1::Job::STATE_UNSPECIFIED, 1, "", &jobs).ok());
  ASSERT_FALSE(jobs.next_page_token().empty());
  // A job listing's token is not a dataset listing's, and vice versa.
  v1::ListDatasetsResponse d;
  EXPECT_EQ(ListDatasets(1, jobs.next_page_token(), &d).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  v1::ListJobsResponse j;
  EXPECT_EQ(
      ListJobs(v1::Job::STATE_UNSPECIFIED, 1, datasets.next_page_token(), &j)
          .error_code(),
      grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(DatasetServiceTest, DeleteIsRefusedWhileAQueuedOrRunningJobUsesIt) {
  const std::string queued_ds = UploadOrDie(TanksCsv(400, 1));
  const std::string running_ds = UploadOrDie(TanksCsv(400, 2));
  const v1::Job running = StartLongJob(running_ds);
  const v1::Job queued = SubmitOrDie(SmallSpec(queued_ds));
  ASSERT_EQ(GetJob(queued.id()).state(), v1::Job::QUEUED);

  grpc::Status s = DeleteDataset(queued_ds);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION)
      << s.error_message();
  EXPECT_NE(s.error_message().find(queued.id()), std::string::npos)
      << s.error_message();
  s = DeleteDataset(running_ds);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION)
      << s.error_message();
  EXPECT_NE(s.error_message().find(running.id()), std::string::npos)
      << s.error_message();
  // Both are still there.
  EXPECT_TRUE(GetDataset(queued_ds).ok());
  EXPECT_TRUE(GetDataset(running_ds).ok());

  // Once the jobs have ended the datasets can go.
  v1::Job cancelled;
  ASSERT_TRUE(CancelJob(queued.id(), &cancelled).ok());
  EXPECT_EQ(cancelled.state(), v1::Job::CANCELLED);
  s = DeleteDataset(queued_ds);
  EXPECT_TRUE(s.ok()) << s.error_message();
  CancelAndWait(running.id());
  s = DeleteDataset(running_ds);
  EXPECT_TRUE(s.ok()) << s.error_message();

  for (const std::string& id : {queued_ds, running_ds}) {
    EXPECT_EQ(GetDataset(id).error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_EQ(DeleteDataset(id).error_code(), grpc::StatusCode::NOT_FOUND);
  }
  EXPECT_TRUE(AllDatasetIds().empty());
  // The jobs that used them keep their records.
  EXPECT_EQ(GetJob(running.id()).state(), v1::Job::CANCELLED);
  // A new job cannot use a deleted dataset...
  v1::Job job;
  s = Submit(SmallSpec(queued_ds), &job);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();
  // ... until it is uploaded again, as a new dataset.
  v1::UploadDatasetResponse again;
  ASSERT_TRUE(Upload(TanksCsv(400, 1), &again).ok());
  EXPECT_FALSE(again.already_existed());
  EXPECT_EQ(again.dataset().id(), queued_ds);
}

// A job's validation and test records (spec.validation_data / test_data) are
// in use as much as its data.
TEST_F(DatasetServiceTest, DeleteIsRefusedWhileAJobReadsItAsATestRecord) {
  const std::string busy_ds = UploadOrDie(TanksCsv(400, 2));
  const v1::Job running = StartLongJob(busy_ds);
  const std::string data_ds = UploadOrDie(TanksCsv(400, 3));
  const std::string test_ds = UploadOrDie(TanksCsv(100, 4));
  v1::JobSpec spec = SmallSpec(data_ds);
  spec.mutable_split()->clear_test();
  spec.mutable_test_data()->set_dataset_id(test_ds);
  const v1::Job queued = SubmitOrDie(spec);
  grpc::Status s = DeleteDataset(test_ds);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION)
      << s.error_message();
  EXPECT_NE(s.error_message().find(queued.id()), std::string::npos)
      << s.error_message();
  ASSERT_TRUE(CancelJob(queued.id()).ok());
  CancelAndWait(running.id());
  s = DeleteDataset(test_ds);
  EXPECT_TRUE(s.ok()) << s.error_message();
}

TEST_F(DatasetServiceTest, DeleteOfADatasetWhoseJobsFinishedSucceeds) {
  const std::string id = UploadOrDie(TanksCsv());
  const v1::Job job = TrainedJob(id);
  grpc::Status s = DeleteDataset(id);
  EXPECT_TRUE(s.ok()) << s.error_message();
  // The model outlives the dataset.
  EXPECT_TRUE(GetModel(job.id()).ok());
}

TEST_F(DatasetServiceTest, HealthIsServingWhileUp) {
  grpc::health::v1::HealthCheckResponse::ServingStatus status;
  grpc::Status s = Health(&status);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(status, grpc::health::v1::HealthCheckResponse::SERVING);
}

// ---- limits ----

class UploadLimitTest : public ServiceFixture {
 protected:
  void Configure(ServerOptions* options) override {
    options->jobs.limits.max_upload_bytes = 4096;
  }
};

TEST_F(UploadLimitTest, UploadAboveMaxUploadBytesIsResourceExhausted) {
  const std::string small = TanksCsv(50);
  ASSERT_LE(small.size(), 4096u);
  UploadOrDie(small);
  const std::string big = TanksCsv(400);
  ASSERT_GT(big.size(), 4096u);
  v1::UploadDatasetResponse response;
  grpc::Status s = Upload(big, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << s.error_message();
  EXPECT_NE(s.error_message().find("--max-upload-bytes"), std::string::npos)
      << s.error_message();
  // One chunk over the limit too.
  s = Upload(big, &response, "", big.size());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(AllDatasetIds().size(), 1u);
}

class MessageLimitTest : public ServiceFixture {
 protected:
  void Configure(ServerOptions* options) override {
    options->jobs.limits.max_message_bytes = 64 << 10;
  }
};

TEST_F(MessageLimitTest, MessageAboveMaxMessageBytesIsResourceExhausted) {
  const std::string csv = TanksCsv(3000);
  ASSERT_GT(csv.size(), 64u << 10);
  v1::UploadDatasetResponse response;
  // The whole file in one message is refused by gRPC itself (its message,
  // "Received message larger than max", cannot name sparrowd's flag).
  grpc::Status s = Upload(csv, &response, "", csv.size());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << s.error_message();
  EXPECT_TRUE(AllDatasetIds().empty());
  // Below the limit per message, the same file is fine.
  s = Upload(csv, &response, "", 32 << 10);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(response.dataset().id(), Sha256Hex(csv));
  // So are unary calls over the limit (refused) and under it (served).
  v1::PredictRequest predict;
  predict.set_job_id("job-0");
  predict.set_csv(std::string(100 << 10, 'x'));
  EXPECT_EQ(Predict(predict).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(AllDatasetIds().size(), 1u);
}

// ---- tenancy ----

class DatasetAuthTest : public ServiceFixture {
 protected:
  void Configure(ServerOptions* options) override { WriteTokens(options); }
};

TEST_F(DatasetAuthTest, MissingOrWrongTokenIsUnauthenticated) {
  const std::string csv = TanksCsv(40);
  for (const std::string token : {"", "not-a-token"}) {
    SCOPED_TRACE(token);
    v1::UploadDatasetResponse response;
    grpc::Status s = Upload(csv, &response, token);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED)
        << s.error_message();
    EXPECT_EQ(GetDataset(Sha256Hex(csv), nullptr, token).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
    v1::ListDatasetsResponse list;
    EXPECT_EQ(ListDatasets(0, "", &list, token).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(DeleteDataset(Sha256Hex(csv), token).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
  }
  // A malformed authorization header.
  auto context = Context();
  context->AddMetadata("authorization", std::string("Basic ") + kTokenA);
  v1::ListDatasetsRequest request;
  v1::ListDatasetsResponse response;
  EXPECT_EQ(datasets_->List(context.get(), request, &response).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(AllDatasetIds(kTokenA).empty());
}

TEST_F(DatasetAuthTest, TenantsSeeOnlyTheirOwnDatasets) {
  const std::string csv = TanksCsv(40);
  const std::string alice = UploadOrDie(csv, kTokenA);
  const std::string alice_only = UploadOrDie(TanksCsv(40, 7), kTokenA);

  // Bob sees nothing of Alice's.
  EXPECT_TRUE(AllDatasetIds(kTokenB).empty());
  for (const std::string& id : {alice, alice_only}) {
    grpc::Status s = GetDataset(id, nullptr, kTokenB);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();
    EXPECT_EQ(DeleteDataset(id, kTokenB).error_code(),
              grpc::StatusCode::NOT_FOUND);
    v1::Job job;
    s = Submit(SmallSpec(id), &job, "", kTokenB);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();
  }

  // The same bytes uploaded by Bob are his own copy.
  v1::UploadDatasetResponse bob;
  ASSERT_TRUE(Upload(csv, &bob, kTokenB).ok());
  EXPECT_FALSE(bob.already_existed());
  EXPECT_EQ(bob.dataset().id(), alice);
  EXPECT_EQ(AllDatasetIds(kTokenB), std::vector<std::string>{alice});
  EXPECT_EQ(AllDatasetIds(kTokenA),
            (std::vector<std::string>{alice, alice_only}));

  // Alice deleting hers leaves Bob's.
  ASSERT_TRUE(DeleteDataset(alice, kTokenA).ok());
  EXPECT_TRUE(GetDataset(alice, nullptr, kTokenB).ok());
  EXPECT_EQ(GetDataset(alice, nullptr, kTokenA).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

}  // namespace
}  // namespace sparrow::server
