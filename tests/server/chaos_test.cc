// Chaos: the real sparrowd is SIGKILLed 20 times at random moments and
// restarted on the same data directory and port, while jobs (short and longer
// ones, several workers, checkpoints) run, watchers follow them across the
// restarts (resuming with after_seq), and uploads and submissions (with a
// request_id) are retried until acknowledged. After a last clean restart it
// checks what docs/service.md ("Durability and restarts") promises:
//
//   - every acknowledged job ends exactly once: one final STATE event, the
//     last of its stream, and the job in that final state; each attempt's
//     iterations increase (a job never runs twice at the same time);
//   - nothing acknowledged is lost: every job (and no extra one: a retried
//     submission is the same job), every dataset with its exact content, the
//     model of every SUCCEEDED job;
//   - every watcher sees seq 1, 2, 3, ... with no gap and no duplicate across
//     its reconnects, ending with the final state's event;
//   - no process of a killed sparrowd (e.g. a job's worker process) outlives
//     it.
//
// The schedule (kill moments, job mix, watcher kinds, cancels) comes from one
// seed, printed first; SPARROW_CHAOS_SEED=N replays it (thread timing still
// varies).
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/lib/client.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "server/store/store.h"
#include "sparrow/v1/job_state.h"
#include "sparrow/v1/jobs.grpc.pb.h"
#include "tests/server/testing/server_fixture.h"
#include "tests/server/testing/sparrowd_process.h"
#include "translate/sha256.h"

namespace sparrow::server {
namespace {

using testing::SparrowdProcess;
using testing::TanksCsv;

constexpr int kKills = 20;
constexpr int kWorkers = 3;
constexpr int kSubmitters = 2;
constexpr int kJobsPerSubmitter = 6;
constexpr int kLongJobs = 5;
constexpr int kCancels = 2;
constexpr int kUploads = 6;
constexpr int kLongRows = 2000;

uint32_t ChaosSeed() {
  const char* env = std::getenv("SPARROW_CHAOS_SEED");
  uint32_t seed = 0;
  if (env != nullptr && absl::SimpleAtoi(env, &seed)) return seed;
  return std::random_device{}();
}

// A port below the kernel's ephemeral range that is free now: no other
// test's port-0 server or outgoing connection can take it in the moments
// sparrowd is down between a kill and its restart.
int PickPort() {
  int ephemeral_low = 32768;
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> ephemeral_low;
  const int hi = ephemeral_low - 1;
  const int lo = std::max(1024, hi - 20000);
  std::mt19937 rng(std::random_device{}());
  for (int attempt = 0; attempt < 200 && lo < hi; ++attempt) {
    const int port = std::uniform_int_distribution<int>(lo, hi)(rng);
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    const bool free =
        bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    close(fd);
    if (free) return port;
  }
  return 0;
}

// ---------------------------------------------------------------------------
// Processes, from /proc: a killed sparrowd's descendants (snapshotted while it
// is stopped, just before the SIGKILL) must not outlive it.

struct ProcStat {
  char state = '?';
  pid_t ppid = 0;
  uint64_t start_time = 0;  // clock ticks after boot: tells a reused pid apart
};

std::optional<ProcStat> ReadStat(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  // "pid (comm) state ppid ... starttime(22nd field) ..."; comm may hold
  // spaces and parentheses, so parse after the last ')'.
  const size_t paren = line.rfind(')');
  if (paren == std::string::npos) return std::nullopt;
  std::istringstream fields(line.substr(paren + 2));
  ProcStat stat;
  fields >> stat.state >> stat.ppid;
  std::string skip;
  for (int field = 5; field < 22; ++field) fields >> skip;
  fields >> stat.start_time;
  if (!fields) return std::nullopt;
  return stat;
}

std::string Cmdline(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/cmdline"));
  std::string s((std::istreambuf_iterator<char>(in)),
                std::istreambuf_iterator<char>());
  std::replace(s.begin(), s.end(), '\0', ' ');
  return s;
}

std::vector<pid_t> AllPids() {
  std::vector<pid_t> pids;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    pid_t pid = 0;
    if (absl::SimpleAtoi(entry.path().filename().string(), &pid)) {
      pids.push_back(pid);
    }
  }
  return pids;
}

struct ProcessId {
  pid_t pid;
  uint64_t start_time;
};

// Every process under `root` (not root itself).
std::vector<ProcessId> Descendants(pid_t root) {
  std::map<pid_t, ProcStat> stats;
  for (pid_t pid : AllPids()) {
    if (auto s = ReadStat(pid)) stats[pid] = *s;
  }
  std::vector<ProcessId> out;
  std::set<pid_t> tree = {root};
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& [pid, s] : stats) {
      if (tree.count(s.ppid) > 0 && tree.insert(pid).second) {
        out.push_back({pid, s.start_time});
        grew = true;
      }
    }
  }
  return out;
}

