#include "core/util/thread_pool.h"

#include <atomic>
#include <stdexcept>
#include <vector>

#include "gtest/gtest.h"

namespace sparrow::core {
namespace {

TEST(ThreadPoolTest, RunsEveryPartOnceAcrossManyRuns) {
  ThreadPool pool(3);
  std::vector<int> count(3, 0);
  for (int run = 0; run < 1000; ++run) {
    pool.Run(1 + run % 3, [&](int k) { ++count[k]; });
  }
  EXPECT_EQ(count[0], 1000);
  EXPECT_EQ(count[1], 666);
  EXPECT_EQ(count[2], 333);
}

// An exception in any part surfaces from Run, and only after every part has
// finished with the closure.
TEST(ThreadPoolTest, RethrowsAPartsExceptionAfterAllPartsFinish) {
  ThreadPool pool(2);
  for (int thrower = 0; thrower < 2; ++thrower) {
    std::atomic<int> finished{0};
    EXPECT_THROW(pool.Run(2,
                          [&](int k) {
                            if (k == thrower) throw std::runtime_error("part");
                            ++finished;
                          }),
                 std::runtime_error);
    EXPECT_EQ(finished.load(), 1);
  }
  std::atomic<int> after{0};
  pool.Run(2, [&](int) { ++after; });  // the pool still works
  EXPECT_EQ(after.load(), 2);
}

}  // namespace
}  // namespace sparrow::core
