// What hostile or unlucky input must not do to sparrowd (issue 15): names
// that are not UTF-8 must not poison the listings, store failures must not
// show clients paths or SQL, long ids must not bury messages, and a
// prediction too large to send is refused before it is computed.
#include <sqlite3.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "tests/server/testing/service_fixture.h"

namespace sparrow::server {
namespace {

using testing::ServiceFixture;
using testing::TanksCsv;

class HardeningTest : public ServiceFixture {
 protected:
  void Configure(ServerOptions* options) override {
    options->jobs.limits.max_message_bytes = 1 << 20;
  }

  // Runs SQL on the server's store file through a second connection (the
  // store is in WAL mode, so both may use it), as an older sparrowd or a
  // damaged disk would have left it.
  void ExecOnStore(const std::string& sql, const std::string& blob = "") {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir_ / "sparrow.db").string().c_str(), &db),
              SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    sqlite3_stmt* stmt = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr),
              SQLITE_OK)
        << sqlite3_errmsg(db);
    if (!blob.empty()) {
      sqlite3_bind_blob(stmt, 1, blob.data(), static_cast<int>(blob.size()),
                        SQLITE_TRANSIENT);
    }
    EXPECT_EQ(sqlite3_step(stmt), SQLITE_DONE) << sqlite3_errmsg(db);
    sqlite3_finalize(stmt);
    sqlite3_close(db);
  }
};

TEST_F(HardeningTest, AHeaderThatIsNotUtf8IsRefusedNamingTheColumn) {
  const std::string csv = "t,u\xff\xfe,y\n1,2,3\n4,5,6\n";
  v1::UploadDatasetRequest chunk = Chunk(0, csv, true, Sha256Hex(csv));
  chunk.set_name("bad.csv");
  const grpc::Status s = UploadRequests({chunk});
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << s.error_message();
  EXPECT_TRUE(absl::StrContains(s.error_message(), "column 2"))
      << s.error_message();
  EXPECT_TRUE(absl::StrContains(s.error_message(), "UTF-8"))
      << s.error_message();
  // Nothing was stored, and the tenant's listing and submissions still work.
  EXPECT_TRUE(AllDatasetIds().empty());
  EXPECT_FALSE(
      SubmitOrDie(testing::SmallSpec(UploadOrDie(TanksCsv(400)))).id().empty());
}

TEST_F(HardeningTest, ListingsLeaveOutRecordsTheStoreCannotParse) {
  const std::string good = UploadOrDie(TanksCsv(400));
  const v1::Job job = SubmitOrDie(testing::SmallSpec(good, 5));
  WaitForFinal(job.id());
  // Records an older sparrowd stored with a column name that is not UTF-8
  // (protobuf serializes such a string, but refuses to parse it back).
  v1::Dataset bad_dataset;
  bad_dataset.set_id("poisoned");
  bad_dataset.add_columns("u\xff\xfe");
  ExecOnStore(
      "INSERT INTO datasets (tenant, id, meta, content) "
      "VALUES ('default', 'poisoned', ?1, 'u,y')",
      bad_dataset.SerializeAsString());
  v1::Job bad_job;
  bad_job.set_id("job-poisoned");
  bad_job.mutable_spec()->set_name("n\xff");
  ExecOnStore(
      "INSERT INTO jobs (id, tenant, state, job) "
      "VALUES ('job-poisoned', 'default', 4, ?1)",
      bad_job.SerializeAsString());

  EXPECT_EQ(AllDatasetIds(), std::vector<std::string>{good});
  EXPECT_EQ(AllDatasetIds("", /*page_size=*/1), std::vector<std::string>{good});
  EXPECT_EQ(AllJobIds(v1::Job::STATE_UNSPECIFIED),
            std::vector<std::string>{job.id()});
  // The good ones are still there one by one.
  EXPECT_TRUE(GetDataset(good).ok());
  EXPECT_TRUE(GetJobStatus(job.id()).ok());
}

TEST_F(HardeningTest, StoreFailuresShowAnErrorIdNotPathsOrSql) {
  UploadOrDie(TanksCsv(40));
  ExecOnStore("DROP TABLE datasets");
  v1::Dataset ignored;
  const grpc::Status s = GetDataset(std::string(64, 'a'), &ignored);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INTERNAL) << s.error_message();
  EXPECT_FALSE(absl::StrContains(s.error_message(), dir_.string()))
      << s.error_message();
  EXPECT_FALSE(absl::StrContains(s.error_message(), "SELECT"))
      << s.error_message();
  EXPECT_TRUE(absl::StrContains(s.error_message(), "error id E-"))
      << s.error_message();
  EXPECT_TRUE(absl::StrContains(s.error_message(), "operator"))
      << s.error_message();
}

TEST_F(HardeningTest, ErrorsShowLongIdsShortened) {
  const std::string id(8192, 'x');
  for (const grpc::Status& s : {GetJobStatus(id), GetDataset(id)}) {
    EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_LT(s.error_message().size(), 200u) << s.error_message().size();
    EXPECT_TRUE(absl::StrContains(s.error_message(), std::string(64, 'x')))
        << s.error_message();
  }
}

TEST_F(HardeningTest, APredictionTooLargeToSendIsRefusedBeforeItIsComputed) {
  const v1::Job job = TrainedJob(UploadOrDie(TanksCsv(400)), "", 5);
  // 60000 rows of 9 bytes fit in the 1 MiB request; their predictions, about
  // 20 bytes a row, do not fit in the answer.
  std::string csv = "u,y\n";
  for (int i = 0; i < 60000; ++i) csv += "0.5,0.25\n";
  ASSERT_LT(csv.size(), size_t{1} << 20);
  const grpc::Status s = Predict(job.id(), csv);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << s.error_message();
  EXPECT_TRUE(absl::StrContains(s.error_message(), "--max-message-bytes"))
      << s.error_message();
  EXPECT_TRUE(absl::StrContains(s.error_message(), "would be about"))
      << s.error_message();
  // A prediction that fits still works.
  v1::PredictResponse small;
  const grpc::Status ok = Predict(job.id(), TanksCsv(400, 2), &small);
  EXPECT_TRUE(ok.ok()) << ok.error_message();
  EXPECT_EQ(small.samples(), 400);
}

}  // namespace
}  // namespace sparrow::server