// Each process still alive (not a zombie) that is one of `known`, or whose
// command line names `needle`.
std::vector<ProcessId> Survivors(const std::vector<ProcessId>& known,
                                 const std::string& needle) {
  std::vector<ProcessId> out;
  std::set<pid_t> seen;
  auto add = [&](pid_t pid, const ProcStat& s) {
    if (s.state != 'Z' && seen.insert(pid).second) {
      out.push_back({pid, s.start_time});
    }
  };
  for (const ProcessId& p : known) {
    auto s = ReadStat(p.pid);
    if (s.has_value() && s->start_time == p.start_time) add(p.pid, *s);
  }
  for (pid_t pid : AllPids()) {
    if (pid == getpid()) continue;
    if (!absl::StrContains(Cmdline(pid), needle)) continue;
    if (auto s = ReadStat(pid)) add(pid, *s);
  }
  return out;
}

// ---------------------------------------------------------------------------
// What the clients do, and what the server acknowledged.

// One planned job, all drawn from the seed.
struct JobPlan {
  int index = 0;
  bool long_job = false;
  int epochs = 0;
  uint64_t seed = 1;
  bool cancel = false;         // cancelled at a random moment
  bool raw_watcher = false;    // watched with the raw stub, else Client::Watch
  absl::Duration gap_before;   // before its submission
  absl::Duration watch_delay;  // between acknowledgement and watching
  absl::Duration cancel_delay;
};

// A job the server acknowledged, and what its watcher and canceller saw.
struct Submitted {
  JobPlan plan;
  std::string request_id;
  std::string dataset_id;
  std::string job_id;
  std::vector<v1::ProgressEvent> watched;
  int watch_streams = 0;
  std::optional<absl::Status> cancel_answer;  // of the acknowledged Cancel
  v1::Job::State cancel_state = v1::Job::STATE_UNSPECIFIED;
};

struct Upload {
  std::string csv;
  int rows = 0;
  std::string id;  // set when acknowledged
};

// The spec of a planned job: a NARX-MLP trained with Adam (whose moments
// survive a resume) on a cascaded-tanks record.
v1::JobSpec Spec(const JobPlan& plan, const std::string& dataset_id) {
  v1::JobSpec spec = testing::SmallSpec(dataset_id, plan.epochs);
  spec.set_name(absl::StrCat(plan.long_job ? "long-" : "short-", plan.index));
  spec.set_seed(plan.seed);
  if (plan.long_job) {
    spec.mutable_split()->mutable_train(0)->set_last(1600);
    spec.mutable_split()->mutable_test(0)->set_first(1601);
    spec.mutable_split()->mutable_test(0)->set_last(kLongRows);
    spec.mutable_model()->mutable_narx_mlp()->set_hidden(0, 32);
  }
  return spec;
}

// Errors of a call that the kill of the server cut short or that found it
// down: retried. Anything else is an answer.
bool Transient(const absl::Status& s) {
  return absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s) ||
         absl::IsCancelled(s) || absl::IsUnknown(s);
}

// The invariants of one job's stored stream (a replay from seq 0): seqs 1..n
// each once; QUEUED first; exactly one final event, the last; one RUNNING
// event per attempt; and within an attempt (from its RUNNING event on) the
// iterations increase from where it started or resumed.
void ExpectWellFormedStream(const std::vector<v1::ProgressEvent>& events,
                            const v1::Job& job, int epochs) {
  ASSERT_FALSE(events.empty());
  int finals = 0, runnings = 0, last_iteration = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    const v1::ProgressEvent& e = events[i];
    ASSERT_EQ(e.seq(), static_cast<int64_t>(i + 1)) << "event " << i;
    finals += v1::IsFinalEvent(e);
    if (e.kind() == v1::ProgressEvent::STATE && e.state() == v1::Job::RUNNING) {
      ++runnings;
      last_iteration = 0;
      const size_t at = e.reason().rfind(' ');
      if (absl::StrContains(e.reason(), "checkpoint at iteration")) {
        ASSERT_TRUE(
            absl::SimpleAtoi(e.reason().substr(at + 1), &last_iteration))
            << e.reason();
      }
    } else if (e.kind() == v1::ProgressEvent::ITERATION) {
      EXPECT_GT(e.iteration(), last_iteration)
          << "seq " << e.seq() << ": iteration " << e.iteration() << " after "
          << last_iteration
          << " in the same attempt (two runs of one job at once?)";
      EXPECT_LE(e.iteration(), epochs) << "seq " << e.seq();
      last_iteration = e.iteration();
    }
  }
  EXPECT_EQ(events.front().kind(), v1::ProgressEvent::STATE);
  EXPECT_EQ(events.front().state(), v1::Job::QUEUED);
  EXPECT_EQ(finals, 1) << "final STATE events";
  EXPECT_TRUE(v1::IsFinalEvent(events.back()))
      << "last event: " << events.back().ShortDebugString();
  EXPECT_EQ(events.back().state(), job.state());
  EXPECT_EQ(events.back().seq(), job.last_seq());
  EXPECT_EQ(runnings, job.attempts());
  int final_transitions = 0;
  for (const v1::Job::Transition& t : job.history()) {
    final_transitions += v1::IsFinal(t.state());
  }
  EXPECT_EQ(final_transitions, 1) << job.ShortDebugString();
}

