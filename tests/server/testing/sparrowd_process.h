// A sparrowd child process (fork/exec of the real binary) for the end-to-end
// tests: its output collected, its "listening on" address, its exit code, and
// signals. Header-only.
#ifndef SPARROW_TESTS_SERVER_TESTING_SPARROWD_PROCESS_H_
#define SPARROW_TESTS_SERVER_TESTING_SPARROWD_PROCESS_H_

#include <fcntl.h>
#include <grp.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace sparrow::server::testing {

inline constexpr char kSparrowdBinary[] = SPARROW_BIN_DIR "/sparrowd";

// A sparrowd child process. Its stdout and stderr go into one pipe that a
// thread drains into output() (so the child never blocks on a full pipe);
// WaitForAddress() finds the "sparrowd: listening on HOST:PORT" line there.
// The destructor SIGKILLs and reaps a child still running, and the child gets
// SIGKILL too if this process dies first (PR_SET_PDEATHSIG).
class SparrowdProcess {
 public:
  // With run_as_uid set, the child drops to that user (and its group id
  // equal to it) before exec: how the tests, running as root, see sparrowd
  // without write permission on its --data-dir.
  explicit SparrowdProcess(const std::vector<std::string>& args,
                           std::optional<uid_t> run_as_uid = std::nullopt) {
    std::vector<std::string> argv_storage = {kSparrowdBinary};
    argv_storage.insert(argv_storage.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : argv_storage) argv.push_back(a.data());
    argv.push_back(nullptr);
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
      ADD_FAILURE() << "pipe2: " << strerror(errno);
      return;
    }
    const pid_t parent = getpid();
    pid_ = fork();
    if (pid_ == 0) {
      // The child: async-signal-safe calls only until exec.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(127);
      dup2(fds[1], STDOUT_FILENO);  // dup2 clears O_CLOEXEC on the copies
      dup2(fds[1], STDERR_FILENO);
      if (run_as_uid.has_value() &&
          (setgroups(0, nullptr) != 0 || setgid(*run_as_uid) != 0 ||
           setuid(*run_as_uid) != 0)) {
        _exit(126);
      }
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(fds[1]);
    if (pid_ < 0) {
      ADD_FAILURE() << "fork: " << strerror(errno);
      close(fds[0]);
      return;
    }
    reader_ = std::thread([this, fd = fds[0]] { Drain(fd); });
  }

  ~SparrowdProcess() {
    Kill();
    if (reader_.joinable()) reader_.join();
  }

  SparrowdProcess(const SparrowdProcess&) = delete;
  SparrowdProcess& operator=(const SparrowdProcess&) = delete;

  // The address from the "listening on" line; empty when the process exited
  // or did not print it within `timeout`.
  std::string WaitForAddress(absl::Duration timeout = absl::Seconds(20)) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, absl::ToChronoMilliseconds(timeout),
                 [this] { return !address_.empty() || eof_; });
    return address_;
  }

  // Everything the child printed so far (for failure messages).
  std::string output() const {
    std::lock_guard<std::mutex> lock(mu_);
    return output_;
  }

  // Until the child ends; all output read (the pipe closed) when it returns.
  std::string WaitForOutput(absl::Duration timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, absl::ToChronoMilliseconds(timeout),
                 [this] { return eof_; });
    return output_;
  }

  // The exit code (128 + signal when killed by one), or nullopt when the
  // child is still running after `timeout`.
  std::optional<int> Wait(absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    while (true) {
      if (std::optional<int> code = Poll()) return code;
      if (absl::Now() >= deadline) return std::nullopt;
      absl::SleepFor(absl::Milliseconds(10));
    }
  }

  // Non-blocking: the exit code once the child has ended.
  std::optional<int> Poll() {
    if (exit_code_.has_value() || pid_ <= 0) return exit_code_;
    int status = 0;
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exit_code_ = WIFEXITED(status)     ? WEXITSTATUS(status)
                   : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                         : -1;
    } else if (r < 0) {
      exit_code_ = -1;  // not our child any more; never signal it again
    }
    return exit_code_;
  }

  bool running() { return pid_ > 0 && !Poll().has_value(); }

  // Sends `sig` unless the child has already been reaped (its pid may have
  // been reused).
  void Signal(int sig) {
    if (running()) kill(pid_, sig);
  }

  // SIGKILL and reap.
  void Kill() {
    if (!running()) return;
    kill(pid_, SIGKILL);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    exit_code_ = 128 + SIGKILL;
  }

  // The child's pid (-1 when the fork failed); valid for signals only while
  // running().
  pid_t pid() const { return pid_; }

 private:
  void Drain(int fd) {
    static constexpr char kListening[] = "sparrowd: listening on ";
    char buffer[4096];
    while (true) {
      const ssize_t n = read(fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      std::lock_guard<std::mutex> lock(mu_);
      output_.append(buffer, static_cast<size_t>(n));
      if (address_.empty()) {
        const size_t at = output_.find(kListening);
        const size_t eol = at == std::string::npos ? std::string::npos
                                                   : output_.find('\n', at);
        if (eol != std::string::npos) {
          const size_t begin = at + sizeof(kListening) - 1;
          address_ = output_.substr(begin, eol - begin);
          cv_.notify_all();
        }
      }
    }
    close(fd);
    std::lock_guard<std::mutex> lock(mu_);
    eof_ = true;
    cv_.notify_all();
  }

  pid_t pid_ = -1;
  std::optional<int> exit_code_;
  std::thread reader_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string output_;
  std::string address_;
  bool eof_ = false;
};

}  // namespace sparrow::server::testing

#endif  // SPARROW_TESTS_SERVER_TESTING_SPARROWD_PROCESS_H_
