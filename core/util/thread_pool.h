// A fixed set of worker threads that run the parts of one parallel loop at a
// time: Run(n, fn) calls fn(0) .. fn(n - 1), part 0 on the calling thread and
// part k on worker k - 1, and returns when all are done. Workers persist
// between calls, so a minibatch loop does not create threads per batch.
//
// Hand-written because core/ links only Eigen and Abseil, and neither offers a
// public thread pool; a mutex and two condition variables hand the work over.
// Both sides spin for up to kSpin before they sleep (a worker that had a part
// in the last Run, for the next one; Run, for the workers' parts): waking a
// sleeping thread costs tens of microseconds on a virtual machine, as much as
// a Gauss-Newton trial's part.
// Not reentrant: one Run at a time per pool.
#ifndef SPARROW_CORE_UTIL_THREAD_POOL_H_
#define SPARROW_CORE_UTIL_THREAD_POOL_H_

#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace sparrow::core {

class ThreadPool {
 public:
  // threads - 1 workers (the caller is the first thread); threads <= 1 runs
  // everything on the caller.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }
  // n <= threads(). An exception from any part is rethrown here once every
  // part has finished (the first one, when several throw).
  void Run(int n, const std::function<void(int)>& fn);

 private:
  void Work(int k);

  std::mutex mu_;
  std::condition_variable work_, done_;
  const std::function<void(int)>* fn_ = nullptr;  // guarded by mu_
  int parts_ = 0;                                 // guarded by mu_
  // Written under mu_; also read without it while spinning.
  std::atomic<long> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  std::exception_ptr worker_error_;  // guarded by mu_
  std::vector<std::thread> workers_;
};

}  // namespace sparrow::core

#endif  // SPARROW_CORE_UTIL_THREAD_POOL_H_
