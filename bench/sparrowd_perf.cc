// sparrowd_perf: the two service benchmarks of the sparrowd acceptance
// criteria, run against a real sparrowd started as a subprocess. A plain
// program (not google-benchmark, not run by `make bench` or CI); see
// bench/README.md, "Service (sparrowd)".
//
//   overhead  A job through sparrowd (Submit -> Watch until the final state
//             event) against `sparrow run --local` of the same spec, both as
//             subprocess wall time; interleaved repetitions, medians, ratio.
//   load      One running job, N watchers on it, then M more submissions
//             (queued behind it) from C client threads: sparrowd's memory,
//             Submit latency percentiles, watcher delivery, then cancel all.
//
// Example (from the repository root):
//   build/bin/sparrowd_perf overhead --reps 7 --output /tmp/overhead.json
//   build/bin/sparrowd_perf load --jobs 1000 --watchers 100 --clients 1,4
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/data/synthetic.h"
#include "grpcpp/grpcpp.h"
#include "nlohmann/json.hpp"
#include "server/service/dataset_service.h"
#include "sparrow/v1/datasets.grpc.pb.h"
#include "sparrow/v1/job_state.h"
#include "sparrow/v1/jobs.grpc.pb.h"
#include "translate/json.h"

namespace sparrow::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

double UnixNow() {
  return std::chrono::duration<double>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double ToUnix(const google::protobuf::Timestamp& t) {
  return static_cast<double>(t.seconds()) + 1e-9 * t.nanos();
}

void SleepSeconds(double s) {
  std::this_thread::sleep_for(std::chrono::duration<double>(s));
}

// Nearest-rank percentile (p in [0, 100]) of unsorted samples.
double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const size_t rank =
      static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

double Median(const std::vector<double>& v) {
  if (v.empty()) return std::nan("");
  std::vector<double> s = v;
  std::sort(s.begin(), s.end());
  const size_t n = s.size();
  return n % 2 == 1 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return absl::StrCat(a, " ", b, " ", c);
}

absl::StatusOr<std::string> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot read ", path.string()));
  }
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// VmRSS / VmHWM (kB) and user + system CPU seconds of a process.
struct ProcStats {
  double rss_mb = 0, hwm_mb = 0, cpu_seconds = 0;
  int threads = 0;
};

ProcStats ReadProcStats(pid_t pid) {
  ProcStats p;
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    long kb = 0;
    if (std::sscanf(line.c_str(), "VmRSS: %ld kB", &kb) == 1) {
      p.rss_mb = kb / 1024.0;
    } else if (std::sscanf(line.c_str(), "VmHWM: %ld kB", &kb) == 1) {
      p.hwm_mb = kb / 1024.0;
    } else if (std::sscanf(line.c_str(), "Threads: %ld", &kb) == 1) {
      p.threads = static_cast<int>(kb);
    }
  }
  std::string stat;
  if (auto s = ReadFile(absl::StrCat("/proc/", pid, "/stat")); s.ok()) {
    stat = *s;
  }
  // Fields after the ")" that closes the command name: state is field 3,
  // utime 14, stime 15.
  const size_t close = stat.rfind(')');
  if (close != std::string::npos) {
    std::vector<std::string> f =
        absl::StrSplit(stat.substr(close + 2), ' ', absl::SkipEmpty());
    if (f.size() > 12) {
      const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
      p.cpu_seconds = (std::stod(f[11]) + std::stod(f[12])) / tick;
    }
  }
  return p;
}

// CPU time and run-queue wait summed over a process's live threads
// (/proc/PID/task/*/schedstat, nanosecond resolution), plus the CPU time of
// its reaped children — sparrowd's job worker processes — from
// /proc/PID/stat (cutime + cstime, clock-tick resolution).
struct SchedStat {
  double cpu = 0, runqueue = 0;
};

SchedStat ReadSchedStat(pid_t pid) {
  SchedStat s;
  std::error_code ec;
  for (const auto& task :
       fs::directory_iterator(absl::StrCat("/proc/", pid, "/task"), ec)) {
    std::ifstream in(task.path() / "schedstat");
    double cpu_ns = 0, wait_ns = 0;
    if (in >> cpu_ns >> wait_ns) {
      s.cpu += 1e-9 * cpu_ns;
      s.runqueue += 1e-9 * wait_ns;
    }
  }
  std::ifstream stat(absl::StrCat("/proc/", pid, "/stat"));
  std::string line;
  std::getline(stat, line);
  const size_t paren = line.rfind(')');
  if (paren != std::string::npos) {
    // Fields after the command: state is field 3, cutime 16, cstime 17.
    std::istringstream fields(line.substr(paren + 2));
    std::vector<std::string> f(std::istream_iterator<std::string>(fields), {});
    if (f.size() > 14) {
      s.cpu += (std::stod(f[13]) + std::stod(f[14])) /
               static_cast<double>(sysconf(_SC_CLK_TCK));
    }
  }
  return s;
}

json ToJson(const ProcStats& p) {
  return {{"rss_mb", p.rss_mb},
          {"hwm_mb", p.hwm_mb},
          {"cpu_seconds", p.cpu_seconds},
          {"threads", p.threads}};
}

std::vector<char*> Argv(std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  return argv;
}

// ---- sparrowd as a subprocess -----------------------------------------------

