#include "server/http/event_stream.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "server/http/event_text.h"
#include "sparrow/v1/job_state.h"

namespace sparrow::server::http {
namespace {

constexpr int kMaxFramesPerBatch = 2048;

}  // namespace

EventStream::EventStream(Store* store, EventHub* hub,
                         std::shared_ptr<FrameLog> log, std::string job_id,
                         int64_t after_seq, Timing timing)
    : store_(store),
      hub_(hub),
      log_(std::move(log)),
      job_id_(std::move(job_id)),
      timing_(timing),
      last_sent_(after_seq),
      signal_(std::make_shared<Signal>()) {}

std::string EventStream::Next(bool* done) {
  *done = false;
  if (!Pace()) {
    *done = true;
    return "";
  }
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
  std::string frames;
  FrameBatch batch;
  if (!log_->Read(last_sent_, kMaxFramesPerBatch, &frames, &batch).ok()) {
    *done = true;
    return frames;
  }
  if (batch.frames > 0) {
    last_sent_ = batch.last_seq;
    last_batch_ = absl::Now();
  }
  *done = batch.final;
  return frames;
}

bool EventStream::Pace() {
  const absl::Duration wait =
      last_batch_ + timing_.batch_interval - absl::Now();
  if (wait <= absl::ZeroDuration()) return true;
  std::unique_lock<std::mutex> lock(signal_->mu);
  signal_->cv.wait_for(lock, absl::ToChronoNanoseconds(wait),
                       [this] { return signal_->stopped; });
  return !signal_->stopped;
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
  signal.cv.wait_for(lock, absl::ToChronoMilliseconds(timing_.keep_alive),
                     [&signal] { return signal.news || signal.stopped; });
  const bool stopped = signal.stopped;
  lock.unlock();
  hub_->Cancel(job_id_, handle);
  return !stopped;
}

}  // namespace sparrow::server::http
