// FrameLog against a real SQLite store: the frames every stream of a job
// shares, the replay of a stream far behind it, and the final event.
#include "server/http/frame_log.h"

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/http/event_text.h"

namespace sparrow::server::http {
namespace {

class FrameLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           absl::StrCat("frame_log_test_", ::getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    auto store = OpenSqliteStore((dir_ / "sparrow.db").string());
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    v1::Dataset meta;
    meta.set_id("ds");
    bool existed = false;
    ASSERT_TRUE(store_->PutDataset("t", meta, "x\n1\n", &existed).ok());
    v1::Job job;
    job.set_id("job-1");
    job.mutable_spec()->mutable_data()->set_dataset_id("ds");
    ASSERT_TRUE(store_->CreateJob("t", job, &existed).ok());  // seq 1
    JobTransition running;
    running.to = v1::Job::RUNNING;
    ASSERT_TRUE(store_->TransitionJob("job-1", running).ok());  // seq 2
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  void AppendIterations(int n) {
    std::vector<v1::ProgressEvent> events(n);
    for (int i = 0; i < n; ++i) events[i].set_iteration(i + 1);
    ASSERT_TRUE(
        store_->AppendEvents("job-1", std::move(events), kNoFence).ok());
  }

  // The frames the store's events after after_seq make (the expected text).
  std::string StoreFrames(int64_t after_seq) {
    std::string text;
    auto events = store_->ListEvents("job-1", after_seq, 100000);
    EXPECT_TRUE(events.ok());
    for (const auto& e : *events) AppendSseFrame(e, &text);
    return text;
  }

  std::filesystem::path dir_;
  std::unique_ptr<Store> store_;
};

TEST_F(FrameLogTest, StreamsAtAnyPositionGetTheStoresFrames) {
  AppendIterations(100);                      // seqs 3..102
  FrameLog log(store_.get(), "job-1", 2000);  // a few frames only
  std::string live;
  FrameBatch batch;
  ASSERT_TRUE(log.Read(90, 1000, &live, &batch).ok());
  EXPECT_EQ(live, StoreFrames(90));
  EXPECT_EQ(batch.last_seq, 102);
  EXPECT_EQ(batch.frames, 12);
  EXPECT_FALSE(batch.final);

  // A replay from the start is behind the log: read from the store, in
  // batches of at most max_frames.
  std::string replay;
  FrameBatch first, second;
  ASSERT_TRUE(log.Read(0, 60, &replay, &first).ok());
  EXPECT_EQ(first.frames, 60);
  ASSERT_TRUE(log.Read(first.last_seq, 1000, &replay, &second).ok());
  EXPECT_EQ(replay, StoreFrames(0));
  EXPECT_EQ(second.last_seq, 102);
}

TEST_F(FrameLogTest, NewEventsReachEveryStreamOnceAndTheFinalOneEnds) {
  FrameLog log(store_.get(), "job-1", 1 << 20);
  std::string a, b;
  FrameBatch batch_a, batch_b;
  ASSERT_TRUE(log.Read(0, 1000, &a, &batch_a).ok());
  ASSERT_TRUE(log.Read(0, 1000, &b, &batch_b).ok());
  EXPECT_EQ(batch_a.last_seq, 2);
  AppendIterations(5);
  JobTransition done;
  done.to = v1::Job::SUCCEEDED;
  ASSERT_TRUE(store_->TransitionJob("job-1", done).ok());  // seq 8
  ASSERT_TRUE(log.Read(batch_a.last_seq, 1000, &a, &batch_a).ok());
  ASSERT_TRUE(log.Read(batch_b.last_seq, 1000, &b, &batch_b).ok());
  EXPECT_EQ(a, StoreFrames(0));
  EXPECT_EQ(b, a);
  EXPECT_TRUE(batch_a.final);
  EXPECT_EQ(batch_a.last_seq, 8);
  // Nothing follows the final event.
  FrameBatch after;
  std::string none;
  ASSERT_TRUE(log.Read(8, 1000, &none, &after).ok());
  EXPECT_EQ(after.frames, 0);
}

TEST_F(FrameLogTest, LogsLiveWhileAStreamHoldsThem) {
  FrameLogs logs(store_.get(), 1 << 20);
  std::shared_ptr<FrameLog> one = logs.Get("job-1");
  EXPECT_EQ(logs.Get("job-1"), one);
  std::weak_ptr<FrameLog> weak = one;
  one.reset();
  EXPECT_TRUE(weak.expired());
}

}  // namespace
}  // namespace sparrow::server::http