class Daemon {
 public:
  // Starts `bin --listen 127.0.0.1:0 --data-dir DIR/data --workers 1 ARGS`
  // (ARGS may override --data-dir), its output going to DIR/sparrowd.log,
  // and waits for "listening on HOST:PORT".
  static absl::StatusOr<std::unique_ptr<Daemon>> Start(
      const std::string& bin, const fs::path& dir,
      const std::vector<std::string>& extra) {
    fs::create_directories(dir);
    auto d = std::unique_ptr<Daemon>(new Daemon);
    d->log_ = dir / "sparrowd.log";
    std::vector<std::string> args = {
        bin,         "--listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0",
        "--workers", "1"};
    if (std::find(extra.begin(), extra.end(), "--data-dir") == extra.end()) {
      args.push_back("--data-dir");
      args.push_back((dir / "data").string());
    }
    args.insert(args.end(), extra.begin(), extra.end());
    d->command_ = absl::StrJoin(args, " ");
    std::vector<char*> argv = Argv(args);
    const std::string log = d->log_.string();
    const pid_t pid = fork();
    if (pid < 0) return absl::InternalError("fork failed");
    if (pid == 0) {
      const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
      }
      execv(argv[0], argv.data());
      _exit(127);
    }
    d->pid_ = pid;
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    while (Clock::now() < deadline) {
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) == pid) {
        d->pid_ = -1;
        auto text = ReadFile(d->log_);
        return absl::InternalError(absl::StrCat("sparrowd exited at start-up: ",
                                                text.ok() ? *text : ""));
      }
      auto text = ReadFile(d->log_);
      const std::string needle = "listening on ";
      if (text.ok()) {
        const size_t at = text->find(needle);
        // "listening on HOST:PORT (data in ...)" or "... HOST:PORT\n".
        const size_t end = at == std::string::npos
                               ? std::string::npos
                               : text->find_first_of(" \n", at + needle.size());
        if (end != std::string::npos) {
          d->address_ =
              text->substr(at + needle.size(), end - at - needle.size());
          return d;
        }
      }
      SleepSeconds(0.02);
    }
    return absl::DeadlineExceededError(
        "sparrowd did not print 'listening on' within 20 s");
  }

  ~Daemon() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  // SIGTERM, then waits up to `timeout` seconds (SIGKILL after). Returns the
  // exit code (-1 when killed) and the time it took.
  int Stop(double timeout, double* seconds) {
    const auto t0 = Clock::now();
    kill(pid_, SIGTERM);
    int status = 0;
    while (waitpid(pid_, &status, WNOHANG) == 0) {
      if (Seconds(Clock::now() - t0) > timeout) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        pid_ = -1;
        *seconds = Seconds(Clock::now() - t0);
        return -1;
      }
      SleepSeconds(0.01);
    }
    pid_ = -1;
    *seconds = Seconds(Clock::now() - t0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  pid_t pid() const { return pid_; }
  const std::string& address() const { return address_; }
  const std::string& command() const { return command_; }

 private:
  Daemon() = default;
  pid_t pid_ = -1;
  fs::path log_;
  std::string address_;
  std::string command_;
};

// ---- a client of one sparrowd -----------------------------------------------

// A channel with its own TCP connection (no subchannel sharing between
// channels), as a separate client process would have.
std::shared_ptr<grpc::Channel> NewChannel(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetMaxReceiveMessageSize(64 << 20);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(),
                                   args);
}

std::unique_ptr<grpc::ClientContext> Context(double timeout_s = 600) {
  auto c = std::make_unique<grpc::ClientContext>();
  c->set_deadline(
      std::chrono::system_clock::now() +
      std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000)));
  return c;
}

absl::Status FromGrpc(const grpc::Status& s, absl::string_view what) {
  if (s.ok()) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": ", s.error_message()));
}

class Client {
 public:
  explicit Client(const std::string& address)
      : channel_(NewChannel(address)),
        datasets_(v1::DatasetService::NewStub(channel_)),
        jobs_(v1::JobService::NewStub(channel_)) {}

  // Chunked, checksummed upload; returns the dataset id.
  absl::StatusOr<std::string> Upload(const std::string& name,
                                     const std::string& csv) {
    constexpr size_t kChunk = 1 << 20;
    v1::UploadDatasetResponse out;
    auto context = Context();
    auto writer = datasets_->Upload(context.get(), &out);
    for (size_t offset = 0; offset < csv.size() || offset == 0;
         offset += kChunk) {
      v1::UploadDatasetRequest r;
      if (offset == 0) r.set_name(name);
      r.set_offset(static_cast<int64_t>(offset));
      r.set_data(csv.substr(offset, kChunk));
      if (offset + kChunk >= csv.size()) {
        r.set_finish(true);
        r.set_sha256(server::Sha256Hex(csv));
      }
      if (!writer->Write(r) || csv.empty()) break;
    }
    writer->WritesDone();
    absl::Status s = FromGrpc(writer->Finish(), "upload " + name);
    if (!s.ok()) return s;
    return out.dataset().id();
  }

  grpc::Status Submit(const v1::JobSpec& spec, v1::Job* job) {
    v1::SubmitJobRequest r;
    *r.mutable_spec() = spec;
    auto context = Context();
    return jobs_->Submit(context.get(), r, job);
  }

  grpc::Status Cancel(const std::string& id, v1::Job* job) {
    v1::CancelJobRequest r;
    r.set_id(id);
    auto context = Context();
    return jobs_->Cancel(context.get(), r, job);
  }

  absl::StatusOr<v1::Job> Get(const std::string& id) {
    v1::GetJobRequest r;
    r.set_id(id);
    v1::Job job;
    auto context = Context();
    absl::Status s = FromGrpc(jobs_->Get(context.get(), r, &job), "get " + id);
    if (!s.ok()) return s;
    return job;
  }

  // Jobs in `state`, counted over all pages.
  absl::StatusOr<int> Count(v1::Job::State state) {
    int n = 0;
    std::string token;
    do {
      v1::ListJobsRequest r;
      r.set_page_size(1000);
      r.set_page_token(token);
      r.set_state(state);
      v1::ListJobsResponse page;
      auto context = Context();
      absl::Status s = FromGrpc(jobs_->List(context.get(), r, &page), "list");
      if (!s.ok()) return s;
      n += page.jobs_size();
      token = page.next_page_token();
    } while (!token.empty());
    return n;
  }

  v1::JobService::Stub* jobs() { return jobs_.get(); }

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::DatasetService::Stub> datasets_;
  std::unique_ptr<v1::JobService::Stub> jobs_;
};

// The column names a spec reads.
std::vector<std::string> SpecColumns(const v1::JobSpec& spec) {
  std::vector<std::string> columns;
  const v1::DataSource& d = spec.data();
  for (const auto* list :
       {&d.inputs(), &d.outputs(), &d.test_inputs(), &d.test_outputs()}) {
    for (const std::string& c : *list) {
      if (std::find(columns.begin(), columns.end(), c) == columns.end()) {
        columns.push_back(c);
      }
    }
  }
  if (!d.trace_column().empty()) columns.push_back(d.trace_column());
  return columns;
}

