// The worker process: runs one job for sparrowd, isolated from it, so that a
// job that exhausts memory, crashes in the optimizer or is killed by the
// kernel's OOM killer ends only itself (docs/service.md, "Isolation").
//
// Protocol (proto/sparrow/v1/worker.proto, framed by pipe.h): sparrowd writes
// one WorkerRequest to the worker's stdin, then WorkerControl messages; the
// worker writes WorkerReports to its stdout — progress events in batches,
// checkpoints, and one Outcome last. The worker exits when sparrowd closes
// its stdin or dies (PR_SET_PDEATHSIG).
#ifndef SPARROW_SERVER_WORKER_WORKER_H_
#define SPARROW_SERVER_WORKER_WORKER_H_

#include <string>

namespace sparrow::server {

// The first argument that turns sparrowd into a worker:
// `sparrowd --sparrow-worker PARENT_PID`.
inline constexpr char kWorkerFlag[] = "--sparrow-worker";

// Why a job that ran past sparrowd's --job-deadline failed; said by the
// worker that stops itself and by sparrowd when it has to kill the worker.
std::string DeadlineReason(int iteration, double deadline_seconds);

// The main of a worker process reading in_fd and writing out_fd. Returns the
// process exit code (0 once an Outcome was sent).
int RunWorker(int in_fd, int out_fd, int parent_pid);

}  // namespace sparrow::server

#endif  // SPARROW_SERVER_WORKER_WORKER_H_
