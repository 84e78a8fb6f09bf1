// A worker process (server/worker/worker.h) running one job, seen from
// sparrowd: spawning it, the pipes to it, and how it ended. Send is
// thread-safe; everything else belongs to the job manager's thread that
// runs the job.
#ifndef SPARROW_SERVER_JOBS_WORKER_PROCESS_H_
#define SPARROW_SERVER_JOBS_WORKER_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "google/protobuf/message_lite.h"
#include "sparrow/v1/worker.pb.h"

namespace sparrow::server {

class WorkerProcess {
 public:
  // Starts `binary --sparrow-worker PID` with pipes on its stdin and stdout
  // (its stderr is sparrowd's) and no other descriptor of sparrowd. The
  // error says why the process could not start.
  static absl::StatusOr<std::unique_ptr<WorkerProcess>> Spawn(
      const std::string& binary);
  // Kills and reaps the process if it still runs.
  ~WorkerProcess();
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  // UNAVAILABLE once the worker has ended (or closed its stdin).
  absl::Status Send(const google::protobuf::MessageLite& message);
  // The next report within `timeout`: DEADLINE_EXCEEDED when none came,
  // OUT_OF_RANGE when the worker closed its stdout (it has ended), DATA_LOSS
  // when what it wrote is not a report (it died mid-message).
  absl::Status Next(absl::Duration timeout, v1::WorkerReport* report);
  void Kill();  // SIGKILL; Wait reaps it
  // Reaps the process and says how it ended: "exited with code 3",
  // "was killed by signal 9 (Killed)". Idempotent.
  std::string Wait();

 private:
  WorkerProcess(pid_t pid, int to_worker, int from_worker)
      : pid_(pid), to_worker_(to_worker), from_worker_(from_worker) {}

  pid_t pid_;
  std::mutex send_mu_;
  int to_worker_;
  int from_worker_;
  bool reaped_ = false;
  std::string ended_;
};

}  // namespace sparrow::server

#endif  // SPARROW_SERVER_JOBS_WORKER_PROCESS_H_
