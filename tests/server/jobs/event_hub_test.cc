#include "server/jobs/event_hub.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "gtest/gtest.h"

namespace sparrow::server {
namespace {

// Counts wake-ups and remembers whether the last one was a shutdown.
struct Probe {
  std::mutex mu;
  std::condition_variable cv;
  int fired = 0;
  bool shutting_down = false;
  std::thread::id thread;

  EventHub::Waiter Waiter() {
    return [this](bool shutting) {
      std::lock_guard<std::mutex> lock(mu);
      ++fired;
      shutting_down = shutting;
      thread = std::this_thread::get_id();
      cv.notify_all();
    };
  }
  bool WaitFired(int n) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(5),
                       [&] { return fired >= n; });
  }
};

TEST(EventHubTest, WakesWaitersOnANewerSeqOnTheHubThread) {
  EventHub hub;
  Probe probe;
  hub.Wait("job", 3, probe.Waiter());
  EXPECT_EQ(hub.num_waiters(), 1);
  hub.Publish("job", 3);  // not newer than after_seq
  hub.Publish("other", 9);
  EXPECT_EQ(hub.num_waiters(), 1);
  hub.Publish("job", 4);
  ASSERT_TRUE(probe.WaitFired(1));
  EXPECT_FALSE(probe.shutting_down);
  EXPECT_NE(probe.thread, std::this_thread::get_id());
  EXPECT_EQ(hub.num_waiters(), 0);
}

TEST(EventHubTest, FiresAtOnceWhenTheSeqWasAlreadyPublished) {
  // The race a watcher has between reading the store and parking: the event
  // published in between must not be missed.
  EventHub hub;
  hub.Publish("job", 5);
  Probe probe;
  hub.Wait("job", 4, probe.Waiter());
  ASSERT_TRUE(probe.WaitFired(1));
  EXPECT_EQ(hub.num_waiters(), 0);
}

TEST(EventHubTest, CancelledWaitersNeverFire) {
  EventHub hub;
  Probe probe;
  const uint64_t handle = hub.Wait("job", 0, probe.Waiter());
  hub.Cancel("job", handle);
  EXPECT_EQ(hub.num_waiters(), 0);
  hub.Publish("job", 1);
  Probe sentinel;  // fires after anything queued before it
  hub.Wait("job", 0, sentinel.Waiter());
  ASSERT_TRUE(sentinel.WaitFired(1));
  std::lock_guard<std::mutex> lock(probe.mu);
  EXPECT_EQ(probe.fired, 0);
}

TEST(EventHubTest, ShutdownWakesEveryoneAndLaterWaitsFireAtOnce) {
  EventHub hub;
  Probe a, b;
  hub.Wait("x", 0, a.Waiter());
  hub.Wait("y", 7, a.Waiter());
  hub.Shutdown();
  ASSERT_TRUE(a.WaitFired(2));
  EXPECT_TRUE(a.shutting_down);
  hub.Wait("z", 0, b.Waiter());
  ASSERT_TRUE(b.WaitFired(1));
  EXPECT_TRUE(b.shutting_down);
  hub.Shutdown();  // idempotent
}

TEST(EventHubTest, ManyPublishersAndWaitersLoseNothing) {
  EventHub hub;
  std::atomic<int> fired{0};
  constexpr int kJobs = 8, kWaitersPerJob = 50;
  for (int j = 0; j < kJobs; ++j) {
    for (int w = 0; w < kWaitersPerJob; ++w) {
      hub.Wait("job" + std::to_string(j), w, [&](bool) { ++fired; });
    }
  }
  std::vector<std::thread> publishers;
  for (int j = 0; j < kJobs; ++j) {
    publishers.emplace_back([&hub, j] {
      for (int seq = 1; seq <= kWaitersPerJob; ++seq) {
        hub.Publish("job" + std::to_string(j), seq);
      }
    });
  }
  for (auto& t : publishers) t.join();
  for (int i = 0; i < 500 && fired < kJobs * kWaitersPerJob; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(fired, kJobs * kWaitersPerJob);
  EXPECT_EQ(hub.num_waiters(), 0);
}

}  // namespace
}  // namespace sparrow::server
