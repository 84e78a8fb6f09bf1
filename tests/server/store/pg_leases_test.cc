// Claims and leases on a real PostgreSQL 15, as several replicas (several
// stores on one database) see them: claim order, the memory filter, no job
// claimed twice under concurrent claims, takeover after a lease expires,
// fencing of the old attempt's writes, cancels of an orphaned job, the
// queue count, and the NOTIFYs that reach the other replicas.
#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/store/store.h"
#include "tests/server/testing/postgres_server.h"

namespace sparrow::server {
namespace {

using ::testing::HasSubstr;

class PgLeasesTest : public testing::PostgresTest {
 protected:
  void SetUp() override {
    PostgresTest::SetUp();
    if (IsSkipped()) return;
    a_ = Open();
    b_ = Open();
  }
  std::unique_ptr<Store> Open() {
    auto store = OpenPostgresStore(uri_);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }
  void Create(const std::string& id, int priority = 0, int64_t memory = 0,
              const std::string& tenant = "t") {
    v1::Job job;
    job.set_id(id);
    job.set_priority(priority);
    job.set_memory_estimate_bytes(memory);
    auto created = a_->CreateJob(tenant, job, nullptr);
    ASSERT_TRUE(created.ok()) << created.status();
  }
  // The id of the job `store` claims (empty for none).
  static std::string ClaimId(Store* store, const std::string& replica,
                             absl::Duration lease = absl::Seconds(30),
                             int64_t memory = int64_t{1} << 40) {
    auto claimed = store->ClaimJob(replica, lease, memory);
    EXPECT_TRUE(claimed.ok()) << claimed.status();
    if (!claimed.ok() || !claimed->has_value()) return "";
    return (*claimed)->record.job.id();
  }

  std::unique_ptr<Store> a_, b_;
};

TEST_F(PgLeasesTest, ClaimsByPriorityThenAgeWithinTheMemoryLeft) {
  Create("old", 0, 100);
  Create("big", 5, 5000);
  Create("urgent", 5, 100);
  Create("new", 0, 100);
  EXPECT_EQ(ClaimId(a_.get(), "a", absl::Seconds(30), 1000), "urgent");
  EXPECT_EQ(ClaimId(a_.get(), "a", absl::Seconds(30), 1000), "old");
  EXPECT_EQ(ClaimId(b_.get(), "b"), "big");
  EXPECT_EQ(ClaimId(b_.get(), "b"), "new");
  EXPECT_EQ(ClaimId(b_.get(), "b"), "");
}

TEST_F(PgLeasesTest, AClaimIsTheRunningTransition) {
  Create("job-1");
  auto claimed = a_->ClaimJob("replica-a", absl::Seconds(30), 1 << 20);
  ASSERT_TRUE(claimed.ok() && claimed->has_value()) << claimed.status();
  const v1::Job& job = (*claimed)->record.job;
  EXPECT_FALSE((*claimed)->resumed);
  EXPECT_EQ((*claimed)->record.tenant, "t");
  EXPECT_EQ(job.state(), v1::Job::RUNNING);
  EXPECT_EQ(job.attempts(), 1);
  EXPECT_EQ(job.replica(), "replica-a");
  EXPECT_THAT(job.reason(), HasSubstr("replica-a"));
  auto stored = b_->GetJob("job-1");
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->job.last_seq(), 2);
  auto events = b_->ListEvents("job-1", 0, 10);
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 2u);
  EXPECT_EQ((*events)[1].state(), v1::Job::RUNNING);
}

