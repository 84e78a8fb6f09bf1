// The series blocks on every backend: kept by AppendEvents at every level
// exactly as if all events had been summarized at once, read with the job in
// one snapshot; and on SQLite, built by the migration of a store of schema
// version 1.
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/store/series_blocks.h"
#include "server/store/store.h"
#include "tests/server/testing/store_backend.h"

namespace sparrow::server {
namespace {

class StoreSeriesTest : public testing::BackendStoreTest {
 protected:
  void CreateJob(const std::string& id) {
    v1::Job job;
    job.set_id(id);
    bool existed = false;
    ASSERT_TRUE(store_->CreateJob("acme", job, &existed).ok());
  }
  void Transition(const std::string& id, v1::Job::State to) {
    JobTransition t;
    t.to = to;
    ASSERT_TRUE(store_->TransitionJob(id, t).ok());
  }
  // Appends n events in batches of 1 to 97, with a state change after the
  // first few batches.
  void AppendMany(const std::string& id, int n) {
    int iteration = 0, batch = 1;
    bool cancelling = false;
    while (iteration < n) {
      std::vector<v1::ProgressEvent> events;
      for (int i = 0; i < batch && iteration < n; ++i) {
        v1::ProgressEvent e;
        e.set_iteration(++iteration);
        e.set_elapsed_seconds(0.01 * iteration);
        e.set_loss(1.0 / iteration + 0.5 * (iteration % 37 == 0));
        if (iteration % 10 == 0) e.set_validation_metric(2.0 / iteration);
        events.push_back(e);
      }
      ASSERT_TRUE(store_->AppendEvents(id, std::move(events), kNoFence).ok());
      batch = batch * 7 % 97 + 1;
      if (iteration > 50 && !cancelling) {
        Transition(id, v1::Job::CANCELLING);
        cancelling = true;
      }
    }
  }
  std::vector<v1::ProgressEvent> AllEvents(const std::string& id) {
    auto events = store_->ListEvents(id, 0, 1 << 20);
    EXPECT_TRUE(events.ok()) << events.status();
    return events.value_or(std::vector<v1::ProgressEvent>());
  }
  // Every level's stored blocks are the summary of all events at once.
  // The job's blocks of one level, and its last_seq as read with them.
  std::vector<v1::SeriesBlock> Blocks(const std::string& id, int level,
                                      int64_t* last_seq = nullptr) {
    std::vector<v1::SeriesBlock> blocks;
    auto job = store_->ScanSeriesBlocks(
        id, level, [&](const v1::SeriesBlock& b) { blocks.push_back(b); });
    EXPECT_TRUE(job.ok()) << job.status();
    if (last_seq != nullptr) *last_seq = job.ok() ? job->last_seq() : -1;
    return blocks;
  }
  void ExpectBlocksSummarizeEvents(const std::string& id) {
    const std::vector<v1::ProgressEvent> events = AllEvents(id);
    for (int level = 1; level <= kSeriesLevels; ++level) {
      int64_t last_seq = 0;
      const std::vector<v1::SeriesBlock> got = Blocks(id, level, &last_seq);
      EXPECT_EQ(last_seq, events.back().seq());
      const std::vector<v1::SeriesBlock> want = SummarizeEvents(events, level);
      ASSERT_EQ(got.size(), want.size()) << "level " << level;
      for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(got[i].SerializeAsString(), want[i].SerializeAsString())
            << "level " << level << " block " << i;
      }
    }
  }
};

INSTANTIATE_TEST_SUITE_P(Backends, StoreSeriesTest,
                         ::testing::ValuesIn(testing::kBackends),
                         testing::BackendName);

TEST_P(StoreSeriesTest, AppendsInBatchesKeepEveryLevelExact) {
  CreateJob("job-1");
  Transition("job-1", v1::Job::RUNNING);
  AppendMany("job-1", 3000);
  ExpectBlocksSummarizeEvents("job-1");
  const std::vector<v1::SeriesBlock> top = Blocks("job-1", kSeriesLevels);
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0].count(), 3000);
}

