// What only the PostgreSQL store does: one sparrowd per database, a schema
// newer than sparrowd's refused, and errors that name the database without
// its password.
#include <memory>
#include <string>

#include "absl/strings/ascii.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/store/internal/pg_db.h"
#include "server/store/store.h"
#include "tests/server/testing/postgres_server.h"

namespace sparrow::server {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class PgStoreTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = testing::PostgresServer::Start().release();
  }
  static void TearDownTestSuite() { delete server_; }
  void SetUp() override {
    if (server_ == nullptr) GTEST_SKIP() << "postgresql-15 is not installed";
    uri_ = server_->Database(absl::AsciiStrToLower(
        ::testing::UnitTest::GetInstance()->current_test_info()->name()));
  }

  static testing::PostgresServer* server_;
  std::string uri_;
};
testing::PostgresServer* PgStoreTest::server_ = nullptr;

TEST_F(PgStoreTest, ASecondSparrowdOnTheDatabaseIsRefused) {
  auto first = OpenPostgresStore(uri_);
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = OpenPostgresStore(uri_);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(second.status().message(), HasSubstr("another sparrowd"));
  first->reset();
  auto third = OpenPostgresStore(uri_);
  EXPECT_TRUE(third.ok()) << third.status();
}

TEST_F(PgStoreTest, ANewerSchemaIsRefused) {
  ASSERT_TRUE(OpenPostgresStore(uri_).ok());
  {
    auto db = pg::Connection::Open(uri_);
    ASSERT_TRUE(db.ok()) << db.status();
    ASSERT_TRUE(db->Exec("UPDATE sparrow_schema SET version = 99").ok());
  }
  auto store = OpenPostgresStore(uri_);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(store.status().message(), HasSubstr("schema version 99"));
}

TEST_F(PgStoreTest, AnUnreachableDatabaseIsUnavailableWithoutThePassword) {
  auto store = OpenPostgresStore(
      "postgresql://sparrow:hunter2@/sparrow?host=/nonexistent&port=1");
  EXPECT_EQ(store.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(store.status().message(), HasSubstr("postgresql://sparrow@"));
  EXPECT_THAT(store.status().message(), Not(HasSubstr("hunter2")));
}

}  // namespace
}  // namespace sparrow::server
