// The PostgreSQL layer on a real PostgreSQL 15 (started by the test): `?N`
// placeholders, text / integer / bytea round trips including NUL bytes and
// NULL, rollback unless committed, row counts, and the errors a failure maps
// to (with the password never in a message).
#include "server/store/internal/pg_db.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "server/internal_error.h"
#include "server/store/internal/sql_db.h"
#include "tests/server/testing/postgres_server.h"

namespace sparrow::server::pg {
namespace {

class PgDbTest : public testing::PostgresTest {
 protected:
  void SetUp() override {
    PostgresTest::SetUp();
    if (IsSkipped()) return;
    auto connection = Connection::Open(uri_);
    ASSERT_TRUE(connection.ok()) << connection.status();
    db_ = std::make_unique<Connection>(*std::move(connection));
    ASSERT_TRUE(db_->Exec("CREATE TABLE t (id BIGINT PRIMARY KEY, name TEXT, "
                          "data BYTEA NOT NULL)")
                    .ok());
  }

  int64_t Count() {
    auto select = db_->Prepare("SELECT count(*) FROM t");
    EXPECT_TRUE(select.ok());
    EXPECT_TRUE(*select->Step());
    return select->ColumnInt64(0);
  }

  std::unique_ptr<Connection> db_;
};

TEST(PgPlaceholdersTest, QuestionMarksBecomeDollarsOutsideQuotes) {
  EXPECT_EQ(ToPostgresPlaceholders("SELECT a FROM t WHERE b = ?1 AND c = ?12"),
            "SELECT a FROM t WHERE b = $1 AND c = $12");
  EXPECT_EQ(ToPostgresPlaceholders("SELECT '?1', \"?\" FROM t WHERE x = ?2"),
            "SELECT '?1', \"?\" FROM t WHERE x = $2");
}

TEST(PgRedactTest, ThePasswordNeverShows) {
  EXPECT_EQ(RedactUri("postgresql://sparrow:s3cret@db:5432/sparrow"),
            "postgresql://sparrow@db:5432/sparrow");
  EXPECT_EQ(RedactUri("postgresql://db/sparrow"), "postgresql://db/sparrow");
}

TEST_F(PgDbTest, ValuesRoundTrip) {
  const std::string blob("a\0b\xff", 4);
  auto insert =
      db_->Prepare("INSERT INTO t (id, name, data) VALUES (?1, ?2, ?3)");
  ASSERT_TRUE(insert.ok());
  insert->BindInt64(1, -(int64_t{1} << 40));
  insert->BindText(2, "ünïcode");
  insert->BindBlob(3, blob);
  ASSERT_TRUE(insert->Run().ok());
  EXPECT_EQ(insert->changes(), 1);
  insert->Reset();
  insert->BindInt64(1, 7);
  insert->BindTextOrNull(2, "");
  insert->BindBlob(3, "");
  ASSERT_TRUE(insert->Run().ok());

  auto select =
      db_->Prepare("SELECT id, name, data, id > 0 FROM t ORDER BY id");
  ASSERT_TRUE(select.ok());
  ASSERT_TRUE(*select->Step());
  EXPECT_EQ(select->ColumnInt64(0), -(int64_t{1} << 40));
  EXPECT_EQ(select->ColumnString(1), "ünïcode");
  EXPECT_EQ(select->ColumnString(2), blob);
  EXPECT_EQ(select->ColumnInt64(3), 0);
  ASSERT_TRUE(*select->Step());
  EXPECT_EQ(select->ColumnInt64(0), 7);
  EXPECT_EQ(select->ColumnString(1), "");  // NULL
  EXPECT_EQ(select->ColumnString(2), "");
  EXPECT_EQ(select->ColumnInt64(3), 1);
  EXPECT_FALSE(*select->Step());
}

TEST_F(PgDbTest, ATransactionRollsBackUnlessCommitted) {
  {
    sql::BasicTransaction<Connection> txn(db_.get());
    ASSERT_TRUE(txn.Begin(sql::BasicTransaction<Connection>::kWrite).ok());
    ASSERT_TRUE(db_->Exec("INSERT INTO t VALUES (1, 'x', 'y')").ok());
    EXPECT_TRUE(db_->InTransaction());
  }
  EXPECT_FALSE(db_->InTransaction());
  EXPECT_EQ(Count(), 0);
  sql::BasicTransaction<Connection> txn(db_.get());
  ASSERT_TRUE(txn.Begin(sql::BasicTransaction<Connection>::kWrite).ok());
  ASSERT_TRUE(db_->Exec("INSERT INTO t VALUES (1, 'x', 'y')").ok());
  ASSERT_TRUE(txn.Commit().ok());
  EXPECT_EQ(Count(), 1);
}

TEST_F(PgDbTest, ATransactionLeftIdleIsEndedAndTheConnectionComesBack) {
  // What a replica stopped in a transaction meets when it runs again (the
  // sessions' own limit is 5 s; 300 ms here).
  ASSERT_TRUE(
      db_->Exec("SET idle_in_transaction_session_timeout = '300ms'").ok());
  {
    sql::BasicTransaction<Connection> txn(db_.get());
    ASSERT_TRUE(txn.Begin(sql::BasicTransaction<Connection>::kWrite).ok());
    ASSERT_TRUE(db_->Exec("INSERT INTO t VALUES (1, 'x', 'y')").ok());
    absl::SleepFor(absl::Milliseconds(900));
    const absl::Status late = db_->Exec("INSERT INTO t VALUES (2, 'x', 'y')");
    EXPECT_EQ(late.code(), absl::StatusCode::kUnavailable) << late;
    EXPECT_FALSE(db_->InTransaction());
  }
  EXPECT_EQ(Count(), 0);  // reconnected; the transaction was rolled back
  auto timeout = db_->QueryBool(
      "SELECT current_setting('idle_in_transaction_session_timeout') = '5s'");
  ASSERT_TRUE(timeout.ok()) << timeout.status();
  EXPECT_TRUE(*timeout);  // the new session is set up as the first was
}

TEST_F(PgDbTest, FailuresMapToStatusesWithClientMessages) {
  ASSERT_TRUE(db_->Exec("INSERT INTO t VALUES (1, 'x', 'y')").ok());
  absl::Status duplicate = db_->Exec("INSERT INTO t VALUES (1, 'x', 'y')");
  // Retried by the store: the row another transaction inserted is found.
  EXPECT_TRUE(absl::IsAborted(duplicate)) << duplicate;
  EXPECT_NE(duplicate.message().find("duplicate key"), std::string::npos);
  EXPECT_TRUE(ClientMessage(duplicate).has_value());

  auto bad = db_->Prepare("INSERT INTO t (id, name, data) VALUES (?1, ?2, ?3)");
  bad->BindInt64(1, 2);
  bad->BindText(2, std::string("\xff\xfe", 2));
  bad->BindBlob(3, "z");
  absl::Status not_utf8 = bad->Run();
  EXPECT_TRUE(absl::IsInvalidArgument(not_utf8)) << not_utf8;

  auto missing = Connection::Open(
      "postgresql://sparrow:s3cret@/nope?host=/nonexistent&port=1");
  EXPECT_TRUE(absl::IsUnavailable(missing.status())) << missing.status();
  EXPECT_EQ(missing.status().message().find("s3cret"), std::string::npos);
  EXPECT_NE(missing.status().message().find("cannot connect"),
            std::string::npos);
}

}  // namespace
}  // namespace sparrow::server::pg
