// Two job managers on one real PostgreSQL 15 database, as two sparrowd
// replicas without gRPC: they share the queue (every job ends once, on one
// of them), a watcher on one replica is woken by the other's events, a
// cancel sent to one stops the job the other runs, and a job whose replica
// stopped without handing it over is taken over. Like the concurrency test,
// its main use is under ThreadSanitizer (claims, leases, the listener).
#include <atomic>
#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/jobs/job_manager.h"
#include "sparrow/v1/job_state.h"
#include "tests/server/testing/postgres_server.h"
#include "tests/server/testing/server_fixture.h"

namespace sparrow::server {
namespace {

// One replica: its store (a connection pool of its own), hub and manager.
struct Replica {
  Replica(const std::string& uri, const std::string& name) {
    auto opened = OpenPostgresStore(uri);
    EXPECT_TRUE(opened.ok()) << opened.status();
    if (!opened.ok()) return;
    store = *std::move(opened);
    JobManagerOptions options;
    options.workers = 1;
    options.worker_binary = SPARROW_BIN_DIR "/sparrowd";
    options.checkpoint_every = 5;
    options.checkpoint_min_interval = absl::ZeroDuration();
    options.replica_name = name;
    options.lease_renew = absl::Milliseconds(200);
    options.lease_expiry = absl::Seconds(1);
    options.claim_poll = absl::Milliseconds(100);
    jobs = std::make_unique<JobManager>(store.get(), &hub, &metrics, options);
  }
  ~Replica() {
    if (jobs != nullptr) jobs->Shutdown();
    hub.Shutdown();
  }
  std::unique_ptr<Store> store;
  EventHub hub;
  ServerMetrics metrics;
  std::unique_ptr<JobManager> jobs;
};

class JobManagerReplicasTest : public testing::PostgresTest {
 protected:
  // Waits (at most 60 s) until `done` holds.
  template <typename F>
  static bool Eventually(F done) {
    const auto end =
        std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!done()) {
      if (std::chrono::steady_clock::now() > end) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
  }
  static v1::Job::State StateOf(Replica& r, const std::string& id) {
    auto job = r.jobs->GetJob("default", id);
    return job.ok() ? job->state() : v1::Job::STATE_UNSPECIFIED;
  }
};

TEST_F(JobManagerReplicasTest, TwoReplicasShareTheQueueWatchersAndCancels) {
  Replica a(uri_, "a"), b(uri_, "b");
  ASSERT_NE(a.jobs, nullptr);
  ASSERT_NE(b.jobs, nullptr);
  const std::string dataset =
      testing::PutTanksDataset(a.store.get(), "default");
  ASSERT_TRUE(a.jobs->Start().ok());
  ASSERT_TRUE(b.jobs->Start().ok());

  // A long job first (it keeps one replica busy), then short ones.
  v1::SubmitJobRequest request;
  *request.mutable_spec() = testing::SmallSpec(dataset, 1000000);
  auto long_job = a.jobs->Submit("default", request);
  ASSERT_TRUE(long_job.ok()) << long_job.status();
  std::vector<std::string> short_ids;
  *request.mutable_spec() = testing::SmallSpec(dataset, 10);
  for (int i = 0; i < 4; ++i) {
    auto job = (i % 2 == 0 ? a : b).jobs->Submit("default", request);
    ASSERT_TRUE(job.ok()) << job.status();
    short_ids.push_back(job->id());
  }
  // Watchers on both replicas' hubs for the long job's first events.
  std::atomic<int> woken{0};
  a.hub.Wait(long_job->id(), 3, [&](bool) { ++woken; });
  b.hub.Wait(long_job->id(), 3, [&](bool) { ++woken; });

  ASSERT_TRUE(Eventually([&] {
    for (const std::string& id : short_ids) {
      if (StateOf(b, id) != v1::Job::SUCCEEDED) return false;
    }
    return true;
  }));
  ASSERT_TRUE(Eventually([&] { return woken.load() == 2; }));

  // Cancel the long job through the replica that does not run it.
  auto running = a.jobs->GetJob("default", long_job->id());
  ASSERT_TRUE(running.ok());
  ASSERT_EQ(running->state(), v1::Job::RUNNING);
  Replica& other = running->replica() == "a" ? b : a;
  ASSERT_TRUE(other.jobs->Cancel("default", long_job->id()).ok());
  ASSERT_TRUE(Eventually(
      [&] { return StateOf(a, long_job->id()) == v1::Job::CANCELLED; }));
  auto cancelled = a.jobs->GetJob("default", long_job->id());
  EXPECT_EQ(cancelled->attempts(), 1);
  EXPECT_EQ(cancelled->replica(), running->replica());
}

TEST_F(JobManagerReplicasTest, AJobLeftByAReplicaIsTakenOver) {
  Replica b(uri_, "b");
  ASSERT_NE(b.jobs, nullptr);
  const std::string dataset =
      testing::PutTanksDataset(b.store.get(), "default");
  std::string id;
  {
    // Replica a claims the job, runs it a little and is gone without a word
    // (its lease is not released: as after a crash).
    auto store = OpenPostgresStore(uri_);
    ASSERT_TRUE(store.ok()) << store.status();
    v1::Job job;
    job.set_id("job-left");
    *job.mutable_spec() = testing::SmallSpec(dataset, 30);
    ASSERT_TRUE((*store)->CreateJob("default", job, nullptr).ok());
    auto claimed = (*store)->ClaimJob("a", absl::Milliseconds(500), 1 << 30);
    ASSERT_TRUE(claimed.ok() && claimed->has_value()) << claimed.status();
    id = (*claimed)->record.job.id();
  }
  ASSERT_TRUE(b.jobs->Start().ok());
  ASSERT_TRUE(Eventually([&] { return StateOf(b, id) == v1::Job::SUCCEEDED; }));
  auto job = b.jobs->GetJob("default", id);
  EXPECT_EQ(job->attempts(), 2);
  EXPECT_EQ(job->replica(), "b");
}

// A sweep on two replicas: one claims it and starts its trials, which run on
// both; when that replica stops, the other takes the sweep over and ends it,
// every trial ending once.
TEST_F(JobManagerReplicasTest, ASweepRunsOnBothReplicasAndOutlivesItsReplica) {
  std::unique_ptr<Replica> replicas[2] = {std::make_unique<Replica>(uri_, "a"),
                                          std::make_unique<Replica>(uri_, "b")};
  ASSERT_NE(replicas[0]->jobs, nullptr);
  ASSERT_NE(replicas[1]->jobs, nullptr);
  const std::string dataset =
      testing::PutTanksDataset(replicas[0]->store.get(), "default");
  for (auto& r : replicas) ASSERT_TRUE(r->jobs->Start().ok());
  v1::SubmitJobRequest request;
  v1::JobSpec& spec = *request.mutable_spec();
  spec = testing::SmallSpec(dataset, 1000000);
  spec.mutable_stopping()->set_max_seconds(0.5);
  spec.mutable_split()->mutable_train(0)->set_last(250);
  auto* validation = spec.mutable_split()->add_validation();
  validation->set_first(251);
  validation->set_last(300);
  spec.mutable_sweep()->set_seeds(4);
  spec.mutable_sweep()->set_max_parallel(2);
  auto submitted = replicas[0]->jobs->Submit("default", request);
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  const std::string id = submitted->id();

  // Two trials run at once; then the sweep's replica stops.
  v1::Job sweep;
  ASSERT_TRUE(Eventually([&] {
    auto job = replicas[1]->jobs->GetJob("default", id);
    if (!job.ok()) return false;
    sweep = *job;
    return sweep.trials_size() == 4 &&
           sweep.trials(1).state() == v1::Job::RUNNING;
  }));
  const int owner = sweep.replica() == "a" ? 0 : 1;
  ASSERT_EQ(sweep.replica(), owner == 0 ? "a" : "b");
  replicas[owner].reset();
  Replica& survivor = *replicas[1 - owner];
  ASSERT_TRUE(Eventually([&] {
    return StateOf(survivor, id) == v1::Job::SUCCEEDED;
  })) << StateOf(survivor, id);

  sweep = *survivor.jobs->GetJob("default", id);
  EXPECT_EQ(sweep.replica(), owner == 0 ? "b" : "a");
  EXPECT_EQ(sweep.attempts(), 2);
  EXPECT_TRUE(sweep.has_chosen_trial());
  std::set<std::string> ran_on;
  for (const v1::SweepTrial& t : sweep.trials()) {
    auto trial = survivor.jobs->GetJob("default", t.job_id());
    ASSERT_TRUE(trial.ok()) << trial.status();
    EXPECT_EQ(trial->state(), v1::Job::SUCCEEDED) << trial->reason();
    int ends = 0;
    for (const auto& h : trial->history()) ends += v1::IsFinal(h.state());
    EXPECT_EQ(ends, 1) << t.job_id();
    for (const auto& h : trial->history()) {
      if (h.state() == v1::Job::RUNNING) {
        ran_on.insert(h.reason().find("replica a") != std::string::npos ? "a"
                                                                        : "b");
      }
    }
  }
  EXPECT_EQ(ran_on.size(), 2u) << "the trials ran on one replica only";
  // Each trial's end is in the sweep's log once, before the sweep's end,
  // whichever replica saw it.
  auto events = survivor.store->ListEvents(id, 0, 100000);
  ASSERT_TRUE(events.ok()) << events.status();
  std::multiset<int> ended;
  for (const v1::ProgressEvent& e : *events) {
    if (e.kind() == v1::ProgressEvent::TRIAL_END) ended.insert(e.trial());
  }
  EXPECT_EQ(ended, (std::multiset<int>{0, 1, 2, 3}));
  ASSERT_FALSE(events->empty());
  EXPECT_TRUE(v1::IsFinalEvent(events->back()));
}

}  // namespace
}  // namespace sparrow::server
