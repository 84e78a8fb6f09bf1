// The job manager's isolation of jobs in worker processes: admission by
// estimated memory, a job that allocates past its limit, worker crashes
// (resumed, then FAILED after --max-worker-crashes), a shutdown bounded while
// an epoch runs, and jobs whose progress the store cannot record for a while.
#include "server/jobs/job_manager.h"

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/server/testing/faulty_store.h"
#include "tests/server/testing/service_fixture.h"
#include "translate/sha256.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SPARROW_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SPARROW_TEST_SANITIZED 1
#endif
#endif

namespace sparrow::server {
namespace {

using testing::kLongEpochs;
using testing::ServiceFixture;
using testing::SmallSpec;
using testing::TanksCsv;

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kGiB = int64_t{1} << 30;

// The worker processes this process has started (children running
// `sparrowd --sparrow-worker`).
std::vector<pid_t> WorkerPids() {
  std::vector<pid_t> pids;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const size_t paren = line.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream rest(line.substr(paren + 2));
    char state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid != getpid() || state == 'Z') continue;
    std::ifstream cmdline(entry.path() / "cmdline");
    std::string args((std::istreambuf_iterator<char>(cmdline)),
                     std::istreambuf_iterator<char>());
    if (args.find("--sparrow-worker") != std::string::npos) {
      pids.push_back(std::stoi(name));
    }
  }
  return pids;
}

// A state-space RNN of 12,381 parameters under NAILM: its Gauss-Newton
// matrices need several GB.
v1::JobSpec LargeNailmSpec(const std::string& dataset_id) {
  v1::JobSpec spec = SmallSpec(dataset_id, 5);
  auto* rnn = spec.mutable_model()->mutable_state_space_rnn();
  rnn->set_nx(50);
  rnn->add_fx_hidden(100);
  rnn->add_fy_hidden(40);
  spec.mutable_optimizer()->mutable_nailm();
  return spec;
}

bool HasHistory(const v1::Job& job, const std::string& text) {
  for (const auto& t : job.history()) {
    if (t.reason().find(text) != std::string::npos) return true;
  }
  return false;
}

class MemoryLimitTest : public ServiceFixture {
 protected:
  void Configure(ServerOptions* options) override {
    options->jobs.limits.max_job_memory = 256 * kMiB;
  }
};

TEST_F(MemoryLimitTest, JobNeedingTenTimesTheLimitIsRefusedAtSubmission) {
  const std::string dataset = UploadOrDie(TanksCsv());
  v1::SubmitJobRequest request;
  *request.mutable_spec() = LargeNailmSpec(dataset);
  v1::Job job;
  grpc::Status s = SubmitRequest(request, &job);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(s.error_message().find("--max-job-memory"), std::string::npos)
      << s.error_message();
  EXPECT_NE(s.error_message().find("Gauss-Newton"), std::string::npos)
      << s.error_message();
  // The same model under Adam needs no n x n matrix and is accepted.
  v1::JobSpec adam = LargeNailmSpec(dataset);
  adam.mutable_optimizer()->mutable_adam()->set_learning_rate(0.01);
  SubmitOrDie(adam);
}

class TotalMemoryTest : public ServiceFixture {
 protected:
  void Configure(ServerOptions* options) override {
    options->jobs.limits.max_job_memory = 64 * kGiB;
    options->jobs.limits.max_total_job_memory = 1 * kGiB;
  }
};

TEST_F(TotalMemoryTest, JobOverTheTotalBudgetIsRefused) {
  const std::string dataset = UploadOrDie(TanksCsv());
  v1::SubmitJobRequest request;
  *request.mutable_spec() = LargeNailmSpec(dataset);
  grpc::Status s = SubmitRequest(request, nullptr);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(s.error_message().find("--max-total-job-memory"), std::string::npos)
      << s.error_message();
}

// Admission lets the job in (its estimate is under --max-job-memory), but
// its worker process has only 192 MiB: the allocation of the first
// Gauss-Newton matrix fails, the job ends FAILED with the reason, and a job
// running beside it finishes.
class RuntimeMemoryTest : public ServiceFixture {
 protected:
  void Configure(ServerOptions* options) override {
    options->jobs.workers = 2;
    options->jobs.limits.max_job_memory = 16 * kGiB;
    options->jobs.limits.max_total_job_memory = 64 * kGiB;
    options->jobs.worker_memory_limit_override = 192 * kMiB;
  }
};

