// What the SQLite store does with text and failures clients must not see: a
// reason that is not UTF-8 is stored repaired (the record stays parseable),
// and every SQLite error carries a client message without path or SQL.
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/internal_error.h"
#include "server/store/store.h"

namespace sparrow::server {
namespace {

class SqliteStoreTextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           absl::StrCat(
               "sqlite_store_text_test_",
               ::testing::UnitTest::GetInstance()->current_test_info()->name(),
               "_", ::getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    auto store = OpenSqliteStore((dir_ / "sparrow.db").string());
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    v1::Job job;
    job.set_id("job-1");
    ASSERT_TRUE(store_->CreateJob("acme", job, nullptr).ok());
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::filesystem::path dir_;
  std::unique_ptr<Store> store_;
};

TEST_F(SqliteStoreTextTest, AReasonThatIsNotUtf8IsStoredRepaired) {
  JobTransition t;
  t.to = v1::Job::FAILED;
  t.reason = "column 'u\xff' is missing";
  ASSERT_TRUE(store_->TransitionJob("job-1", t).ok());
  absl::StatusOr<JobRecord> job = store_->GetJob("job-1");
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->job.reason(), "column 'u\xEF\xBF\xBD' is missing");
  auto events = store_->ListEvents("job-1", 0, 10);
  ASSERT_TRUE(events.ok()) << events.status();
}

TEST_F(SqliteStoreTextTest, ErrorsCarryAClientMessageWithoutPathOrSql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ / "sparrow.db").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "DROP TABLE events", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  const auto events = store_->ListEvents("job-1", 0, 10);
  ASSERT_FALSE(events.ok());
  // The detail, for the log, names the file and the statement ...
  EXPECT_NE(events.status().message().find(dir_.string()), std::string::npos);
  // ... the client's message does neither.
  const std::optional<std::string> client = ClientMessage(events.status());
  ASSERT_TRUE(client.has_value());
  EXPECT_EQ(client->find(dir_.string()), std::string::npos) << *client;
  EXPECT_EQ(client->find("SELECT"), std::string::npos) << *client;
}

}  // namespace
}  // namespace sparrow::server