// `csv` cut down to `columns` (by header name; quotes around fields dropped;
// no quoted commas).
std::string ProjectCsv(const std::string& csv,
                       const std::vector<std::string>& columns) {
  auto fields = [](absl::string_view line) {
    std::vector<std::string> f = absl::StrSplit(line, ',');
    for (std::string& x : f) {
      if (x.size() >= 2 && x.front() == '"' && x.back() == '"') {
        x = x.substr(1, x.size() - 2);
      }
    }
    return f;
  };
  std::vector<absl::string_view> lines =
      absl::StrSplit(csv, '\n', absl::SkipWhitespace());
  if (lines.empty()) return csv;
  const std::vector<std::string> header = fields(lines[0]);
  std::vector<size_t> keep;
  for (const std::string& c : columns) {
    auto it = std::find(header.begin(), header.end(), c);
    if (it != header.end()) keep.push_back(it - header.begin());
  }
  std::string out;
  for (absl::string_view line : lines) {
    const std::vector<std::string> f = fields(absl::StripSuffix(line, "\r"));
    for (size_t k = 0; k < keep.size(); ++k) {
      if (k > 0) out += ',';
      if (keep[k] < f.size()) out += f[keep[k]];
    }
    out += '\n';
  }
  return out;
}

// ---- A: the overhead of a job through sparrowd ------------------------------

struct LocalRun {
  double wall = 0, optimizer = 0, final_loss = 0;
  double cpu = 0;  // user + system CPU seconds of the process
  int epochs = 0;
};

// `sparrow run --local SPEC --json --threads 1` from the repository root; wall
// time from fork to waitpid.
absl::StatusOr<LocalRun> RunLocal(const std::string& sparrow,
                                  const fs::path& root,
                                  const std::string& spec) {
  std::vector<std::string> args = {sparrow,  "run",       "--local", spec,
                                   "--json", "--threads", "1"};
  std::vector<char*> argv = Argv(args);
  const std::string dir = root.string();
  int out[2];
  if (pipe(out) != 0) return absl::InternalError("pipe failed");
  const auto t0 = Clock::now();
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork failed");
  if (pid == 0) {
    dup2(out[1], 1);
    close(out[0]);
    close(out[1]);
    const int null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, 2);
    if (chdir(dir.c_str()) != 0) _exit(126);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(out[1]);
  std::string text;
  char buffer[4096];
  ssize_t n;
  while ((n = read(out[0], buffer, sizeof buffer)) > 0) text.append(buffer, n);
  close(out[0]);
  int status = 0;
  struct rusage usage {};
  wait4(pid, &status, 0, &usage);
  LocalRun r;
  r.wall = Seconds(Clock::now() - t0);
  r.cpu = usage.ru_utime.tv_sec + 1e-6 * usage.ru_utime.tv_usec +
          usage.ru_stime.tv_sec + 1e-6 * usage.ru_stime.tv_usec;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::InternalError(
        absl::StrCat("sparrow run --local ", spec, " failed: ", text));
  }
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.contains("seconds")) {
    return absl::InternalError("sparrow run --json printed no report: " + text);
  }
  r.optimizer = j["seconds"].get<double>();
  r.epochs = j["epochs"].get<int>();
  r.final_loss = j["final_loss"].get<double>();
  return r;
}

struct ServiceRun {
  double wall = 0;        // Submit called -> final state event received
  double submit = 0;      // the Submit RPC
  double queued = 0;      // create_time -> start_time (server clock)
  double running = 0;     // start_time -> end_time
  double notify = 0;      // end_time -> final event received (client clock)
  double optimizer = 0;   // elapsed_seconds of the last ITERATION event
  double final_loss = 0;  // Job.loss
  double cpu = 0;         // sparrowd's CPU seconds, all threads, meanwhile
  double runqueue = 0;    // seconds sparrowd's threads waited for a CPU
  int iterations = 0;
  int events = 0;
};

absl::StatusOr<ServiceRun> RunService(Client* client, pid_t server,
                                      const v1::JobSpec& spec) {
  ServiceRun r;
  const SchedStat sched0 = ReadSchedStat(server);
  const auto t0 = Clock::now();
  v1::Job job;
  absl::Status s = FromGrpc(client->Submit(spec, &job), "submit");
  if (!s.ok()) return s;
  r.submit = Seconds(Clock::now() - t0);
  v1::WatchJobRequest w;
  w.set_id(job.id());
  auto context = Context();
  auto reader = client->jobs()->Watch(context.get(), w);
  v1::ProgressEvent e;
  v1::Job::State final_state = v1::Job::STATE_UNSPECIFIED;
  double received = 0;
  while (reader->Read(&e)) {
    ++r.events;
    if (e.kind() == v1::ProgressEvent::ITERATION) {
      r.optimizer = e.elapsed_seconds();
      r.iterations = e.iteration();
    } else if (v1::IsFinalEvent(e)) {
      r.wall = Seconds(Clock::now() - t0);
      received = UnixNow();
      final_state = e.state();
      const SchedStat sched1 = ReadSchedStat(server);
      r.cpu = sched1.cpu - sched0.cpu;
      r.runqueue = sched1.runqueue - sched0.runqueue;
    }
  }
  s = FromGrpc(reader->Finish(), "watch");
  if (!s.ok()) return s;
  if (final_state != v1::Job::SUCCEEDED) {
    return absl::InternalError(absl::StrCat("job ", job.id(), " ended ",
                                            v1::Job::State_Name(final_state),
                                            ": ", e.reason()));
  }
  auto done = client->Get(job.id());
  if (!done.ok()) return done.status();
  r.queued = ToUnix(done->start_time()) - ToUnix(done->create_time());
  r.running = ToUnix(done->end_time()) - ToUnix(done->start_time());
  r.notify = received - ToUnix(done->end_time());
  r.final_loss = done->loss();
  return r;
}

struct ServerConfig {
  std::string name;
  std::vector<std::string> args;
  std::unique_ptr<Daemon> daemon;
  std::unique_ptr<Client> client;
  std::map<std::string, std::string> dataset_ids;  // csv path -> id
};