TEST_F(RuntimeMemoryTest, JobAllocatingPastItsLimitFailsWhileAnotherFinishes) {
#ifdef SPARROW_TEST_SANITIZED
  GTEST_SKIP() << "sanitizer builds run workers without a memory limit";
#endif
  const std::string dataset = UploadOrDie(TanksCsv());
  const v1::Job big = SubmitOrDie(LargeNailmSpec(dataset));
  const v1::Job small = SubmitOrDie(SmallSpec(dataset, 300));
  const v1::Job failed = WaitForFinal(big.id());
  EXPECT_EQ(failed.state(), v1::Job::FAILED);
  EXPECT_NE(failed.reason().find("ran out of memory"), std::string::npos)
      << failed.reason();
  EXPECT_NE(failed.reason().find("--max-job-memory"), std::string::npos)
      << failed.reason();
  EXPECT_EQ(failed.worker_crashes(), 0);
  EXPECT_EQ(WaitForFinal(small.id()).state(), v1::Job::SUCCEEDED);
}

class CrashTest : public ServiceFixture {
 protected:
  void Configure(ServerOptions* options) override {
    options->jobs.workers = 2;
    options->jobs.max_worker_crashes = 2;
  }

  // The one worker process running now.
  pid_t OnlyWorker() {
    std::vector<pid_t> pids;
    for (int i = 0; i < 500 && pids.size() != 1; ++i) {
      pids = WorkerPids();
      if (pids.size() != 1) usleep(10000);
    }
    EXPECT_EQ(pids.size(), 1u);
    return pids.empty() ? -1 : pids[0];
  }
};

TEST_F(CrashTest, CrashedWorkerResumesThenTheJobFailsAfterTheLimit) {
  const std::string dataset = UploadOrDie(TanksCsv());
  const v1::Job job = StartLongJob(dataset);
  WaitForIterations(job.id(), 30);
  ASSERT_EQ(kill(OnlyWorker(), SIGSEGV), 0);
  // The crash is recorded and the job resumes from its checkpoint.
  v1::Job resumed = WaitForJob(job.id(), [](const v1::Job& j) {
    return j.attempts() == 2 && j.worker_crashes() == 1;
  });
  EXPECT_EQ(resumed.state(), v1::Job::RUNNING) << resumed.reason();
#ifdef SPARROW_TEST_SANITIZED
  // The sanitizer's own SEGV handler reports the crash and exits with 1.
  EXPECT_TRUE(HasHistory(resumed, "its worker process exited with code"))
      << resumed.reason();
#else
  EXPECT_TRUE(HasHistory(resumed, "signal 11")) << resumed.reason();
#endif
  const int before = resumed.iterations();
  WaitForIterations(job.id(), before + 20);

  // A second death (SIGKILL, as the kernel's OOM killer sends) is the last.
  ASSERT_EQ(kill(OnlyWorker(), SIGKILL), 0);
  const v1::Job failed = WaitForFinal(job.id());
  EXPECT_EQ(failed.state(), v1::Job::FAILED);
  EXPECT_NE(failed.reason().find("crashed its worker 2 times"),
            std::string::npos)
      << failed.reason();
  EXPECT_NE(failed.reason().find("out-of-memory killer"), std::string::npos)
      << failed.reason();
  EXPECT_EQ(failed.worker_crashes(), 2);

  // The server is unharmed: the next job runs to the end.
  const v1::Job next = SubmitOrDie(SmallSpec(dataset, 50));
  EXPECT_EQ(WaitForFinal(next.id()).state(), v1::Job::SUCCEEDED);
  std::vector<v1::ProgressEvent> events;
  ASSERT_TRUE(Watch(job.id(), 0, &events).ok());
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].seq(), static_cast<int64_t>(i + 1));
  }
  EXPECT_EQ(events.back().state(), v1::Job::FAILED);
}

// An epoch of a few seconds (NAILS on a 2.6k-parameter RNN over 20,000
// samples) must not hold a shutdown: the worker is killed after stop_grace,
// and the job resumes from its last finished iteration.
class ShutdownTest : public ServiceFixture {
 protected:
  void Configure(ServerOptions* options) override {
    options->jobs.stop_grace = absl::Milliseconds(300);
    options->jobs.checkpoint_every = 1000;  // only the shutdown checkpoints
  }
};