TEST_P(StoreSeriesTest, HistoryCarriesTheSeqsOfTheStateEvents) {
  CreateJob("job-1");
  Transition("job-1", v1::Job::RUNNING);
  AppendMany("job-1", 120);
  Transition("job-1", v1::Job::CANCELLED);
  std::vector<int64_t> state_seqs, history_seqs;
  for (const v1::ProgressEvent& e : AllEvents("job-1")) {
    if (e.kind() == v1::ProgressEvent::STATE) state_seqs.push_back(e.seq());
  }
  auto record = store_->GetJob("job-1");
  ASSERT_TRUE(record.ok());
  for (const auto& t : record->job.history()) history_seqs.push_back(t.seq());
  EXPECT_EQ(history_seqs, state_seqs);
  EXPECT_EQ(history_seqs.size(), 4u);
}

TEST_P(StoreSeriesTest, ErrorsNameTheJobOrTheLevel) {
  auto visit = [](const v1::SeriesBlock&) {};
  auto missing = store_->ScanSeriesBlocks("job-nope", 1, visit);
  EXPECT_TRUE(absl::IsNotFound(missing.status())) << missing.status();
  EXPECT_NE(missing.status().message().find("job-nope"), std::string::npos);
  CreateJob("job-1");
  for (int level : {0, kSeriesLevels + 1}) {
    auto bad = store_->ScanSeriesBlocks("job-1", level, visit);
    EXPECT_TRUE(absl::IsInvalidArgument(bad.status())) << bad.status();
  }
}

// Turns the file back into schema version 1: no series_blocks table and no
// seqs in the jobs' histories.
void DowngradeToVersion1(const std::string& path) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* select = nullptr;
  ASSERT_EQ(
      sqlite3_prepare_v2(db, "SELECT id, job FROM jobs", -1, &select, nullptr),
      SQLITE_OK);
  std::vector<std::pair<std::string, std::string>> jobs;
  while (sqlite3_step(select) == SQLITE_ROW) {
    v1::Job job;
    ASSERT_TRUE(job.ParseFromArray(sqlite3_column_blob(select, 1),
                                   sqlite3_column_bytes(select, 1)));
    for (auto& t : *job.mutable_history()) t.clear_seq();
    jobs.emplace_back(job.id(), job.SerializeAsString());
  }
  sqlite3_finalize(select);
  for (const auto& [id, blob] : jobs) {
    sqlite3_stmt* update = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, "UPDATE jobs SET job = ?1 WHERE id = ?2",
                                 -1, &update, nullptr),
              SQLITE_OK);
    sqlite3_bind_blob(update, 1, blob.data(), static_cast<int>(blob.size()),
                      SQLITE_TRANSIENT);
    sqlite3_bind_text(update, 2, id.c_str(), -1, SQLITE_TRANSIENT);
    ASSERT_EQ(sqlite3_step(update), SQLITE_DONE);
    sqlite3_finalize(update);
  }
  ASSERT_EQ(
      sqlite3_exec(db, "DROP TABLE series_blocks; PRAGMA user_version = 1;",
                   nullptr, nullptr, nullptr),
      SQLITE_OK);
  sqlite3_close(db);
}

TEST_P(StoreSeriesTest, AStoreOfVersion1IsMigratedOnOpen) {
  if (GetParam() != testing::Backend::kSqlite) {
    GTEST_SKIP() << "version 1 is a SQLite schema";
  }
  CreateJob("job-1");
  Transition("job-1", v1::Job::RUNNING);
  AppendMany("job-1", 700);
  CreateJob("job-2");  // no iteration events
  store_.reset();
  DowngradeToVersion1((dir_ / "sparrow.db").string());
  Reopen();
  ExpectBlocksSummarizeEvents("job-1");
  auto record = store_->GetJob("job-1");
  ASSERT_TRUE(record.ok());
  ASSERT_GE(record->job.history_size(), 3);
  EXPECT_EQ(record->job.history(0).seq(), 1);
  EXPECT_GT(record->job.history(2).seq(), 50);
  EXPECT_TRUE(Blocks("job-2", 1).empty());
}

}  // namespace
}  // namespace sparrow::server
