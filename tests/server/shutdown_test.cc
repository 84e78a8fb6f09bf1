// SparrowServer::Shutdown with a client connection that has no call in flight:
// the grace period is for calls, not for idle connections (which gRPC's own
// Shutdown(deadline) waited on until the deadline: every SIGTERM took the
// full 5 s).
#include <atomic>
#include <chrono>
#include <thread>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/server/testing/service_fixture.h"

namespace sparrow::server {
namespace {

using testing::ServiceFixture;

class ShutdownTest : public ServiceFixture {};

TEST_F(ShutdownTest, AnIdleConnectionDoesNotHoldTheShutdown) {
  // One finished call: the channel is connected and stays open, idle.
  ASSERT_EQ(GetDataset(std::string(64, 'a')).error_code(),
            grpc::StatusCode::NOT_FOUND);
  ASSERT_EQ(channel_->GetState(false), GRPC_CHANNEL_READY);
  const absl::Duration grace = absl::Seconds(20);
  const absl::Time start = absl::Now();
  server_->Shutdown(grace);
  const absl::Duration took = absl::Now() - start;
  // Generous for a loaded machine, and far below the grace it used to take.
  EXPECT_LT(took, grace / 4) << took;
}

TEST_F(ShutdownTest, ACallInFlightStillGetsItsAnswer) {
  const std::string id = UploadOrDie(testing::TanksCsv());
  const v1::Job job = StartLongJob(id);
  // A watch is in flight; the shutdown ends it with UNAVAILABLE (not as a
  // cancelled stream) before it closes the connection.
  std::atomic<int> received{0};
  grpc::Status watch;
  std::thread watcher([&] {
    v1::WatchJobRequest request;
    request.set_id(job.id());
    auto context = Context();
    auto reader = jobs_->Watch(context.get(), request);
    v1::ProgressEvent e;
    while (reader->Read(&e)) ++received;
    watch = reader->Finish();
  });
  const absl::Time end = absl::Now() + absl::Seconds(20);
  while (received.load() == 0 && absl::Now() < end) {
    absl::SleepFor(absl::Milliseconds(2));
  }
  EXPECT_GT(received.load(), 0);
  server_->Shutdown(absl::Seconds(20));
  watcher.join();
  EXPECT_EQ(watch.error_code(), grpc::StatusCode::UNAVAILABLE)
      << watch.error_message();
}

}  // namespace
}  // namespace sparrow::server
