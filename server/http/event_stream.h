// One Server-Sent Events stream of a job's progress: stored events after
// `after_seq` first, then live ones as the EventHub announces them, each seq
// exactly once and in order, the final state event last. Replay and live
// delivery are the same path (as in gRPC's WatchJob), so a reconnect with
// Last-Event-ID resumes exactly, across a sparrowd restart too. The frames
// come from the job's FrameLog, shared with the job's other streams, and a
// stream sends at most one batch per `batch_interval`, so that a job with
// thousands of events a second costs each viewer a few writes a second.
#ifndef SPARROW_SERVER_HTTP_EVENT_STREAM_H_
#define SPARROW_SERVER_HTTP_EVENT_STREAM_H_

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "absl/time/time.h"
#include "server/http/frame_log.h"
#include "server/jobs/event_hub.h"
#include "server/store/store.h"

namespace sparrow::server::http {

class EventStream {
 public:
  struct Timing {
    absl::Duration keep_alive = absl::Seconds(15);
    absl::Duration batch_interval = absl::Milliseconds(200);
  };
  EventStream(Store* store, EventHub* hub, std::shared_ptr<FrameLog> log,
              std::string job_id, int64_t after_seq, Timing timing);

  // The next piece of the stream: a batch of frames, or a keep-alive comment
  // after `keep_alive` without news. Sets *done when the stream is over (the
  // final state was sent, the server is stopping, or the store failed).
  // Blocks until there is something to send or Stop() is called.
  std::string Next(bool* done);
  // Wakes a blocked Next(), which then ends the stream. Thread-safe.
  void Stop();

 private:
  // Events after last_sent_ from the store as frames; empty when caught up.
  std::string ReadFrames(bool* done);
  // Whether the job has ended (then nothing more will come).
  bool JobIsFinal(int64_t* job_last_seq);
  // Waits on the hub for an event after `after`; false on a stop.
  bool WaitForNews(int64_t after);
  // Sleeps out the rest of batch_interval after the last batch; false on a
  // stop.
  bool Pace();

  Store* const store_;
  EventHub* const hub_;
  const std::shared_ptr<FrameLog> log_;
  const std::string job_id_;
  const Timing timing_;
  int64_t last_sent_;
  absl::Time last_batch_ = absl::InfinitePast();
  // Shared with the hub's callback, which may run after the stream is gone.
  struct Signal {
    std::mutex mu;
    std::condition_variable cv;
    bool news = false;
    bool stopped = false;
  };
  std::shared_ptr<Signal> signal_;
};

}  // namespace sparrow::server::http

#endif  // SPARROW_SERVER_HTTP_EVENT_STREAM_H_
