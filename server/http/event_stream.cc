#include "server/http/event_stream.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "server/http/event_text.h"
#include "sparrow/v1/job_state.h"

namespace sparrow::server::http {
namespace {

constexpr int kReadBatch = 256;

}  // namespace

EventStream::EventStream(Store* store, EventHub* hub, std::string job_id,
                         int64_t after_seq, absl::Duration keep_alive)
    : store_(store),
      hub_(hub),
      job_id_(std::move(job_id)),
      keep_alive_(keep_alive),
      last_sent_(after_seq),
      signal_(std::make_shared<Signal>()) {}

std::string EventStream::Next(bool* done) {
  *done = false;
  std::string frames = ReadFrames(done);
  if (!frames.empty() || *done) return frames;
  // Caught up. The job's final event is committed before its final state,
  // so a final job is read once more before the stream ends.
  int64_t job_last_seq = 0;
  if (JobIsFinal(&job_last_seq)) {
    frames = ReadFrames(done);
    *done = true;
    return frames;
  }
  // A client that asked to start beyond the job's last event still wakes at
  // the job's next one (at the latest its final state).
  if (!WaitForNews(std::min(last_sent_, job_last_seq))) {
    *done = true;
    return "";
  }
  frames = ReadFrames(done);
  return frames.empty() && !*done ? ": keep-alive\n\n" : frames;
}

void EventStream::Stop() {
  std::lock_guard<std::mutex> lock(signal_->mu);
  signal_->stopped = true;
  signal_->cv.notify_all();
}

std::string EventStream::ReadFrames(bool* done) {
  auto events = store_->ListEvents(job_id_, last_sent_, kReadBatch);
  std::string frames;
  if (!events.ok()) {
    *done = true;
    return frames;
  }
  for (const v1::ProgressEvent& e : *events) {
    AppendSseFrame(e, &frames);
    last_sent_ = e.seq();
    if (v1::IsFinalEvent(e)) {
      *done = true;
      break;
    }
  }
  return frames;
}

bool EventStream::JobIsFinal(int64_t* job_last_seq) {
  auto job = store_->GetJob(job_id_);
  if (!job.ok()) return true;
  *job_last_seq = job->job.last_seq();
  return v1::IsFinal(job->job.state());
}

bool EventStream::WaitForNews(int64_t after) {
  Signal& signal = *signal_;
  {
    std::lock_guard<std::mutex> lock(signal.mu);
    signal.news = false;
  }
  const uint64_t handle =
      hub_->Wait(job_id_, after, [shared = signal_](bool shutting) {
        std::lock_guard<std::mutex> lock(shared->mu);
        shared->news = true;
        if (shutting) shared->stopped = true;
        shared->cv.notify_all();
      });
  std::unique_lock<std::mutex> lock(signal.mu);
  signal.cv.wait_for(lock, absl::ToChronoMilliseconds(keep_alive_),
                     [&signal] { return signal.news || signal.stopped; });
  const bool stopped = signal.stopped;
  lock.unlock();
  hub_->Cancel(job_id_, handle);
  return !stopped;
}

}  // namespace sparrow::server::http
