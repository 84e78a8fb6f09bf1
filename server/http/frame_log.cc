#include "server/http/frame_log.h"

#include <algorithm>
#include <utility>

#include "server/http/event_text.h"
#include "sparrow/v1/job_state.h"

namespace sparrow::server::http {
namespace {

constexpr int kStoreBatch = 1024;

}  // namespace

FrameLog::FrameLog(Store* store, std::string job_id, size_t max_bytes)
    : store_(store), job_id_(std::move(job_id)), max_bytes_(max_bytes) {}

absl::Status FrameLog::Read(int64_t after_seq, int max_frames, std::string* out,
                            FrameBatch* batch) {
  std::lock_guard<std::mutex> lock(mu_);
  // Behind the log: a replay, read from the store for this stream alone.
  if (!frames_.empty() && after_seq + 1 < frames_.front().seq) {
    return ReadStore(after_seq, max_frames, out, batch);
  }
  // At or past the newest logged event: the first stream to get here reads
  // the store for all the others.
  if (frames_.empty() || after_seq >= frames_.back().seq) {
    const int64_t from = frames_.empty() ? after_seq : frames_.back().seq;
    if (absl::Status s = Extend(from); !s.ok()) return s;
  }
  Copy(after_seq, max_frames, out, batch);
  return absl::OkStatus();
}

absl::Status FrameLog::Extend(int64_t after) {
  if (!frames_.empty() && frames_.back().final) return absl::OkStatus();
  auto events = store_->ListEvents(job_id_, after, kStoreBatch);
  if (!events.ok()) return events.status();
  for (const v1::ProgressEvent& e : *events) {
    Frame f{e.seq(), v1::IsFinalEvent(e), ""};
    AppendSseFrame(e, &f.text);
    bytes_ += f.text.size();
    frames_.push_back(std::move(f));
  }
  // Only frames from before this read go: the streams waiting for this read
  // need its frames (so the log may hold max_bytes_ plus one store batch).
  while (bytes_ > max_bytes_ && frames_.front().seq <= after) {
    bytes_ -= frames_.front().text.size();
    frames_.pop_front();
  }
  return absl::OkStatus();
}

void FrameLog::Copy(int64_t after_seq, int max_frames, std::string* out,
                    FrameBatch* batch) const {
  auto it =
      std::upper_bound(frames_.begin(), frames_.end(), after_seq,
                       [](int64_t seq, const Frame& f) { return seq < f.seq; });
  for (; it != frames_.end() && batch->frames < max_frames; ++it) {
    out->append(it->text);
    batch->last_seq = it->seq;
    ++batch->frames;
    if (it->final) {
      batch->final = true;
      return;
    }
  }
}

absl::Status FrameLog::ReadStore(int64_t after_seq, int max_frames,
                                 std::string* out, FrameBatch* batch) const {
  auto events =
      store_->ListEvents(job_id_, after_seq, std::min(max_frames, kStoreBatch));
  if (!events.ok()) return events.status();
  for (const v1::ProgressEvent& e : *events) {
    AppendSseFrame(e, out);
    batch->last_seq = e.seq();
    ++batch->frames;
    if (v1::IsFinalEvent(e)) {
      batch->final = true;
      break;
    }
  }
  return absl::OkStatus();
}

FrameLogs::FrameLogs(Store* store, size_t max_bytes_per_job)
    : store_(store), max_bytes_(max_bytes_per_job) {}

std::shared_ptr<FrameLog> FrameLogs::Get(const std::string& job_id) {
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<FrameLog> log = logs_[job_id].lock();
  if (log == nullptr) {
    log = std::make_shared<FrameLog>(store_, job_id, max_bytes_);
    logs_[job_id] = log;
  }
  // Forget the jobs nobody watches any more.
  for (auto it = logs_.begin(); it != logs_.end();) {
    it = it->second.expired() ? logs_.erase(it) : std::next(it);
  }
  return log;
}

}  // namespace sparrow::server::http
