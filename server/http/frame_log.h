// The Server-Sent Events frames of a job's recent events, read from the store
// and formatted once for all the streams that watch the job. With many
// browsers on one job, each event then costs one store read and one
// formatting, and each stream a copy of the text (bench/README.md,
// "Dashboard"). A stream far behind the log (a replay from the start) reads
// the store itself, without filling the log.
#ifndef SPARROW_SERVER_HTTP_FRAME_LOG_H_
#define SPARROW_SERVER_HTTP_FRAME_LOG_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/status.h"
#include "server/store/store.h"

namespace sparrow::server::http {

// What one Read added to the caller's text.
struct FrameBatch {
  int64_t last_seq = 0;  // seq of the last frame added (else unchanged)
  int frames = 0;
  bool final = false;  // the job's final state event was added
};

class FrameLog {
 public:
  FrameLog(Store* store, std::string job_id, size_t max_bytes);

  // Appends to *out the frames of up to max_frames events after after_seq,
  // stopping after the final state event. Thread-safe.
  absl::Status Read(int64_t after_seq, int max_frames, std::string* out,
                    FrameBatch* batch);

 private:
  struct Frame {
    int64_t seq;
    bool final;
    std::string text;
  };
  // Reads the events after `after` from the store into the log.
  absl::Status Extend(int64_t after);
  // Appends the logged frames after after_seq.
  void Copy(int64_t after_seq, int max_frames, std::string* out,
            FrameBatch* batch) const;
  // Formats the store's events after after_seq straight into *out.
  absl::Status ReadStore(int64_t after_seq, int max_frames, std::string* out,
                         FrameBatch* batch) const;

  Store* const store_;
  const std::string job_id_;
  const size_t max_bytes_;
  std::mutex mu_;
  std::deque<Frame> frames_;  // consecutive events of the store, by seq
  size_t bytes_ = 0;
};

// The logs of the jobs that have open streams: a log lives while a stream
// holds it, so memory is bounded by the streams (--http-max-streams) times
// max_bytes plus one store batch (1024 frames).
class FrameLogs {
 public:
  FrameLogs(Store* store, size_t max_bytes_per_job);
  std::shared_ptr<FrameLog> Get(const std::string& job_id);

 private:
  Store* const store_;
  const size_t max_bytes_;
  std::mutex mu_;
  std::map<std::string, std::weak_ptr<FrameLog>> logs_;
};

}  // namespace sparrow::server::http

#endif  // SPARROW_SERVER_HTTP_FRAME_LOG_H_
