// The job manager without gRPC: concurrent submissions, cancellations and
// event waits against a real SQLite store and two workers. Its main use is
// under ThreadSanitizer (make sanitize-tsan), which cannot check the service
// tests (uninstrumented gRPC), so the thread interactions are real here.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/jobs/job_manager.h"
#include "sparrow/v1/job_state.h"
#include "tests/server/testing/server_fixture.h"
#include "translate/sha256.h"

namespace sparrow::server {
namespace {

TEST(JobManagerConcurrencyTest,
     ConcurrentSubmitsCancelsAndWatchersEndEveryJobOnce) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) /
      absl::StrCat("job-manager-", getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto store = OpenSqliteStore((dir / "sparrow.db").string());
  ASSERT_TRUE(store.ok()) << store.status();
  EventHub hub;
  ServerMetrics metrics;
  JobManagerOptions options;
  options.workers = 2;
  options.worker_binary = SPARROW_BIN_DIR "/sparrowd";
  options.checkpoint_every = 5;
  options.checkpoint_min_interval = absl::ZeroDuration();
  JobManager jobs(store->get(), &hub, &metrics, options);

  const std::string dataset_id =
      testing::PutTanksDataset(store->get(), "default");
  ASSERT_TRUE(jobs.Start().ok());

  // Three threads submit two jobs each: a short one and one that runs until
  // it is cancelled.
  std::vector<std::string> short_ids(3), long_ids(3);
  std::vector<std::thread> submitters;
  for (int t = 0; t < 3; ++t) {
    submitters.emplace_back([&, t] {
      v1::SubmitJobRequest request;
      *request.mutable_spec() = testing::SmallSpec(dataset_id, 10);
      auto a = jobs.Submit("default", request);
      *request.mutable_spec() = testing::SmallSpec(dataset_id, 100000);
      request.set_priority(1);
      auto b = jobs.Submit("default", request);
      ASSERT_TRUE(a.ok() && b.ok());
      short_ids[t] = a->id();
      long_ids[t] = b->id();
    });
  }
  for (auto& t : submitters) t.join();

  // A watcher per long job waits on the hub for its events.
  std::atomic<int> wakeups{0};
  for (const std::string& id : long_ids) {
    hub.Wait(id, 0, [&](bool) { ++wakeups; });
  }
  // Cancel the long jobs from another thread while the workers run them.
  std::thread canceller([&] {
    for (const std::string& id : long_ids) {
      ASSERT_TRUE(jobs.Cancel("default", id).ok());
    }
  });
  canceller.join();

  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  auto all_final = [&] {
    for (const auto* ids : {&short_ids, &long_ids}) {
      for (const std::string& id : *ids) {
        auto job = jobs.GetJob("default", id);
        if (!job.ok() || !v1::IsFinal(job->state())) return false;
      }
    }
    return true;
  };
  while (!all_final() && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (const std::string& id : short_ids) {
    EXPECT_EQ(jobs.GetJob("default", id)->state(), v1::Job::SUCCEEDED) << id;
  }
  for (const std::string& id : long_ids) {
    EXPECT_EQ(jobs.GetJob("default", id)->state(), v1::Job::CANCELLED) << id;
  }
  jobs.Shutdown();
  hub.Shutdown();
  EXPECT_EQ(wakeups.load(), 3);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sparrow::server
