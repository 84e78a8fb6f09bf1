// LoadSeries: a short job is read event by event, a long one from the stored
// series blocks; either way at most `points` samples in seq order that keep
// the global extremes, with the exact count, best and final values.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/http/series.h"
#include "server/store/store.h"

namespace sparrow::server::http {
namespace {

class LoadSeriesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           absl::StrCat("load_series_test_", ::getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    auto store = OpenSqliteStore((dir_ / "sparrow.db").string());
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    v1::Job job;
    job.set_id("job-1");
    bool existed = false;
    ASSERT_TRUE(store_->CreateJob("acme", job, &existed).ok());
    JobTransition running;
    running.to = v1::Job::RUNNING;
    ASSERT_TRUE(store_->TransitionJob("job-1", running).ok());
    // A decaying loss with one spike and one dip in the middle.
    for (int first = 1; first <= kEvents; first += 500) {
      std::vector<v1::ProgressEvent> events;
      for (int it = first; it < first + 500; ++it) {
        v1::ProgressEvent& e = events.emplace_back();
        e.set_iteration(it);
        e.set_elapsed_seconds(1e-3 * it);
        e.set_loss(it == kSpike ? 50.0 : it == kDip ? 1e-6 : 1.0 / it + 0.01);
        if (it % 100 == 0) e.set_validation_metric(3.0 / it);
        e.set_sparsity_pct(it / 1000.0);
      }
      ASSERT_TRUE(
          store_->AppendEvents("job-1", std::move(events), kNoFence).ok());
    }
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  Series Load(int points) {
    auto job = store_->GetJob("job-1");
    EXPECT_TRUE(job.ok());
    auto series =
        LoadSeries(store_.get(), "job-1", job->job.last_seq(), points);
    EXPECT_TRUE(series.ok()) << series.status();
    return series.value_or(Series());
  }

  static constexpr int kEvents = 20000, kSpike = 12345, kDip = 777;
  std::filesystem::path dir_;
  std::unique_ptr<Store> store_;
};

void ExpectKeepsTheExtremesInOrder(const Series& s, int points) {
  ASSERT_LE(s.points.size(), static_cast<size_t>(points));
  for (size_t i = 1; i < s.points.size(); ++i) {
    ASSERT_LT(s.points[i - 1].seq(), s.points[i].seq());
  }
  auto has = [&](int iteration) {
    return std::any_of(s.points.begin(), s.points.end(), [&](const auto& p) {
      return p.iteration() == iteration;
    });
  };
  EXPECT_TRUE(has(12345)) << "the spike";
  EXPECT_TRUE(has(777)) << "the dip";
}

void ExpectExactTotals(const Series& s) {
  EXPECT_EQ(s.total.count(), 20000);
  EXPECT_EQ(s.last_seq, 20002);  // two STATE events, then the iterations
  EXPECT_EQ(s.total.min().loss(), 1e-6);
  EXPECT_EQ(s.total.max().loss(), 50.0);
  EXPECT_EQ(s.total.last().iteration(), 20000);
  EXPECT_EQ(s.total.best_validation_metric(), 3.0 / 20000);
  EXPECT_EQ(s.total.last_sparsity_pct(), 20.0);
  ASSERT_EQ(s.states.size(), 2u);
  EXPECT_EQ(s.states[1].seq, 2);
  EXPECT_EQ(s.states[1].state, v1::Job::RUNNING);
}

TEST_F(LoadSeriesTest, AFewPointsComeFromTheBlocks) {
  // 100 buckets of 200 seqs: level 2 (64 seqs a block), 313 blocks.
  const Series s = Load(200);
  EXPECT_GE(s.points.size(), 150u);
  ExpectKeepsTheExtremesInOrder(s, 200);
  ExpectExactTotals(s);
}

TEST_F(LoadSeriesTest, EventsAfterTheGivenLastSeqJoinTheLastBucket) {
  auto series = LoadSeries(store_.get(), "job-1", 15000, 200);
  ASSERT_TRUE(series.ok()) << series.status();
  ExpectKeepsTheExtremesInOrder(*series, 200);
  ExpectExactTotals(*series);  // the blocks hold every event
}

TEST_F(LoadSeriesTest, AShortReadStopsAtTheGivenLastSeq) {
  auto series = LoadSeries(store_.get(), "job-1", 3000, 2000);  // events
  ASSERT_TRUE(series.ok()) << series.status();
  EXPECT_EQ(series->last_seq, 3000);
  EXPECT_EQ(series->total.count(), 2998);
  EXPECT_LE(series->points.size(), 2000u);

  auto every = LoadSeries(store_.get(), "job-1", 1000, 1000);
  ASSERT_TRUE(every.ok()) << every.status();
  ASSERT_EQ(every->points.size(), 998u);  // each event its own bucket
  EXPECT_EQ(every->points[41].iteration(), 42);
}

TEST_F(LoadSeriesTest, ManyPointsComeFromTheEvents) {
  // 20,002 events (20,000 iterations) > 20,000 points: 10,000 buckets of
  // two or three seqs.
  const Series almost = Load(20000);
  EXPECT_GE(almost.points.size(), 19990u);
  ExpectKeepsTheExtremesInOrder(almost, 20000);
  ExpectExactTotals(almost);

  const Series some = Load(4000);  // 2000 buckets of 10 seqs
  EXPECT_GE(some.points.size(), 3000u);
  ExpectKeepsTheExtremesInOrder(some, 4000);
  ExpectExactTotals(some);
}

}  // namespace
}  // namespace sparrow::server::http
