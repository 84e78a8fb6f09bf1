#include "server/jobs/worker_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/worker/pipe.h"
#include "server/worker/worker.h"

extern char** environ;

namespace sparrow::server {
namespace {

// Reports are progress batches, checkpoints (a parameter vector) and the
// trained model; 2 GiB is protobuf's own limit.
constexpr int64_t kMaxReportBytes = (int64_t{1} << 31) - 1;

// A write to a worker that has died must be an error, not a SIGPIPE that
// ends sparrowd.
void IgnoreSigpipe() {
  static std::once_flag once;
  std::call_once(once, [] { std::signal(SIGPIPE, SIG_IGN); });
}

void CloseBoth(int fds[2]) {
  if (fds[0] >= 0) close(fds[0]);
  if (fds[1] >= 0) close(fds[1]);
}

}  // namespace

absl::StatusOr<std::unique_ptr<WorkerProcess>> WorkerProcess::Spawn(
    const std::string& binary) {
  IgnoreSigpipe();
  int in[2] = {-1, -1}, out[2] = {-1, -1};
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) {
    const int err = errno;
    CloseBoth(in);
    CloseBoth(out);
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot create a pipe for a job's worker process: ",
                     std::strerror(err)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  const std::string parent = std::to_string(getpid());
  std::vector<char*> argv = {const_cast<char*>(binary.c_str()),
                             const_cast<char*>(kWorkerFlag),
                             const_cast<char*>(parent.c_str()), nullptr};
  pid_t pid = -1;
  const int err = posix_spawn(&pid, binary.c_str(), &actions, nullptr,
                              argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(in[0]);
  close(out[1]);
  if (err != 0) {
    close(in[1]);
    close(out[0]);
    return absl::UnavailableError(absl::StrCat(
        "cannot start a worker process (", binary, "): ", std::strerror(err)));
  }
  return std::unique_ptr<WorkerProcess>(new WorkerProcess(pid, in[1], out[0]));
}

WorkerProcess::~WorkerProcess() {
  if (!reaped_) {
    Kill();
    Wait();
  }
  if (to_worker_ >= 0) close(to_worker_);
  close(from_worker_);
}

absl::Status WorkerProcess::Send(const google::protobuf::MessageLite& message) {
  std::lock_guard<std::mutex> lock(send_mu_);
  if (to_worker_ < 0) return absl::UnavailableError("the worker has ended");
  return WriteMessage(to_worker_, message);
}

absl::Status WorkerProcess::Next(absl::Duration timeout,
                                 v1::WorkerReport* report) {
  pollfd p{from_worker_, POLLIN, 0};
  const int ms = static_cast<int>(absl::ToInt64Milliseconds(timeout));
  int ready;
  do {
    ready = poll(&p, 1, ms);
  } while (ready < 0 && errno == EINTR);
  if (ready == 0) return absl::DeadlineExceededError("no report yet");
  return ReadMessage(from_worker_, kMaxReportBytes, report);
}

void WorkerProcess::Kill() {
  if (!reaped_) kill(pid_, SIGKILL);
}

std::string WorkerProcess::Wait() {
  if (reaped_) return ended_;
  {
    std::lock_guard<std::mutex> lock(send_mu_);
    if (to_worker_ >= 0) {
      close(to_worker_);  // a live worker reads the end of its stdin and exits
      to_worker_ = -1;
    }
  }
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  reaped_ = true;
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    ended_ =
        absl::StrCat("was killed by signal ", sig, " (", strsignal(sig), ")");
  } else {
    ended_ = absl::StrCat("exited with code ", WEXITSTATUS(status));
  }
  return ended_;
}

}  // namespace sparrow::server
