#include "core/util/thread_pool.h"

namespace sparrow::core {

ThreadPool::ThreadPool(int threads) {
  for (int k = 1; k < threads; ++k) {
    workers_.emplace_back([this, k] { Work(k); });
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::Run(int n, const std::function<void(int)>& fn) {
  if (n <= 1 || workers_.empty()) {
    for (int k = 0; k < n; ++k) fn(k);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = &fn;
    parts_ = n;
    pending_ = n - 1;
    ++generation_;
  }
  work_.notify_all();
  // Whatever part 0 throws, the workers still run fn: wait for them before
  // leaving the frame that owns it.
  std::exception_ptr error;
  try {
    fn(0);
  } catch (...) {
    error = std::current_exception();
  }
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [this] { return pending_ == 0; });
  fn_ = nullptr;
  if (error == nullptr) error = worker_error_;
  worker_error_ = nullptr;
  if (error != nullptr) std::rethrow_exception(error);
}

void ThreadPool::Work(int k) {
  long seen = 0;
  for (;;) {
    const std::function<void(int)>* fn = nullptr;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      if (k < parts_) fn = fn_;
    }
    if (fn == nullptr) continue;
    std::exception_ptr error;
    try {
      (*fn)(k);
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (error != nullptr && worker_error_ == nullptr) worker_error_ = error;
    if (--pending_ == 0) done_.notify_one();
  }
}

}  // namespace sparrow::core
