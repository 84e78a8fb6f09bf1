// Wakes watchers when a job's progress events are committed to the store.
// Waiters run on the hub's own thread, never on the publisher's, so a slow or
// numerous audience never slows a training job. The hub carries no events:
// watchers read them from the store, which keeps replay and live delivery one
// code path (and exactly-once by seq).
#ifndef SPARROW_SERVER_JOBS_EVENT_HUB_H_
#define SPARROW_SERVER_JOBS_EVENT_HUB_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

namespace sparrow::server {

class EventHub {
 public:
  // shutting_down: the server is stopping; the watcher should end its stream
  // (the client reconnects with its last seq).
  using Waiter = std::function<void(bool shutting_down)>;

  EventHub();
  ~EventHub();
  EventHub(const EventHub&) = delete;
  EventHub& operator=(const EventHub&) = delete;

  // Calls `waiter` once, on the hub thread, as soon as an event of the job
  // with seq > after_seq has been published (at once if one already was), or
  // at shutdown. Returns a handle for Cancel.
  uint64_t Wait(const std::string& job_id, int64_t after_seq, Waiter waiter);
  // Drops a waiter that has not fired yet (no-op otherwise).
  void Cancel(const std::string& job_id, uint64_t handle);
  // Runs `task` on the hub thread (watchers do their store reads there, not
  // on gRPC's few callback threads).
  void Post(std::function<void()> task);
  // The job's events up to last_seq are in the store.
  void Publish(const std::string& job_id, int64_t last_seq);
  // Fires every waiter (shutting_down = false): some events may have been
  // published elsewhere unseen (another replica's, while the store's
  // listener reconnected); each waiter reads the store and waits again.
  void WakeAll();
  // Fires every waiter with shutting_down = true; later Waits fire at once.
  // Idempotent.
  void Shutdown();

  int num_waiters() const;

 private:
  struct Pending {
    int64_t after_seq;
    Waiter waiter;
  };
  struct JobEntry {
    int64_t published_seq = 0;
    std::map<uint64_t, Pending> waiters;
  };
  void Run();
  // Moves every waiter to ready_ (mu_ held).
  void FireAll(bool shutting_down);

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::unordered_map<std::string, JobEntry> jobs_;
  std::deque<std::pair<Waiter, bool>> ready_;
  uint64_t next_handle_ = 1;
  int num_waiters_ = 0;
  bool shutting_down_ = false;
  bool stop_thread_ = false;
  std::thread thread_;
};

}  // namespace sparrow::server

#endif  // SPARROW_SERVER_JOBS_EVENT_HUB_H_