TEST_F(PgLeasesTest, ConcurrentClaimsNeverTakeAJobTwice) {
  constexpr int kJobs = 40;
  for (int i = 0; i < kJobs; ++i) Create(absl::StrCat("job-", i));
  std::vector<std::unique_ptr<Store>> stores;
  for (int i = 0; i < 4; ++i) stores.push_back(Open());
  std::mutex mu;
  std::map<std::string, int> claims;
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      while (true) {
        const std::string id = ClaimId(stores[i].get(), absl::StrCat("r", i));
        if (id.empty()) return;
        std::lock_guard<std::mutex> lock(mu);
        ++claims[id];
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(claims.size(), static_cast<size_t>(kJobs));
  for (const auto& [id, n] : claims) EXPECT_EQ(n, 1) << id;
}

TEST_F(PgLeasesTest, AnExpiredLeaseIsTakenOverAndTheOldAttemptIsFenced) {
  Create("job-1");
  ASSERT_EQ(ClaimId(a_.get(), "a", absl::Milliseconds(200)), "job-1");
  EXPECT_EQ(ClaimId(b_.get(), "b"), "");  // the lease holds
  absl::SleepFor(absl::Milliseconds(400));
  auto taken = b_->ClaimJob("b", absl::Seconds(30), 1 << 20);
  ASSERT_TRUE(taken.ok() && taken->has_value()) << taken.status();
  EXPECT_TRUE((*taken)->resumed);
  EXPECT_EQ((*taken)->record.job.attempts(), 2);
  EXPECT_EQ((*taken)->record.job.replica(), "b");
  EXPECT_THAT((*taken)->record.job.reason(), HasSubstr("lease of replica a"));

  // Every write of attempt 1 is refused; attempt 2's go through.
  v1::ProgressEvent event;
  event.set_iteration(1);
  auto appended = a_->AppendEvents("job-1", {event}, 1);
  EXPECT_TRUE(IsLostLease(appended.status())) << appended.status();
  EXPECT_THAT(appended.status().message(), HasSubstr("attempt 2 on replica b"));
  EXPECT_TRUE(IsLostLease(a_->PutCheckpoint("job-1", "stale", 1)));
  EXPECT_TRUE(
      IsLostLease(a_->RenewLease("job-1", 1, absl::Seconds(30)).status()));
  JobTransition end{v1::Job::SUCCEEDED, "done", "", nullptr, {}};
  end.fence = 1;
  EXPECT_TRUE(IsLostLease(a_->TransitionJob("job-1", end).status()));
  EXPECT_TRUE(b_->AppendEvents("job-1", {event}, 2).ok());
  EXPECT_TRUE(b_->PutCheckpoint("job-1", "fresh", 2).ok());
  end.fence = 2;
  EXPECT_TRUE(b_->TransitionJob("job-1", end).ok());
  auto checkpoint = a_->GetCheckpoint("job-1");
  ASSERT_TRUE(checkpoint.ok() && checkpoint->has_value());
  EXPECT_EQ(**checkpoint, "fresh");
}

TEST_F(PgLeasesTest, ARenewedLeaseIsNotTakenOver) {
  Create("job-1");
  ASSERT_EQ(ClaimId(a_.get(), "a", absl::Milliseconds(300)), "job-1");
  for (int i = 0; i < 6; ++i) {
    absl::SleepFor(absl::Milliseconds(100));
    auto job = a_->RenewLease("job-1", 1, absl::Milliseconds(300));
    ASSERT_TRUE(job.ok()) << job.status();
    EXPECT_EQ(job->state(), v1::Job::RUNNING);
    EXPECT_EQ(ClaimId(b_.get(), "b"), "");
  }
  // A lease of zero (a replica's shutdown) hands the job over at once.
  ASSERT_TRUE(a_->RenewLease("job-1", 1, absl::ZeroDuration()).ok());
  EXPECT_EQ(ClaimId(b_.get(), "b"), "job-1");
}

TEST_F(PgLeasesTest, AReplicaRestartedUnderItsNameResumesItsJobsAtOnce) {
  Create("job-1");
  Create("job-2");
  ASSERT_EQ(ClaimId(a_.get(), "a"), "job-1");
  ASSERT_EQ(ClaimId(b_.get(), "b"), "job-2");
  ASSERT_TRUE(a_->PutCheckpoint("job-1", "", 1).ok());
  auto released = a_->ReleaseLeases("a");
  ASSERT_TRUE(released.ok()) << released.status();
  EXPECT_EQ(*released, 1);
  auto again = a_->ClaimJob("a", absl::Seconds(30), 1 << 20);
  ASSERT_TRUE(again.ok() && again->has_value()) << again.status();
  EXPECT_EQ((*again)->record.job.id(), "job-1");
  EXPECT_EQ((*again)->record.job.attempts(), 2);
  EXPECT_THAT((*again)->record.job.reason(),
              HasSubstr("from the checkpoint at iteration 0: the replica "
                        "restarted"));
  EXPECT_EQ(ClaimId(a_.get(), "a"), "");  // b's lease holds
}

TEST_F(PgLeasesTest, AnOrphanedCancellingJobIsCancelledByTheNextClaim) {
  Create("job-1");
  Create("job-2");
  ASSERT_EQ(ClaimId(a_.get(), "a", absl::Milliseconds(100)), "job-1");
  ASSERT_TRUE(
      b_->TransitionJob(
            "job-1",
            {v1::Job::CANCELLING, "cancel", "", nullptr, {v1::Job::RUNNING}})
          .ok());
  absl::SleepFor(absl::Milliseconds(250));
  EXPECT_EQ(ClaimId(b_.get(), "b"), "job-2");
  auto job = b_->GetJob("job-1");
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->job.state(), v1::Job::CANCELLED);
  EXPECT_THAT(job->job.reason(), HasSubstr("replica a stopped"));
}

