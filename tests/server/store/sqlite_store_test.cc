// What only the SQLite store does: the file it opens (WAL mode, the schema
// version), the errors for a path it cannot use, and a corrupt row.
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/store/store.h"

namespace sparrow::server {
namespace {

using ::testing::HasSubstr;

class SqliteStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           absl::StrCat(
               "sqlite_store_test_",
               ::testing::UnitTest::GetInstance()->current_test_info()->name(),
               "_", ::getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "sparrow.db").string();
    Reopen();
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Reopen() {
    store_.reset();
    absl::StatusOr<std::unique_ptr<Store>> store = OpenSqliteStore(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }
  void CreateJob(const std::string& id) {
    v1::Job job;
    job.set_id(id);
    bool existed = false;
    ASSERT_TRUE(store_->CreateJob("acme", job, &existed).ok());
  }

  std::filesystem::path dir_;
  std::string path_;
  std::unique_ptr<Store> store_;
};

TEST_F(SqliteStoreTest, OpenCreatesTheFileInWalMode) {
  EXPECT_TRUE(std::filesystem::exists(path_));
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READONLY, nullptr),
            SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &stmt, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)),
               "wal");
  sqlite3_finalize(stmt);
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &stmt, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(stmt, 0), 2);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

TEST_F(SqliteStoreTest, OpenFailsInAMissingDirectory) {
  const std::string path = (dir_ / "no" / "such" / "dir" / "s.db").string();
  absl::StatusOr<std::unique_ptr<Store>> store = OpenSqliteStore(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(store.status().message(), HasSubstr(path));
}

TEST_F(SqliteStoreTest, OpenRefusesAFileThatIsNotADatabase) {
  const std::string path = (dir_ / "notes.txt").string();
  std::ofstream(path) << std::string(4096, 'z');
  absl::StatusOr<std::unique_ptr<Store>> store = OpenSqliteStore(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(store.status().message(), HasSubstr(path));
}

TEST_F(SqliteStoreTest, ACorruptRecordIsDataLossNamingTheRow) {
  CreateJob("job-1");
  store_.reset();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(
      sqlite3_exec(db, "UPDATE jobs SET job = x'ffffffff' WHERE id = 'job-1'",
                   nullptr, nullptr, nullptr),
      SQLITE_OK);
  sqlite3_close(db);
  Reopen();

  absl::StatusOr<JobRecord> job = store_->GetJob("job-1");
  EXPECT_EQ(job.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(job.status().message(), HasSubstr("job job-1"));
}

}  // namespace
}  // namespace sparrow::server
