#include "server/jobs/event_hub.h"

#include <utility>

namespace sparrow::server {

EventHub::EventHub() : thread_([this] { Run(); }) {}

EventHub::~EventHub() {
  Shutdown();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_thread_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

uint64_t EventHub::Wait(const std::string& job_id, int64_t after_seq,
                        Waiter waiter) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t handle = next_handle_++;
  JobEntry& entry = jobs_[job_id];
  if (shutting_down_ || entry.published_seq > after_seq) {
    ready_.emplace_back(std::move(waiter), shutting_down_);
    cv_.notify_one();
    return handle;
  }
  entry.waiters.emplace(handle, Pending{after_seq, std::move(waiter)});
  ++num_waiters_;
  return handle;
}

void EventHub::Cancel(const std::string& job_id, uint64_t handle) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(job_id);
  if (it != jobs_.end() && it->second.waiters.erase(handle) > 0) {
    --num_waiters_;
  }
}

void EventHub::Post(std::function<void()> task) {
  std::lock_guard<std::mutex> lock(mu_);
  ready_.emplace_back([task = std::move(task)](bool) { task(); }, false);
  cv_.notify_one();
}

void EventHub::Publish(const std::string& job_id, int64_t last_seq) {
  std::lock_guard<std::mutex> lock(mu_);
  JobEntry& entry = jobs_[job_id];
  if (last_seq <= entry.published_seq) return;
  entry.published_seq = last_seq;
  bool any = false;
  for (auto it = entry.waiters.begin(); it != entry.waiters.end();) {
    if (it->second.after_seq < last_seq) {
      ready_.emplace_back(std::move(it->second.waiter), false);
      it = entry.waiters.erase(it);
      --num_waiters_;
      any = true;
    } else {
      ++it;
    }
  }
  if (any) cv_.notify_one();
}

void EventHub::WakeAll() {
  std::lock_guard<std::mutex> lock(mu_);
  FireAll(false);
}

void EventHub::Shutdown() {
  std::lock_guard<std::mutex> lock(mu_);
  if (shutting_down_) return;
  shutting_down_ = true;
  FireAll(true);
}

void EventHub::FireAll(bool shutting_down) {
  for (auto& [id, entry] : jobs_) {
    for (auto& [handle, pending] : entry.waiters) {
      ready_.emplace_back(std::move(pending.waiter), shutting_down);
    }
    entry.waiters.clear();
  }
  num_waiters_ = 0;
  cv_.notify_one();
}

int EventHub::num_waiters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return num_waiters_;
}

void EventHub::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stop_thread_ || !ready_.empty(); });
    if (ready_.empty() && stop_thread_) return;
    std::deque<std::pair<Waiter, bool>> batch;
    batch.swap(ready_);
    lock.unlock();
    for (auto& [waiter, shutting_down] : batch) waiter(shutting_down);
    lock.lock();
  }
}

}  // namespace sparrow::server