int Overhead(const std::string& sparrow, const std::string& sparrowd,
             const fs::path& root, const fs::path& work,
             const std::vector<std::string>& spec_names,
             const std::vector<std::string>& config_flags, int reps,
             const std::string& output) {
  struct Spec {
    std::string name, rel_path;
    v1::JobSpec proto;
    std::vector<LocalRun> local;
    std::vector<std::vector<ServiceRun>> service;  // per config
  };
  std::vector<ServerConfig> configs;
  configs.push_back({"default", {}, nullptr, nullptr, {}});
  for (const std::string& c : config_flags) {
    const size_t eq = c.find('=');
    ServerConfig config;
    config.name = c.substr(0, eq);
    if (eq != std::string::npos) {
      config.args = absl::StrSplit(c.substr(eq + 1), ' ', absl::SkipEmpty());
    }
    configs.push_back(std::move(config));
  }
  for (size_t i = 0; i < configs.size(); ++i) {
    ServerConfig& c = configs[i];
    const fs::path dir = work / absl::StrCat("overhead-", i);
    fs::remove_all(dir);
    auto d = Daemon::Start(sparrowd, dir, c.args);
    if (!d.ok()) {
      std::cerr << "sparrowd_perf: " << d.status().message() << "\n";
      return 1;
    }
    c.daemon = std::move(*d);
    c.client = std::make_unique<Client>(c.daemon->address());
    std::cout << "server " << c.name << ": " << c.daemon->command() << " on "
              << c.daemon->address() << "\n";
  }

  std::vector<Spec> specs;
  for (const std::string& name : spec_names) {
    Spec s;
    s.name = name;
    s.rel_path = name.find('/') == std::string::npos
                     ? absl::StrCat("examples/", name, ".json")
                     : name;
    auto text = ReadFile(root / s.rel_path);
    if (!text.ok()) {
      std::cerr << "sparrowd_perf: " << text.status().message() << "\n";
      return 1;
    }
    auto spec = translate::ParseJobSpecJson(*text);
    if (!spec.ok()) {
      std::cerr << "sparrowd_perf: " << s.rel_path << ": "
                << spec.status().message() << "\n";
      return 1;
    }
    s.proto = *spec;
    const std::string csv_path = spec->data().csv_path();
    auto csv = ReadFile(root / csv_path);
    if (!csv.ok()) {
      std::cerr << "sparrowd_perf: " << csv.status().message()
                << " (the shared data sets live in ../shared/data)\n";
      return 1;
    }
    for (ServerConfig& c : configs) {
      const std::string file = fs::path(csv_path).filename().string();
      auto id = c.client->Upload(file, *csv);
      if (!id.ok()) {
        // sparrowd refuses a file with any non-numeric column (the tanks
        // file's 'Ts' is empty after row 1); upload the spec's columns only.
        const std::string projected = ProjectCsv(*csv, SpecColumns(s.proto));
        if (&c == &configs.front()) {
          std::cout << "note: " << id.status().message()
                    << "\n  -> uploading the spec's columns only ("
                    << projected.size() << " of " << csv->size() << " bytes)\n";
        }
        id = c.client->Upload(file, projected);
      }
      if (!id.ok()) {
        std::cerr << "sparrowd_perf: " << id.status().message() << "\n";
        return 1;
      }
      c.dataset_ids[csv_path] = *id;
    }
    s.service.resize(configs.size());
    specs.push_back(std::move(s));
  }

  const std::string load_start = LoadAverage();
  std::cout << "load average at start: " << load_start << "\n";
  // Repetition 0 warms the page cache and both code paths; it is not counted.
  for (int rep = 0; rep <= reps; ++rep) {
    for (Spec& s : specs) {
      // Alternate which side goes first so that drift in the machine's load
      // does not favour one.
      std::vector<int> order;  // -1 = local, i = configs[i]
      order.push_back(-1);
      for (size_t i = 0; i < configs.size(); ++i) order.push_back(i);
      if (rep % 2 == 1) std::reverse(order.begin(), order.end());
      for (int side : order) {
        if (side < 0) {
          auto r = RunLocal(sparrow, root, s.rel_path);
          if (!r.ok()) {
            std::cerr << "sparrowd_perf: " << r.status().message() << "\n";
            return 1;
          }
          if (rep > 0) s.local.push_back(*r);
        } else {
          ServerConfig& c = configs[side];
          v1::JobSpec spec = s.proto;
          spec.mutable_data()->set_dataset_id(
              c.dataset_ids[s.proto.data().csv_path()]);
          auto r = RunService(c.client.get(), c.daemon->pid(), spec);
          if (!r.ok()) {
            std::cerr << "sparrowd_perf: " << r.status().message() << "\n";
            return 1;
          }
          if (rep > 0) s.service[side].push_back(*r);
        }
        SleepSeconds(0.1);
      }
    }
    std::cout << (rep == 0 ? "warm-up" : absl::StrCat("repetition ", rep))
              << " done (load average " << LoadAverage() << ")" << std::endl;
  }
  const std::string load_end = LoadAverage();

  json report = {
      {"benchmark", "overhead"},
      {"repetitions", reps},
      {"load_average_start", load_start},
      {"load_average_end", load_end},
      {"cores", std::thread::hardware_concurrency()},
      {"local_command", "sparrow run --local SPEC --json --threads 1"},
      {"specs", json::array()}};
  for (const ServerConfig& c : configs) {
    report["servers"].push_back(
        {{"name", c.name}, {"command", c.daemon->command()}});
  }
  std::cout
      << "\nmedians of " << reps
      << " interleaved repetitions. wall: Submit -> final state event "
         "(service), fork -> exit (local); opt: optimizer loop; cpu: CPU "
         "seconds of sparrowd (all threads) / of the local process; rq: "
         "sparrowd's run-queue wait; submit, queued (create -> start), "
         "run-opt (start -> end minus opt), notify (end -> event received)\n";
  std::cout << absl::StrFormat(
      "%-15s %-8s %5s %7s %7s %7s %8s %7s %7s %6s %7s %7s %7s %7s\n", "spec",
      "server", "iters", "wall s", "opt s", "cpu s", "wall/loc", "opt/loc",
      "cpu/loc", "rq s", "submit", "queued", "run-opt", "notify");
  for (const Spec& s : specs) {
    std::vector<double> lw, lo, lc;
    for (const LocalRun& r : s.local) {
      lw.push_back(r.wall);
      lo.push_back(r.optimizer);
      lc.push_back(r.cpu);
    }
    const double local_wall = Median(lw), local_opt = Median(lo),
                 local_cpu = Median(lc);
    std::cout << absl::StrFormat(
        "%-15s %-8s %5d %7.3f %7.3f %7.3f %8s %7s %7s %6s %7s %7s %7.3f %7s\n",
        s.name, "local", s.local.front().epochs, local_wall, local_opt,
        local_cpu, "", "", "", "", "", "", local_wall - local_opt, "");
    json entry = {{"spec", s.rel_path},
                  {"local",
                   {{"wall_s", lw},
                    {"optimizer_s", lo},
                    {"cpu_s", lc},
                    {"wall_median_s", local_wall},
                    {"optimizer_median_s", local_opt},
                    {"cpu_median_s", local_cpu},
                    {"epochs", s.local.front().epochs},
                    {"final_loss", s.local.front().final_loss}}}};
    for (size_t i = 0; i < configs.size(); ++i) {
      std::vector<double> w, o, cpu, rq, sub, q, run, run_opt, note, ratio;
      for (size_t k = 0; k < s.service[i].size(); ++k) {
        const ServiceRun& r = s.service[i][k];
        w.push_back(r.wall);
        o.push_back(r.optimizer);
        cpu.push_back(r.cpu);
        rq.push_back(r.runqueue);
        sub.push_back(r.submit);
        q.push_back(r.queued);
        run.push_back(r.running);
        run_opt.push_back(r.running - r.optimizer);
        note.push_back(r.notify);
        ratio.push_back(r.wall / s.local[k].wall);
      }
      const ServiceRun& first = s.service[i].front();
      std::cout << absl::StrFormat(
          "%-15s %-8s %5d %7.3f %7.3f %7.3f %8.3f %7.3f %7.3f %6.3f %7.4f "
          "%7.4f %7.3f %7.4f\n",
          "", configs[i].name, first.iterations, Median(w), Median(o),
          Median(cpu), Median(w) / local_wall, Median(o) / local_opt,
          Median(cpu) / local_cpu, Median(rq), Median(sub), Median(q),
          Median(run_opt), Median(note));
      entry["service"][configs[i].name] = {
          {"wall_s", w},
          {"optimizer_s", o},
          {"cpu_s", cpu},
          {"runqueue_wait_s", rq},
          {"submit_s", sub},
          {"queued_s", q},
          {"running_s", run},
          {"notify_s", note},
          {"wall_median_s", Median(w)},
          {"optimizer_median_s", Median(o)},
          {"cpu_median_s", Median(cpu)},
          {"wall_ratio_of_medians", Median(w) / local_wall},
          {"optimizer_ratio_of_medians", Median(o) / local_opt},
          {"cpu_ratio_of_medians", Median(cpu) / local_cpu},
          {"wall_ratio_median_paired", Median(ratio)},
          {"iterations", first.iterations},
          {"events", first.events},
          {"final_loss", first.final_loss}};
      if (first.iterations != s.local.front().epochs) {
        std::cout << "  note: the service ran " << first.iterations
                  << " iterations, the local run " << s.local.front().epochs
                  << "\n";
      }
    }
    report["specs"].push_back(entry);
  }
  std::cout << "load average at end: " << load_end << "\n";
  for (ServerConfig& c : configs) {
    double seconds = 0;
    c.client.reset();
    const int code = c.daemon->Stop(30, &seconds);
    std::cout << absl::StrFormat("server %s: SIGTERM, exit %d after %.2f s\n",
                                 c.name, code, seconds);
  }
  if (!output.empty()) {
    std::ofstream(output) << report.dump(2) << "\n";
    std::cout << "wrote " << output << "\n";
  }
  return 0;
}