TEST_F(ShutdownTest, StopsWithinTheGraceDuringALongEpoch) {
  const std::string dataset = UploadOrDie(TanksCsv(20000));
  v1::JobSpec spec = SmallSpec(dataset, 100);
  spec.mutable_split()->mutable_train(0)->set_last(19000);
  spec.mutable_split()->mutable_test(0)->set_first(19001);
  spec.mutable_split()->mutable_test(0)->set_last(20000);
  auto* rnn = spec.mutable_model()->mutable_state_space_rnn();
  rnn->set_nx(20);
  rnn->add_fx_hidden(50);
  rnn->add_fy_hidden(20);
  spec.mutable_optimizer()->mutable_nails();
  const v1::Job job = SubmitOrDie(spec);
  const v1::Job first = WaitForJob(
      job.id(), [](const v1::Job& j) { return j.iterations() >= 1; }, "",
      absl::Seconds(120));
  ASSERT_GE(first.iterations(), 1) << first.reason();
  const absl::Time t0 = absl::Now();
  server_->Shutdown(absl::Seconds(5));
  const absl::Duration took = absl::Now() - t0;
  EXPECT_LT(took, absl::Milliseconds(1800)) << absl::FormatDuration(took);

  server_.reset();
  StartServer();
  const v1::Job resumed =
      WaitForJob(job.id(), [](const v1::Job& j) { return j.attempts() == 2; });
  EXPECT_TRUE(HasHistory(resumed, "from the checkpoint at iteration"))
      << resumed.reason();
  EXPECT_GE(resumed.iterations(), first.iterations());
  CancelAndWait(job.id());
}

// The store fails every write for a while (a full disk): the job's attempt
// ends, the job is retried with a pause, a cancel during the failure is an
// error (not a silent OK), and once the store works again the job resumes
// and can be cancelled; its events stay dense and end with the final state.
class StoreFailureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           absl::StrCat("faulty-", getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    auto sqlite = OpenSqliteStore((dir_ / "sparrow.db").string());
    ASSERT_TRUE(sqlite.ok()) << sqlite.status();
    store_ = std::make_unique<testing::FaultyStore>(std::move(*sqlite));
    JobManagerOptions options;
    options.workers = 1;
    options.worker_binary = SPARROW_BIN_DIR "/sparrowd";
    options.checkpoint_every = 10;
    options.checkpoint_min_interval = absl::ZeroDuration();
    manager_ =
        std::make_unique<JobManager>(store_.get(), &hub_, &metrics_, options);
    ASSERT_TRUE(manager_->Start().ok());
  }
  void TearDown() override {
    manager_.reset();
    hub_.Shutdown();
    std::filesystem::remove_all(dir_);
  }

  std::string PutTanks() { return testing::PutTanksDataset(store_.get(), "t"); }

  v1::Job Wait(const std::string& id,
               const std::function<bool(const v1::Job&)>& done) {
    const absl::Time end = absl::Now() + absl::Seconds(20);
    v1::Job job;
    while (absl::Now() < end) {
      auto got = manager_->GetJob("t", id);
      EXPECT_TRUE(got.ok()) << got.status();
      if (!got.ok()) break;
      job = *got;
      if (done(job)) break;
      usleep(5000);
    }
    return job;
  }

  std::filesystem::path dir_;
  std::unique_ptr<testing::FaultyStore> store_;
  EventHub hub_;
  ServerMetrics metrics_;
  std::unique_ptr<JobManager> manager_;
};

TEST_F(StoreFailureTest, JobResumesAfterTheStoreRecoversAndCanBeCancelled) {
  v1::SubmitJobRequest request;
  *request.mutable_spec() = SmallSpec(PutTanks(), kLongEpochs);
  auto job = manager_->Submit("t", request);
  ASSERT_TRUE(job.ok()) << job.status();
  const std::string id = job->id();
  Wait(id, [](const v1::Job& j) { return j.iterations() >= 30; });

  store_->set_fail_writes(true);
  // The attempt ends: no worker holds the job while the store fails.
  for (int i = 0; i < 400 && manager_->running_jobs() > 0; ++i) usleep(5000);
  EXPECT_EQ(manager_->running_jobs(), 0);
  EXPECT_EQ(manager_->queue_depth(), 1);
  const int frozen = manager_->GetJob("t", id)->iterations();
  auto refused = manager_->Cancel("t", id);
  EXPECT_FALSE(refused.ok()) << "a cancel the store could not record said OK";

  store_->set_fail_writes(false);
  const v1::Job resumed = Wait(id, [&](const v1::Job& j) {
    return j.attempts() == 2 && j.iterations() > frozen + 20;
  });
  EXPECT_EQ(resumed.state(), v1::Job::RUNNING);
  EXPECT_TRUE(HasHistory(resumed, "store failure")) << resumed.reason();
  auto cancelled = manager_->Cancel("t", id);
  ASSERT_TRUE(cancelled.ok()) << cancelled.status();
  const v1::Job end = Wait(
      id, [](const v1::Job& j) { return j.state() == v1::Job::CANCELLED; });
  EXPECT_EQ(end.state(), v1::Job::CANCELLED);
  auto events = store_->ListEvents(id, 0, 100000);
  ASSERT_TRUE(events.ok());
  for (size_t i = 0; i < events->size(); ++i) {
    EXPECT_EQ((*events)[i].seq(), static_cast<int64_t>(i + 1));
  }
  EXPECT_EQ(events->back().state(), v1::Job::CANCELLED);
}

}  // namespace
}  // namespace sparrow::server
