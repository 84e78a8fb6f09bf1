// What only the PostgreSQL store does: replicas sharing one database, the
// schema migrated from version 1 and a newer one refused, and errors that
// name the database without its password. Claims and leases are in
// pg_leases_test.cc.
#include <memory>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/store/internal/pg_db.h"
#include "server/store/store.h"
#include "tests/server/testing/postgres_server.h"

namespace sparrow::server {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

using PgStoreTest = testing::PostgresTest;

TEST_F(PgStoreTest, TwoStoresShareOneDatabase) {
  auto first = OpenPostgresStore(uri_);
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = OpenPostgresStore(uri_);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE((*first)->shared());
  v1::Job job;
  job.set_id("job-1");
  ASSERT_TRUE((*first)->CreateJob("t", job, nullptr).ok());
  auto seen = (*second)->GetJob("job-1");
  ASSERT_TRUE(seen.ok()) << seen.status();
  EXPECT_EQ(seen->job.state(), v1::Job::QUEUED);
}

TEST_F(PgStoreTest, AVersion1DatabaseIsMigratedWithItsPriorities) {
  {
    auto store = OpenPostgresStore(uri_);
    ASSERT_TRUE(store.ok()) << store.status();
    for (int i = 0; i < 3; ++i) {
      v1::Job job;
      job.set_id(absl::StrCat("job-", i));
      job.set_priority(i == 1 ? 7 : 0);
      ASSERT_TRUE((*store)->CreateJob("t", job, nullptr).ok());
    }
  }
  {  // What a version 1 database looked like.
    auto db = pg::Connection::Open(uri_);
    ASSERT_TRUE(db.ok()) << db.status();
    ASSERT_TRUE(db->Exec("DROP INDEX jobs_to_claim; "
                         "ALTER TABLE jobs DROP COLUMN priority, "
                         "DROP COLUMN memory, DROP COLUMN replica, "
                         "DROP COLUMN lease_expires; "
                         "UPDATE sparrow_schema SET version = 1")
                    .ok());
  }
  auto store = OpenPostgresStore(uri_);
  ASSERT_TRUE(store.ok()) << store.status();
  auto claimed = (*store)->ClaimJob("r", absl::Seconds(30), 1 << 30);
  ASSERT_TRUE(claimed.ok()) << claimed.status();
  ASSERT_TRUE(claimed->has_value());
  EXPECT_EQ((*claimed)->record.job.id(), "job-1");
  auto db = pg::Connection::Open(uri_);
  ASSERT_TRUE(db.ok());
  auto version = db->QueryBool("SELECT version = 2 FROM sparrow_schema");
  ASSERT_TRUE(version.ok()) << version.status();
  EXPECT_TRUE(*version);
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
