#include "core/util/thread_pool.h"

#include <chrono>

namespace sparrow::core {
namespace {

constexpr std::chrono::microseconds kSpin(50);

// Returns once busy() is false or kSpin has passed.
template <typename Busy>
void SpinWhile(Busy&& busy) {
  const auto end = std::chrono::steady_clock::now() + kSpin;
  for (int i = 1; busy(); ++i) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    if (i % 64 == 0 && std::chrono::steady_clock::now() > end) return;
  }
}

}  // namespace

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
  SpinWhile([this] { return pending_.load() != 0; });
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [this] { return pending_ == 0; });
  fn_ = nullptr;
  if (error == nullptr) error = worker_error_;
  worker_error_ = nullptr;
  if (error != nullptr) std::rethrow_exception(error);
}

void ThreadPool::Work(int k) {
  long seen = 0;
  bool worked = false;  // in the last Run: only then is the next one likely
  for (;;) {
    const std::function<void(int)>* fn = nullptr;
    if (worked) {
      SpinWhile([&] { return !stop_.load() && generation_.load() == seen; });
    }
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      if (k < parts_) fn = fn_;
    }
    worked = fn != nullptr;
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