// ---- B: queue and watchers under load ---------------------------------------

// A cascaded-tanks record (u, y) from the project's simulator.
std::string TanksCsv(int samples) {
  core::data::CascadedTanksOptions o;
  o.samples = samples;
  o.seed = 1;
  auto s = core::data::GenerateCascadedTanks(o);
  std::string csv = "u,y\n";
  for (Eigen::Index t = 0; t < s->u.cols(); ++t) {
    absl::StrAppendFormat(&csv, "%.17g,%.17g\n", s->u(0, t), s->y(0, t));
  }
  return csv;
}

// A NARX job on TanksCsv(400), trained with Adam.
v1::JobSpec NarxSpec(const std::string& dataset_id, const std::string& name,
                     const std::vector<int>& hidden, int max_epochs,
                     int report_every = 1) {
  v1::JobSpec spec;
  spec.set_name(name);
  spec.mutable_data()->set_dataset_id(dataset_id);
  spec.mutable_data()->add_inputs("u");
  spec.mutable_data()->add_outputs("y");
  auto* train = spec.mutable_split()->add_train();
  train->set_first(1);
  train->set_last(300);
  auto* test = spec.mutable_split()->add_test();
  test->set_first(301);
  test->set_last(400);
  auto* narx = spec.mutable_model()->mutable_narx_mlp();
  narx->set_input_lags(2);
  narx->set_output_lags(2);
  for (int h : hidden) narx->add_hidden(h);
  spec.mutable_optimizer()->mutable_adam()->set_learning_rate(0.01);
  spec.mutable_stopping()->set_max_epochs(max_epochs);
  spec.mutable_stopping()->set_max_seconds(0);
  spec.mutable_stopping()->set_report_every(report_every);
  spec.set_seed(1);
  return spec;
}

struct Watcher {
  std::thread thread;
  std::unique_ptr<Client> client;  // its own connection
  grpc::ClientContext context;
  std::atomic<int64_t> events{0};
  std::atomic<int64_t> last_seq{0};
  std::atomic<bool> done{false};
  v1::Job::State final_state = v1::Job::STATE_UNSPECIFIED;
  grpc::Status status;
};

struct Phase {
  std::string name;
  double seconds = 0;
  ProcStats proc;
  double client_cpu_seconds = 0;  // this process (the watchers, the clients)
};