TEST_F(PgLeasesTest, CountsQueuedJobsOfAllTenantsAndOne) {
  Create("job-1", 0, 0, "t1");
  Create("job-2", 0, 0, "t1");
  Create("job-3", 0, 0, "t2");
  ASSERT_EQ(ClaimId(a_.get(), "a"), "job-1");
  auto t1 = b_->CountQueued("t1");
  auto t2 = b_->CountQueued("t2");
  auto t3 = b_->CountQueued("t3");
  ASSERT_TRUE(t1.ok() && t2.ok() && t3.ok());
  EXPECT_EQ(t1->all, 2);
  EXPECT_EQ(t1->tenant, 1);
  EXPECT_EQ(t2->tenant, 1);
  EXPECT_EQ(t3->all, 2);
  EXPECT_EQ(t3->tenant, 0);
}

TEST_F(PgLeasesTest, AnotherReplicasEventsAreHeard) {
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::vector<std::pair<std::string, int64_t>> heard;
  std::thread listener([&] {
    auto s = b_->Listen(
        [&](const std::string& id, int64_t seq) {
          std::lock_guard<std::mutex> lock(mu);
          heard.emplace_back(id, seq);
        },
        stop);
    EXPECT_TRUE(s.ok()) << s;
  });
  absl::SleepFor(absl::Milliseconds(300));  // LISTEN is in place
  Create("job-1");
  v1::ProgressEvent event;
  event.set_iteration(1);
  ASSERT_TRUE(a_->AppendEvents("job-1", {event, event}, kNoFence).ok());
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (absl::Now() < deadline) {
    std::lock_guard<std::mutex> lock(mu);
    if (heard.size() >= 2) break;
    absl::SleepFor(absl::Milliseconds(20));
  }
  stop = true;
  listener.join();
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(heard.size(), 2u);
  EXPECT_EQ(heard[0], std::make_pair(std::string("job-1"), int64_t{1}));
  EXPECT_EQ(heard[1], std::make_pair(std::string("job-1"), int64_t{3}));
}

TEST_F(PgLeasesTest, OneRequestIdSubmittedToTwoReplicasAtOnceMakesOneJob) {
  for (int round = 0; round < 20; ++round) {
    const std::string request = absl::StrCat("request-", round);
    bool existed[2] = {true, true};
    std::string ids[2];
    std::thread other([&] {
      v1::Job job;
      job.set_id(absl::StrCat("b-", round));
      job.set_request_id(request);
      auto stored = b_->CreateJob("t", job, &existed[1]);
      ASSERT_TRUE(stored.ok()) << stored.status();
      ids[1] = stored->id();
    });
    v1::Job job;
    job.set_id(absl::StrCat("a-", round));
    job.set_request_id(request);
    auto stored = a_->CreateJob("t", job, &existed[0]);
    other.join();
    ASSERT_TRUE(stored.ok()) << stored.status();
    ids[0] = stored->id();
    EXPECT_EQ(ids[0], ids[1]);
    EXPECT_NE(existed[0], existed[1]);
  }
}

TEST_F(PgLeasesTest, ASqliteStoreIsNotShared) {
  const std::string dir = ::testing::TempDir() + "/pg_leases_sqlite";
  std::filesystem::create_directories(dir);
  auto store = OpenSqliteStore(dir + "/sparrow.db");
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_FALSE((*store)->shared());
  EXPECT_EQ((*store)->ClaimJob("a", absl::Seconds(1), 1).status().code(),
            absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace sparrow::server