// ---------------------------------------------------------------------------
class SparrowdChaos : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = ChaosSeed();
    rng_.seed(seed_);
    dir_ = std::filesystem::path(::testing::TempDir()) /
           absl::StrFormat("sparrowd-chaos-%d", getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    port_ = PickPort();
    ASSERT_GT(port_, 0) << "no free port below the ephemeral range";
    address_ = absl::StrCat("127.0.0.1:", port_);

    client::ClientOptions options;
    options.address = address_;
    options.deadline = absl::Seconds(10);
    options.max_attempts = 1;  // Retry() retries, and counts
    options.initial_backoff = absl::Milliseconds(50);
    options.max_backoff = absl::Milliseconds(500);
    options.chunk_bytes = 8 << 10;  // several chunks per upload
    options.watch_reconnect_for = absl::Seconds(30);
    auto c = client::Client::Connect(options);
    ASSERT_TRUE(c.ok()) << c.status();
    client_ = std::move(*c);
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 50);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 500);
    raw_jobs_ = v1::JobService::NewStub(grpc::CreateCustomChannel(
        address_, grpc::InsecureChannelCredentials(), args));
  }

  void TearDown() override {
    JoinClients();
    if (HasFailure()) {
      const size_t n = processes_.size();
      for (size_t i = n > 3 ? n - 3 : 0; i < n; ++i) {
        const std::string out = processes_[i]->output();
        std::cerr << "---- sparrowd #" << i << " output (last 30000 bytes):\n"
                  << out.substr(out.size() > 30000 ? out.size() - 30000 : 0)
                  << "\n";
      }
    }
    processes_.clear();  // SIGKILL and reap whatever still runs
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  std::string data_dir() const { return (dir_ / "data").string(); }

  void StartServer() {
    processes_.push_back(
        std::make_unique<SparrowdProcess>(std::vector<std::string>{
            "--listen", address_, "--http-listen", "", "--data-dir", data_dir(),
            "--workers", absl::StrCat(kWorkers), "--checkpoint-every", "10",
            "--checkpoint-min-seconds", "0.1"}));
    started_ = absl::Now();
  }

  SparrowdProcess* process() { return processes_.back().get(); }

  // Stops the server where it is (so that it cannot fork meanwhile), notes
  // its descendants, and SIGKILLs it.
  void KillServer() {
    const pid_t pid = process()->pid();
    ASSERT_TRUE(process()->running()) << "sparrowd exited by itself; output:\n"
                                      << process()->output();
    kill(pid, SIGSTOP);
    int status = 0;
    waitpid(pid, &status, WUNTRACED);
    for (const ProcessId& p : Descendants(pid)) children_.push_back(p);
    process()->Kill();
  }

  absl::Duration Uniform(absl::Duration lo, absl::Duration hi) {
    std::lock_guard<std::mutex> lock(mu_);
    return lo + (hi - lo) * std::uniform_real_distribution<double>(0, 1)(rng_);
  }

  // Retries and watchers stop at this time (a run that cannot finish fails
  // rather than hangs).
  void GiveUpAt(absl::Time t) { give_up_ms_ = absl::ToUnixMillis(t); }
  bool GivenUp() const {
    return absl::ToUnixMillis(absl::Now()) >= give_up_ms_.load();
  }

  // Ends the client threads (at once when the test failed half-way).
  void JoinClients() {
    if (HasFatalFailure()) {
      GiveUpAt(absl::Now());
      if (!processes_.empty()) process()->Kill();
    }
    for (std::thread& t : clients_) t.join();
    clients_.clear();
    std::vector<std::thread> helpers;
    {
      std::lock_guard<std::mutex> lock(mu_);
      helpers.swap(helpers_);
    }
    for (std::thread& t : helpers) t.join();
  }

  // Calls `call` until it answers (anything but a transient error) or the
  // test gives up; counts the transient errors.
  template <typename T>
  absl::StatusOr<T> Retry(const std::function<absl::StatusOr<T>()>& call) {
    while (true) {
      absl::StatusOr<T> result = call();
      if (result.ok() || !Transient(result.status()) || GivenUp()) {
        return result;
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        // "UNAVAILABLE (failed to connect ...)": the code, and the reason
        // after the client's "cannot reach sparrowd at ADDRESS: ".
        absl::string_view why = result.status().message();
        const size_t at = why.find(address_ + ": ");
        if (at != absl::string_view::npos) {
          why.remove_prefix(at + address_.size() + 2);
        }
        ++transient_[absl::StrCat(
            absl::StatusCodeToString(result.status().code()), " (",
            why.substr(0, 30), "...)")];
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
  }

  // Uploads each dataset (several chunks each) until acknowledged.
  void Uploader(const std::vector<absl::Duration>& gaps) {
    for (size_t i = 0; i < uploads_.size(); ++i) {
      absl::SleepFor(gaps[i]);
      Upload& u = uploads_[i];
      auto dataset = Retry<v1::Dataset>([&] {
        return client_->Upload(u.csv, absl::StrCat("chaos-", i, ".csv"));
      });
      ASSERT_TRUE(dataset.ok()) << "upload " << i << ": " << dataset.status();
      EXPECT_EQ(dataset->id(), translate::Sha256Hex(u.csv));
      std::lock_guard<std::mutex> lock(mu_);
      u.id = dataset->id();
      acknowledged_uploads_.push_back(u.id);
    }
  }

  // Submits its jobs until acknowledged, then has each watched (and some
  // cancelled) from their own threads.
  void Submitter(int submitter, std::vector<JobPlan> plans) {
    for (const JobPlan& plan : plans) {
      absl::SleepFor(plan.gap_before);
      auto submitted = std::make_shared<Submitted>();
      submitted->plan = plan;
      submitted->request_id =
          absl::StrFormat("chaos-%u-%d-%d", seed_, submitter, plan.index);
      {
        // Long jobs need the long record; short ones take the newest
        // acknowledged upload (each has at least 400 rows).
        std::lock_guard<std::mutex> lock(mu_);
        submitted->dataset_id = plan.long_job ? long_dataset_ : short_dataset_;
        if (!plan.long_job && !acknowledged_uploads_.empty()) {
          submitted->dataset_id = acknowledged_uploads_.back();
        }
      }
      const v1::JobSpec spec = Spec(plan, submitted->dataset_id);
      auto job = Retry<v1::Job>(
          [&] { return client_->Submit(spec, submitted->request_id); });
      ASSERT_TRUE(job.ok())
          << "submit " << submitted->request_id << ": " << job.status();
      submitted->job_id = job->id();
      std::lock_guard<std::mutex> lock(mu_);
      submitted_.push_back(submitted);
      helpers_.emplace_back([this, submitted] { Watch(submitted.get()); });
      if (plan.cancel) {
        helpers_.emplace_back([this, submitted] { Cancel(submitted.get()); });
      }
    }
  }

  void Cancel(Submitted* s) {
    absl::SleepFor(s->plan.cancel_delay);
    auto job = Retry<v1::Job>([&] { return client_->CancelJob(s->job_id); });
    std::lock_guard<std::mutex> lock(mu_);
    s->cancel_answer = job.status();
    if (job.ok()) s->cancel_state = job->state();
    std::cerr << "[ chaos ] cancel " << s->job_id << ": "
              << (job.ok() ? v1::Job::State_Name(job->state())
                           : job.status().ToString())
              << "\n";
  }

  // Follows the job to its final event from seq 0, reconnecting with
  // after_seq = the last seq received: through Client::Watch (which resumes
  // by itself, and is resumed again should it give up) or through the raw
  // stub (which shows a duplicate the client library would drop).
  void Watch(Submitted* s) {
    absl::SleepFor(s->plan.watch_delay);
    std::vector<v1::ProgressEvent> events;
    int streams = 0;
    auto final_seen = [&] {
      return !events.empty() && v1::IsFinalEvent(events.back());
    };
    while (!final_seen() && !GivenUp()) {
      const int64_t after = events.empty() ? 0 : events.back().seq();
      ++streams;
      if (!s->plan.raw_watcher) {
        auto done =
            client_->Watch(s->job_id, after, [&](const v1::ProgressEvent& e) {
              events.push_back(e);
              return !GivenUp();
            });
        if (!done.ok() && !Transient(done.status())) {
          ADD_FAILURE() << s->job_id << ": Watch: " << done.status();
          break;
        }
        if (!final_seen()) absl::SleepFor(absl::Milliseconds(20));
        continue;
      }
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() +
                           std::chrono::seconds(5));
      v1::WatchJobRequest request;
      request.set_id(s->job_id);
      request.set_after_seq(after);
      auto reader = raw_jobs_->Watch(&context, request);
      v1::ProgressEvent e;
      while (reader->Read(&e)) events.push_back(e);
      const grpc::Status status = reader->Finish();
      if (final_seen()) break;
      const absl::Status st = client::FromGrpc(status);
      if (st.ok() || !Transient(st)) {
        ADD_FAILURE() << s->job_id << ": Watch after seq " << after
                      << " ended without the final event: " << st;
        break;
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
    std::lock_guard<std::mutex> lock(mu_);
    s->watched = std::move(events);
    s->watch_streams = streams;
  }

  // Every event of the job in one stream from seq 0.
  std::vector<v1::ProgressEvent> Replay(const std::string& job_id) {
    std::vector<v1::ProgressEvent> events;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(30));
    v1::WatchJobRequest request;
    request.set_id(job_id);
    auto reader = raw_jobs_->Watch(&context, request);
    v1::ProgressEvent e;
    while (reader->Read(&e)) events.push_back(e);
    const grpc::Status status = reader->Finish();
    EXPECT_TRUE(status.ok()) << job_id << ": " << status.error_message();
    return events;
  }

  uint32_t seed_ = 0;
  std::mt19937_64 rng_;
  std::filesystem::path dir_;
  int port_ = 0;
  std::string address_;
  std::vector<std::unique_ptr<SparrowdProcess>> processes_;
  absl::Time started_;
  std::vector<ProcessId> children_;  // of the killed and stopped servers
  std::unique_ptr<client::Client> client_;
  std::unique_ptr<v1::JobService::Stub> raw_jobs_;
  std::atomic<int64_t> give_up_ms_{std::numeric_limits<int64_t>::max()};
  std::vector<std::thread> clients_;  // uploader and submitters

  std::mutex mu_;
  std::string long_dataset_, short_dataset_;
  std::vector<Upload> uploads_;  // the plan; ids set when acknowledged (mu_)
  std::vector<std::string> acknowledged_uploads_;
  std::vector<std::shared_ptr<Submitted>> submitted_;
  std::vector<std::thread> helpers_;  // watchers and cancellers (mu_)
  std::map<std::string, int> transient_;
};

TEST_F(SparrowdChaos, TwentySigkillsLoseNothingAndEndEveryJobOnce) {
  SCOPED_TRACE(absl::StrCat("SPARROW_CHAOS_SEED=", seed_));
  std::cerr << "[ chaos ] seed " << seed_
            << " (replay with SPARROW_CHAOS_SEED=" << seed_ << ")\n";
  const absl::Time t0 = absl::Now();
  GiveUpAt(t0 + absl::Seconds(300));  // lowered after the last restart

  // The plan, all from the seed: kLongJobs of the jobs (kCancels of them
  // cancelled at some point) span several of the server's lives; the short
  // ones mostly run within one.
  std::vector<int> order(kSubmitters * kJobsPerSubmitter);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng_);
  std::vector<std::vector<JobPlan>> plans(kSubmitters);
  for (int i = 0; i < kSubmitters * kJobsPerSubmitter; ++i) {
    JobPlan p;
    p.index = i;
    p.long_job = order[i] < kLongJobs;
    p.cancel = order[i] < kCancels;
    p.epochs = p.long_job ? std::uniform_int_distribution<int>(2500, 4500)(rng_)
                          : std::uniform_int_distribution<int>(100, 600)(rng_);
    p.seed = std::uniform_int_distribution<uint64_t>(1, 1000)(rng_);
    p.raw_watcher = std::bernoulli_distribution(0.5)(rng_);
    p.gap_before = Uniform(absl::Milliseconds(100), absl::Milliseconds(1500));
    p.watch_delay = Uniform(absl::ZeroDuration(), absl::Seconds(1));
    p.cancel_delay = Uniform(absl::Milliseconds(500), absl::Seconds(6));
    plans[i % kSubmitters].push_back(p);
  }
  uploads_.resize(kUploads);
  std::vector<absl::Duration> upload_gaps;
  for (int i = 0; i < kUploads; ++i) {
    Upload& u = uploads_[i];
    u.rows = std::uniform_int_distribution<int>(400, 3000)(rng_);
    u.csv = TanksCsv(u.rows, 100 + seed_ % 1000 + i);
    upload_gaps.push_back(
        Uniform(absl::Milliseconds(300), absl::Milliseconds(2500)));
  }
  std::vector<absl::Duration> kill_after;  // from each start
  for (int k = 0; k < kKills; ++k) {
    // A quarter during start-up and recovery, the rest while jobs run.
    kill_after.push_back(
        std::bernoulli_distribution(0.25)(rng_)
            ? Uniform(absl::Milliseconds(5), absl::Milliseconds(300))
            : Uniform(absl::Milliseconds(300), absl::Milliseconds(1800)));
  }

  // Before the chaos: the two records the jobs start from.
  ASSERT_NO_FATAL_FAILURE(StartServer());
  ASSERT_FALSE(process()->WaitForAddress().empty()) << process()->output();
  const std::string long_csv = TanksCsv(kLongRows, 1);
  const std::string short_csv = TanksCsv(400, 2);
  for (const std::string* csv : {&long_csv, &short_csv}) {
    auto d = Retry<v1::Dataset>([&] { return client_->Upload(*csv, "base"); });
    ASSERT_TRUE(d.ok()) << d.status();
    (csv == &long_csv ? long_dataset_ : short_dataset_) = d->id();
  }

  clients_.emplace_back([this, upload_gaps] { Uploader(upload_gaps); });
  for (int i = 0; i < kSubmitters; ++i) {
    clients_.emplace_back([this, i, p = plans[i]] { Submitter(i, p); });
  }

  // The chaos: kill at the planned moment, stay down a little, restart.
  int before_listening = 0;
  for (int k = 0; k < kKills; ++k) {
    absl::SleepFor(started_ + kill_after[k] - absl::Now());
    const bool listening =
        !process()->WaitForAddress(absl::ZeroDuration()).empty();
    before_listening += !listening;
    ASSERT_NO_FATAL_FAILURE(KillServer());
    std::cerr << absl::StrFormat(
        "[ chaos ] kill %2d/%d at %.3f s after start%s (t = %.1f s)\n", k + 1,
        kKills, absl::ToDoubleSeconds(kill_after[k]),
        listening ? "" : ", before listening",
        absl::ToDoubleSeconds(absl::Now() - t0));
    absl::SleepFor(Uniform(absl::ZeroDuration(), absl::Milliseconds(200)));
    ASSERT_NO_FATAL_FAILURE(StartServer());
  }
  const absl::Time chaos_end = absl::Now();
  ASSERT_FALSE(process()->WaitForAddress().empty()) << process()->output();
  GiveUpAt(absl::Now() + absl::Seconds(90));

  // Every client finishes, then every watcher sees its job's end.
  JoinClients();
  const absl::Time settled = absl::Now();
  ASSERT_EQ(submitted_.size(),
            static_cast<size_t>(kSubmitters * kJobsPerSubmitter));

  // Every acknowledged job: once final, with its model, its stream well
  // formed, and each watcher's view identical to the stored stream.
  int succeeded = 0, cancelled = 0, resumed = 0, events_total = 0;
  int watch_streams = 0;
  std::set<std::string> job_ids;
  for (const auto& s : submitted_) {
    SCOPED_TRACE(absl::StrCat(s->job_id, " (",
                              s->plan.long_job ? "long" : "short", ", ",
                              s->plan.epochs, " epochs)"));
    job_ids.insert(s->job_id);
    auto job = Retry<v1::Job>([&] { return client_->GetJob(s->job_id); });
    ASSERT_TRUE(job.ok()) << job.status();
    EXPECT_TRUE(v1::IsFinal(job->state())) << job->ShortDebugString();
    const std::vector<v1::ProgressEvent> replay = Replay(s->job_id);
    ASSERT_NO_FATAL_FAILURE(
        ExpectWellFormedStream(replay, *job, s->plan.epochs));
    events_total += static_cast<int>(replay.size());
    std::cerr << absl::StrFormat(
        "[ chaos ] %s %s %4d epochs: %s after %d attempt(s), %zu events, "
        "%s watcher, %d watch call(s)\n",
        s->job_id, s->plan.long_job ? "long " : "short", s->plan.epochs,
        v1::Job::State_Name(job->state()), job->attempts(), replay.size(),
        s->plan.raw_watcher ? "raw" : "client", s->watch_streams);
    resumed += job->attempts() > 1;
    watch_streams += s->watch_streams;

    // The watcher: 1, 2, 3, ... to the final event, as stored.
    ASSERT_FALSE(s->watched.empty()) << "the watcher saw nothing";
    for (size_t i = 0; i < s->watched.size(); ++i) {
      ASSERT_EQ(s->watched[i].seq(), static_cast<int64_t>(i + 1))
          << (s->plan.raw_watcher ? "raw" : "Client::Watch") << " watcher, "
          << "event " << i << " of " << s->watched.size();
    }
    EXPECT_TRUE(v1::IsFinalEvent(s->watched.back()));
    ASSERT_EQ(s->watched.size(), replay.size());
    for (size_t i = 0; i < replay.size(); ++i) {
      EXPECT_EQ(s->watched[i].kind(), replay[i].kind()) << "seq " << i + 1;
      EXPECT_EQ(s->watched[i].state(), replay[i].state()) << "seq " << i + 1;
      EXPECT_EQ(s->watched[i].iteration(), replay[i].iteration())
          << "seq " << i + 1;
    }

    // The outcome: an acknowledged CANCELLED stays so, and a CANCELLING
    // job is CANCELLED unless its run finished first; every other job
    // succeeds, with its model.
    if (s->cancel_answer.has_value()) {
      EXPECT_TRUE(s->cancel_answer->ok() ||
                  absl::IsFailedPrecondition(*s->cancel_answer))
          << "Cancel: " << *s->cancel_answer;
    }
    if (s->cancel_state == v1::Job::CANCELLED) {
      EXPECT_EQ(job->state(), v1::Job::CANCELLED) << job->reason();
    } else if (s->plan.cancel) {
      EXPECT_TRUE(job->state() == v1::Job::CANCELLED ||
                  job->state() == v1::Job::SUCCEEDED)
          << job->ShortDebugString();
    } else {
      EXPECT_EQ(job->state(), v1::Job::SUCCEEDED) << job->reason();
    }
    if (job->state() == v1::Job::SUCCEEDED) {
      ++succeeded;
      EXPECT_EQ(job->iterations(), s->plan.epochs);
      auto model =
          Retry<v1::TrainedModel>([&] { return client_->GetModel(s->job_id); });
      ASSERT_TRUE(model.ok()) << model.status();
      EXPECT_EQ(model->epochs(), s->plan.epochs);
      EXPECT_GT(model->parameters_size(), 0);
    }
    cancelled += job->state() == v1::Job::CANCELLED;
  }

  // No job lost and none extra: a retried submission is the same job.
  std::set<std::string> listed_jobs;
  for (std::string token;;) {
    auto page = Retry<v1::ListJobsResponse>([&] {
      return client_->ListJobs(v1::Job::STATE_UNSPECIFIED, 100, token);
    });
    ASSERT_TRUE(page.ok()) << page.status();
    for (const v1::Job& j : page->jobs()) {
      EXPECT_TRUE(listed_jobs.insert(j.id()).second)
          << "listed twice: " << j.id();
    }
    token = page->next_page_token();
    if (token.empty()) break;
  }
  EXPECT_EQ(listed_jobs, job_ids);

  // Every acknowledged upload is listed with its size, and nothing partial
  // or foreign is.
  std::map<std::string, const Upload*> expected;
  for (const Upload& u : uploads_) {
    if (!u.id.empty()) expected[u.id] = &u;
  }
  EXPECT_EQ(expected.size(), uploads_.size()) << "uploads acknowledged";
  std::set<std::string> listed_datasets;
  for (std::string token;;) {
    auto page = Retry<v1::ListDatasetsResponse>(
        [&] { return client_->ListDatasets(100, token); });
    ASSERT_TRUE(page.ok()) << page.status();
    for (const v1::Dataset& d : page->datasets()) {
      listed_datasets.insert(d.id());
      auto it = expected.find(d.id());
      if (it == expected.end()) {
        EXPECT_TRUE(d.id() == long_dataset_ || d.id() == short_dataset_)
            << "a dataset nobody uploaded: " << d.ShortDebugString();
        continue;
      }
      EXPECT_EQ(d.size_bytes(), static_cast<int64_t>(it->second->csv.size()));
      EXPECT_EQ(d.rows(), it->second->rows);
    }
    token = page->next_page_token();
    if (token.empty()) break;
  }
  for (const auto& [id, u] : expected) {
    EXPECT_EQ(listed_datasets.count(id), 1u) << "upload lost: " << id;
  }

  // A clean stop, then the stored bytes of every upload hash to its id.
  for (const ProcessId& p : Descendants(process()->pid())) {
    children_.push_back(p);
  }
  process()->Signal(SIGTERM);
  EXPECT_EQ(process()->Wait(absl::Seconds(15)), 0) << process()->output();
  {
    auto store = OpenSqliteStore(data_dir() + "/sparrow.db");
    ASSERT_TRUE(store.ok()) << store.status();
    for (const auto& [id, u] : expected) {
      auto content = (*store)->GetDatasetContent("default", id);
      ASSERT_TRUE(content.ok()) << content.status();
      EXPECT_EQ(translate::Sha256Hex(*content), id);
      EXPECT_TRUE(*content == u->csv) << "content of " << id << " differs";
    }
  }

  // No process of a killed (or stopped) sparrowd outlives it.
  std::vector<ProcessId> survivors;
  for (const absl::Time until = absl::Now() + absl::Seconds(5);;) {
    survivors = Survivors(children_, data_dir());
    if (survivors.empty() || absl::Now() >= until) break;
    absl::SleepFor(absl::Milliseconds(100));
  }
  for (const ProcessId& p : survivors) {
    const std::optional<ProcStat> s = ReadStat(p.pid);
    ADD_FAILURE() << "process " << p.pid << " (parent "
                  << (s.has_value() ? s->ppid : 0) << ") of a killed sparrowd "
                  << "still runs 5 s after the end: " << Cmdline(p.pid);
    // Leave nothing behind (the same process, not a reused pid).
    if (s.has_value() && s->start_time == p.start_time) kill(p.pid, SIGKILL);
  }

  std::string transient;
  for (const auto& [code, n] : transient_) {
    absl::StrAppend(&transient, transient.empty() ? "" : ", ", code, " ", n);
  }
  std::cerr << absl::StrFormat(
      "[ chaos ] seed %u: %d kills (%d before listening) in %.1f s; all jobs "
      "settled %.1f s after the last restart; %d jobs (%d succeeded, %d "
      "cancelled, %d resumed), %d events, %d watch calls, %zu uploads, %zu "
      "child processes of sparrowd seen; retried errors: %s; total %.1f s\n",
      seed_, kKills, before_listening, absl::ToDoubleSeconds(chaos_end - t0),
      absl::ToDoubleSeconds(settled - chaos_end), submitted_.size(), succeeded,
      cancelled, resumed, events_total, watch_streams, expected.size(),
      children_.size(), transient.empty() ? "none" : transient,
      absl::ToDoubleSeconds(absl::Now() - t0));
}

// A call that reaches sparrowd while it recovers its jobs at start-up (it
// serves before the recovery is done) must be refused (UNAVAILABLE: clients
// retry) or applied, never acknowledged and forgotten. It was: a Cancel found
// the job in neither the queue nor a worker, answered OK with the job still
// QUEUED, and the recovery then queued it and ran it to SUCCEEDED. (A Submit
// committed before the recovery read the store was queued twice, and run by
// two workers at once.) Many CANCELLING jobs make the recovery long enough to
// hit every time: each becomes CANCELLED in its own synced transaction.
TEST_F(SparrowdChaos, CancelDuringRecoveryIsRefusedOrApplied) {
  constexpr int kStopping = 150;
  const std::string victim = "job-queued-at-the-crash";
  {
    // The store as a crash left it.
    std::filesystem::create_directories(data_dir());
    auto store = OpenSqliteStore(data_dir() + "/sparrow.db");
    ASSERT_TRUE(store.ok()) << store.status();
    const std::string dataset_id =
        testing::PutTanksDataset(store->get(), "default");
    auto create = [&](const std::string& id) {
      v1::Job job;
      job.set_id(id);
      *job.mutable_spec() = testing::SmallSpec(dataset_id, 20000);
      bool existed = false;
      ASSERT_TRUE((*store)->CreateJob("default", job, &existed).ok());
    };
    for (int i = 0; i < kStopping; ++i) {
      const std::string id = absl::StrCat("job-stopping-", i);
      ASSERT_NO_FATAL_FAILURE(create(id));
      for (const auto& [to, from] :
           {std::pair{v1::Job::RUNNING, v1::Job::QUEUED},
            std::pair{v1::Job::CANCELLING, v1::Job::RUNNING}}) {
        ASSERT_TRUE((*store)
                        ->TransitionJob(id, {to, "test", "", nullptr, {from}})
                        .ok());
      }
    }
    ASSERT_NO_FATAL_FAILURE(create(victim));
  }

  // Cancel the queued job from before sparrowd starts until it answers.
  ASSERT_NO_FATAL_FAILURE(StartServer());
  v1::CancelJobRequest request;
  request.set_id(victim);
  v1::Job answer;
  grpc::Status status;
  int refused = 0;
  for (const absl::Time until = absl::Now() + absl::Seconds(30);
       absl::Now() < until; ++refused) {
    // A new connection each time: a channel's reconnect backoff would miss
    // the moment.
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    auto stub = v1::JobService::NewStub(grpc::CreateCustomChannel(
        address_, grpc::InsecureChannelCredentials(), args));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(5));
    status = stub->Cancel(&context, request, &answer);
    if (status.error_code() != grpc::StatusCode::UNAVAILABLE) break;
    absl::SleepFor(absl::Milliseconds(1));
  }
  ASSERT_TRUE(status.ok()) << status.error_code() << ": "
                           << status.error_message();
  // QUEUED or RUNNING when a worker was taking the job: it stops at its
  // first iteration.
  std::cerr << "[ info ] the cancel was answered "
            << v1::Job::State_Name(answer.state()) << " after " << refused
            << " refusals\n";
  auto done =
      client_->Watch(victim, 0, [](const v1::ProgressEvent&) { return true; });
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->state(), v1::Job::CANCELLED) << done->ShortDebugString();
}

}  // namespace
}  // namespace sparrow::server