int Load(const std::string& sparrowd, const fs::path& work, int jobs,
         int watchers, int clients, const std::vector<int>& long_hidden,
         int long_report_every, const std::string& store, json* out) {
  const fs::path dir = work / absl::StrCat("load-c", clients);
  fs::remove_all(dir);
  const std::string cap = std::to_string(std::max(10000, 2 * jobs));
  std::vector<std::string> args = {"--max-queued-jobs", cap,
                                   "--max-queued-per-tenant", cap};
  if (!store.empty()) {
    args.push_back("--store");
    args.push_back(store);
  }
  auto daemon = Daemon::Start(sparrowd, dir, args);
  if (!daemon.ok()) {
    std::cerr << "sparrowd_perf: " << daemon.status().message() << "\n";
    return 1;
  }
  Daemon& d = **daemon;
  const pid_t pid = d.pid();
  std::cout << "\n== load: " << jobs << " queued jobs, " << watchers
            << " watchers, " << clients << " submitting client thread"
            << (clients > 1 ? "s" : "") << "\n"
            << d.command() << " on " << d.address() << "\n";
  std::vector<Phase> phases;
  const auto t_start = Clock::now();
  auto mark = [&](const std::string& name) {
    phases.push_back({name, Seconds(Clock::now() - t_start), ReadProcStats(pid),
                      ReadProcStats(getpid()).cpu_seconds});
    const Phase& p = phases.back();
    std::cout << absl::StrFormat(
                     "  %-24s t=%6.2f s  RSS %6.1f MB  HWM %6.1f MB  cpu "
                     "%6.2f s  threads %2d  (client cpu %6.2f s)",
                     name, p.seconds, p.proc.rss_mb, p.proc.hwm_mb,
                     p.proc.cpu_seconds, p.proc.threads, p.client_cpu_seconds)
              << std::endl;
  };
  SleepSeconds(0.5);
  mark("idle");

  Client client(d.address());
  auto dataset = client.Upload("tanks.csv", TanksCsv(400));
  if (!dataset.ok()) {
    std::cerr << "sparrowd_perf: " << dataset.status().message() << "\n";
    return 1;
  }
  v1::Job long_job;
  grpc::Status gs = client.Submit(
      NarxSpec(*dataset, "long", long_hidden, 100'000'000, long_report_every),
      &long_job);
  if (!gs.ok()) {
    std::cerr << "sparrowd_perf: submit: " << gs.error_message() << "\n";
    return 1;
  }
  for (int i = 0; i < 500; ++i) {
    auto j = client.Get(long_job.id());
    if (j.ok() && j->state() == v1::Job::RUNNING) break;
    SleepSeconds(0.01);
  }
  // Job.iterations (updated at every event flush); the Get latencies say
  // how responsive unary calls are meanwhile.
  std::vector<double> get_latency;
  auto iterations_now = [&]() -> double {
    const auto t0 = Clock::now();
    auto j = client.Get(long_job.id());
    get_latency.push_back(Seconds(Clock::now() - t0));
    return j.ok() ? j->iterations() : std::nan("");
  };
  SleepSeconds(1.0);
  const double it0 = iterations_now();
  const auto t_it0 = Clock::now();
  SleepSeconds(2.0);
  const double it1 = iterations_now();
  const double rate_alone = (it1 - it0) / Seconds(Clock::now() - t_it0);
  std::cout << absl::StrFormat(
                   "  long job %s running: %.0f iterations/s, %.0f ITERATION "
                   "events/s, with no watcher",
                   long_job.id(), rate_alone, rate_alone / long_report_every)
            << std::endl;
  mark("long job running");

  // Watchers, each on its own connection, all on the running job (every
  // event batch wakes all of them).
  std::vector<std::unique_ptr<Watcher>> ws;
  const auto t_watch = Clock::now();
  for (int i = 0; i < watchers; ++i) {
    auto w = std::make_unique<Watcher>();
    w->client = std::make_unique<Client>(d.address());
    Watcher* p = w.get();
    const std::string id = long_job.id();
    w->thread = std::thread([p, id] {
      v1::WatchJobRequest r;
      r.set_id(id);
      auto reader = p->client->jobs()->Watch(&p->context, r);
      v1::ProgressEvent e;
      while (reader->Read(&e)) {
        p->events.fetch_add(1);
        p->last_seq.store(e.seq());
        if (v1::IsFinalEvent(e)) {
          p->final_state = e.state();
        }
      }
      p->status = reader->Finish();
      p->done = true;
    });
    ws.push_back(std::move(w));
  }
  double all_watching = std::nan("");
  while (Seconds(Clock::now() - t_watch) < 30) {
    const bool all = std::all_of(ws.begin(), ws.end(), [](const auto& w) {
      return w->events.load() > 0;
    });
    if (all) {
      all_watching = Seconds(Clock::now() - t_watch);
      break;
    }
    SleepSeconds(0.005);
  }
  std::cout << absl::StrFormat(
                   "  %d watchers opened; all received events after %.3f s",
                   watchers, all_watching)
            << std::endl;
  // Let them catch up on the backlog, then measure the steady state.
  SleepSeconds(3.0);
  const double it2 = iterations_now();
  const auto t_it2 = Clock::now();
  const int64_t events2 = [&] {
    int64_t n = 0;
    for (const auto& w : ws) n += w->events.load();
    return n;
  }();
  SleepSeconds(2.0);
  const double it3 = iterations_now();
  const double rate_watched = (it3 - it2) / Seconds(Clock::now() - t_it2);
  int64_t events3 = 0;
  for (const auto& w : ws) events3 += w->events.load();
  const double delivered_rate =
      static_cast<double>(events3 - events2) / Seconds(Clock::now() - t_it2);
  std::cout << absl::StrFormat(
                   "  with %d watchers: job at %.0f iterations/s; %.0f "
                   "events/s delivered over all watchers",
                   watchers, rate_watched, delivered_rate)
            << std::endl;
  mark("watchers open");

  // Submissions, queued behind the long job.
  std::vector<std::vector<double>> latency(clients);
  std::vector<std::vector<std::string>> ids(clients);
  std::atomic<int> errors{0};
  std::string first_error;
  std::mutex error_mu;
  const double it4 = iterations_now();
  const auto t_submit = Clock::now();
  {
    std::vector<std::thread> threads;
    for (int c = 0; c < clients; ++c) {
      threads.emplace_back([&, c] {
        Client mine(d.address());
        const int n = jobs / clients + (c < jobs % clients ? 1 : 0);
        for (int i = 0; i < n; ++i) {
          const v1::JobSpec spec = NarxSpec(
              *dataset, absl::StrFormat("queued-%d-%d", c, i), {8}, 30);
          v1::Job job;
          const auto t0 = Clock::now();
          const grpc::Status s = mine.Submit(spec, &job);
          latency[c].push_back(Seconds(Clock::now() - t0));
          if (s.ok()) {
            ids[c].push_back(job.id());
          } else if (errors.fetch_add(1) == 0) {
            std::lock_guard<std::mutex> lock(error_mu);
            first_error = s.error_message();
          }
        }
      });
    }
    for (std::thread& t : threads) t.join();
  }
  const double submit_seconds = Seconds(Clock::now() - t_submit);
  const double rate_submitting =
      (iterations_now() - it4) / Seconds(Clock::now() - t_submit);
  std::vector<double> all_latency;
  for (const auto& l : latency) {
    all_latency.insert(all_latency.end(), l.begin(), l.end());
  }
  std::cout << absl::StrFormat(
                   "  %d submits in %.2f s (%.0f/s), %d errors; job at %.0f "
                   "iterations/s meanwhile",
                   jobs, submit_seconds, jobs / submit_seconds, errors.load(),
                   rate_submitting)
            << std::endl;
  if (errors > 0) std::cout << "  first error: " << first_error << "\n";
  mark("after submits");
  SleepSeconds(2.0);
  mark("after submits + 2 s");
  auto queued = client.Count(v1::Job::QUEUED);
  auto job_now = client.Get(long_job.id());
  int64_t min_seq = INT64_MAX, max_seq = 0, min_events = INT64_MAX;
  for (const auto& w : ws) {
    min_seq = std::min<int64_t>(min_seq, w->last_seq.load());
    max_seq = std::max<int64_t>(max_seq, w->last_seq.load());
    min_events = std::min<int64_t>(min_events, w->events.load());
  }
  if (ws.empty()) min_seq = min_events = 0;
  const int64_t job_seq = job_now.ok() ? job_now->last_seq() : -1;
  std::cout << absl::StrFormat(
                   "  queued: %d; job seq %d; watchers at seq %d..%d (lag "
                   "<= %d events), each received >= %d events",
                   queued.ok() ? *queued : -1, job_seq, min_seq, max_seq,
                   job_seq - min_seq, min_events)
            << std::endl;

  // Cancel the queued jobs, then the running one: every watcher must see the
  // final CANCELLED event and end with OK.
  std::vector<double> cancel_latency;
  int cancel_errors = 0;
  const auto t_cancel = Clock::now();
  for (const auto& list : ids) {
    for (const std::string& id : list) {
      v1::Job job;
      const auto t0 = Clock::now();
      if (!client.Cancel(id, &job).ok()) ++cancel_errors;
      cancel_latency.push_back(Seconds(Clock::now() - t0));
    }
  }
  const double cancel_seconds = Seconds(Clock::now() - t_cancel);
  v1::Job cancelled;
  if (!client.Cancel(long_job.id(), &cancelled).ok()) ++cancel_errors;
  const auto t_end = Clock::now();
  while (Seconds(Clock::now() - t_end) < 60 &&
         !std::all_of(ws.begin(), ws.end(),
                      [](const auto& w) { return w->done.load(); })) {
    SleepSeconds(0.01);
  }
  const double watchers_end = Seconds(Clock::now() - t_end);
  int ended_ok = 0, saw_cancelled = 0;
  std::map<std::string, int> watch_errors;  // "code message" -> watchers
  for (auto& w : ws) {
    if (!w->done) w->context.TryCancel();
    w->thread.join();
    ended_ok += w->status.ok();
    saw_cancelled += w->final_state == v1::Job::CANCELLED;
    if (!w->status.ok()) {
      ++watch_errors[absl::StrCat(w->status.error_code(), " ",
                                  w->status.error_message())];
    }
  }
  for (const auto& [message, count] : watch_errors) {
    std::cout << "  " << count << " watchers ended with " << message << "\n";
  }
  std::cout << absl::StrFormat(
                   "  cancelled %d queued jobs in %.2f s (p50 %.2f ms, p99 "
                   "%.2f ms), %d errors; %d/%d watchers got CANCELLED and "
                   "ended OK within %.3f s",
                   cancel_latency.size(), cancel_seconds,
                   1e3 * Percentile(cancel_latency, 50),
                   1e3 * Percentile(cancel_latency, 99), cancel_errors,
                   std::min(ended_ok, saw_cancelled), watchers, watchers_end)
            << std::endl;
  mark("after cancelling all");
  auto job_final = client.Get(long_job.id());
  double stop_seconds = 0;
  const int exit_code = d.Stop(30, &stop_seconds);
  std::cout << absl::StrFormat("  SIGTERM: exit %d after %.2f s", exit_code,
                               stop_seconds)
            << std::endl;

  const double p50 = Percentile(all_latency, 50),
               p99 = Percentile(all_latency, 99),
               max = Percentile(all_latency, 100);
  std::cout << absl::StrFormat(
                   "  Submit latency: p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, "
                   "max %.2f ms",
                   1e3 * p50, 1e3 * Percentile(all_latency, 90), 1e3 * p99,
                   1e3 * max)
            << std::endl;
  std::cout << "  Get latencies (ms) at the phase boundaries:";
  for (double g : get_latency) std::cout << absl::StrFormat(" %.1f", 1e3 * g);
  std::cout << std::endl;
  std::vector<double> get_ms;
  for (double g : get_latency) get_ms.push_back(1e3 * g);
  json j = {
      {"clients", clients},
      {"jobs", jobs},
      {"watchers", watchers},
      {"server", d.command()},
      {"long_job_hidden", long_hidden},
      {"long_job_report_every", long_report_every},
      {"long_job_iterations_per_s_alone", rate_alone},
      {"long_job_iterations_per_s_watched", rate_watched},
      {"long_job_iterations_per_s_during_submits", rate_submitting},
      {"long_job_final_state",
       job_final.ok() ? v1::Job::State_Name(job_final->state()) : ""},
      {"events_per_s_delivered", delivered_rate},
      {"all_watchers_receiving_after_s", all_watching},
      {"submit_seconds", submit_seconds},
      {"submit_errors", errors.load()},
      {"submit_latency_ms",
       {{"p50", 1e3 * p50},
        {"p90", 1e3 * Percentile(all_latency, 90)},
        {"p99", 1e3 * p99},
        {"max", 1e3 * max},
        {"mean",
         1e3 * std::accumulate(all_latency.begin(), all_latency.end(), 0.0) /
             std::max<size_t>(1, all_latency.size())}}},
      {"queued_after_submits", queued.ok() ? *queued : -1},
      {"job_last_seq", job_seq},
      {"watcher_seq_min", min_seq},
      {"watcher_seq_max", max_seq},
      {"watcher_events_min", min_events},
      {"cancel_seconds", cancel_seconds},
      {"cancel_errors", cancel_errors},
      {"cancel_latency_ms",
       {{"p50", 1e3 * Percentile(cancel_latency, 50)},
        {"p99", 1e3 * Percentile(cancel_latency, 99)},
        {"max", 1e3 * Percentile(cancel_latency, 100)}}},
      {"watchers_ended_ok", ended_ok},
      {"watcher_errors", watch_errors},
      {"watchers_saw_cancelled", saw_cancelled},
      {"watchers_end_s", watchers_end},
      {"sigterm_exit_code", exit_code},
      {"sigterm_seconds", stop_seconds},
      {"get_latency_ms", get_ms},
      {"load_average", LoadAverage()}};
  for (const Phase& p : phases) {
    json e = ToJson(p.proc);
    e["phase"] = p.name;
    e["t_s"] = p.seconds;
    e["client_cpu_seconds"] = p.client_cpu_seconds;
    j["memory"].push_back(e);
  }
  *out = j;
  const bool ok = errors == 0 && cancel_errors == 0 && ended_ok == watchers &&
                  saw_cancelled == watchers && exit_code == 0;
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace sparrow::bench

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  using namespace sparrow::bench;
  std::string root = SPARROW_SOURCE_DIR;
  std::string bin_dir = SPARROW_BIN_DIR;
  std::string work = (fs::temp_directory_path() / "sparrowd_perf").string();
  std::string output;
  CLI::App app{
      "sparrowd_perf: service benchmarks against a real sparrowd subprocess "
      "(--workers 1).\n\n"
      "Example:\n"
      "  sparrowd_perf overhead --reps 7 --output /tmp/overhead.json\n"
      "  sparrowd_perf overhead --config 'shm=--data-dir "
      "/dev/shm/sparrowd_perf' --config 'nockpt=--checkpoint-every 0'\n"
      "  sparrowd_perf load --jobs 1000 --watchers 100 --clients 1,4\n"};
  app.add_option("--root", root, "Repository root (examples/, ../shared/data)")
      ->capture_default_str();
  app.add_option("--bin-dir", bin_dir, "Where sparrow and sparrowd are")
      ->capture_default_str();
  app.add_option("--work-dir", work,
                 "Scratch directory for the servers' data and logs (its "
                 "overhead-N and load-cN subdirectories are replaced)")
      ->capture_default_str();
  app.add_option("--output", output, "Write the results as JSON here");
  app.require_subcommand(1);
  app.fallthrough();  // --output etc. also after the subcommand

  auto* overhead = app.add_subcommand(
      "overhead", "A: job through sparrowd vs. sparrow run --local");
  std::vector<std::string> specs = {"damper_nailm", "damper_adam",
                                    "tanks_sbdl_sim"};
  std::vector<std::string> configs;
  int reps = 5;
  overhead
      ->add_option("--specs", specs,
                   "Example names (examples/NAME.json) or spec paths "
                   "relative to --root")
      ->delimiter(',')
      ->capture_default_str();
  overhead->add_option("--reps", reps, "Counted repetitions (plus a warm-up)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  overhead->add_option(
      "--config", configs,
      "NAME=SPARROWD FLAGS: another server to compare with the default one "
      "(repeatable), e.g. 'nockpt=--checkpoint-every 0'");

  auto* load = app.add_subcommand(
      "load", "B: queued jobs and concurrent watchers on one server");
  int jobs = 1000, watchers = 100;
  std::vector<int> clients = {1, 4};
  std::vector<int> long_hidden = {64, 64};
  int long_report_every = 10;
  load->add_option("--jobs", jobs, "Jobs submitted behind the running one")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  load->add_option("--watchers", watchers, "Watch streams on the running job")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  load->add_option("--clients", clients,
                   "Submitting client threads; one fresh server per value")
      ->delimiter(',')
      ->capture_default_str();
  load->add_option("--long-hidden", long_hidden,
                   "Hidden layers of the running NARX job (sets its event "
                   "rate)")
      ->delimiter(',')
      ->capture_default_str();
  std::string store;
  load->add_option("--store", store,
                   "sparrowd's --store (a PostgreSQL URI; an empty database "
                   "per run, so give one --clients value)");
  load->add_option("--long-report-every", long_report_every,
                   "The running job reports (and emits an event) every this "
                   "many epochs")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  const std::string sparrow = (fs::path(bin_dir) / "sparrow").string();
  const std::string sparrowd = (fs::path(bin_dir) / "sparrowd").string();
  for (const std::string& b : {sparrow, sparrowd}) {
    if (access(b.c_str(), X_OK) != 0) {
      std::cerr << "sparrowd_perf: " << b
                << " not found; build it or pass --bin-dir\n";
      return 2;
    }
  }
  fs::create_directories(work);
  std::cout << "cores: " << std::thread::hardware_concurrency()
            << ", load average: " << LoadAverage() << ", work dir: " << work
            << "\n";
  if (overhead->parsed()) {
    return Overhead(sparrow, sparrowd, root, work, specs, configs, reps,
                    output);
  }
  nlohmann::json report = {{"benchmark", "load"},
                           {"cores", std::thread::hardware_concurrency()},
                           {"runs", nlohmann::json::array()}};
  int status = 0;
  for (int c : clients) {
    nlohmann::json run;
    status |= Load(sparrowd, work, jobs, watchers, std::max(1, c), long_hidden,
                   long_report_every, store, &run);
    report["runs"].push_back(run);
  }
  if (!output.empty()) {
    std::ofstream(output) << report.dump(2) << "\n";
    std::cout << "wrote " << output << "\n";
  }
  return status;
}
