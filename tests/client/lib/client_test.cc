// sparrow::client::Client against an in-process sparrowd: status mapping,
// skip-if-present uploads, retries, and a Watch that survives a restart.
#include "client/lib/client.h"

#include <mutex>
#include <thread>

#include "gtest/gtest.h"
#include "tests/server/testing/server_fixture.h"

namespace sparrow::client {
namespace {

using server::testing::SmallSpec;
using server::testing::TanksCsv;

class ClientTest : public server::testing::ServerFixture {
 protected:
  void SetUp() override {
    ServerFixture::SetUp();
    // Restarts keep the port, so the client's address stays valid.
    options_.listen = server_->address();
    ClientOptions o;
    o.address = server_->address();
    o.initial_backoff = absl::Milliseconds(50);
    o.max_backoff = absl::Milliseconds(200);
    auto client = Client::Connect(o);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = std::move(*client);
  }

  std::unique_ptr<Client> client_;
};

TEST_F(ClientTest, UploadSkipsBytesTheServerHas) {
  const std::string csv = TanksCsv();
  bool existed = true;
  auto first = client_->Upload(csv, "tanks.csv", &existed);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(existed);
  EXPECT_EQ(first->rows(), 400);
  auto second = client_->Upload(csv, "again.csv", &existed);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(existed);
  EXPECT_EQ(second->id(), first->id());
  EXPECT_EQ(second->name(), "tanks.csv");  // nothing new was stored
}

TEST_F(ClientTest, UploadsInManySmallChunks) {
  ClientOptions o = client_->options();
  o.chunk_bytes = 97;
  auto small = Client::Connect(o);
  ASSERT_TRUE(small.ok());
  auto d = (*small)->Upload(TanksCsv(200, 3), "small-chunks.csv");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->rows(), 200);
}

TEST_F(ClientTest, ErrorsCarryTheServersCodeAndMessage) {
  auto job = client_->GetJob("job-does-not-exist");
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(job.status().message().find("job-does-not-exist"),
            std::string::npos);
  auto bad = client_->Upload("a,b\n1,2,3\n", "ragged.csv");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ClientTest, SubmitMakesDistinctRequestIdsAndKeepsGivenOnes) {
  auto d = client_->Upload(TanksCsv(), "t.csv");
  ASSERT_TRUE(d.ok());
  auto a = client_->Submit(SmallSpec(d->id(), 2));
  auto b = client_->Submit(SmallSpec(d->id(), 2));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->id(), b->id());
  EXPECT_FALSE(a->request_id().empty());
  auto c1 = client_->Submit(SmallSpec(d->id(), 2), "mine");
  auto c2 = client_->Submit(SmallSpec(d->id(), 2), "mine");
  ASSERT_TRUE(c1.ok() && c2.ok());
  EXPECT_EQ(c1->id(), c2->id());
}

TEST_F(ClientTest, WatchDeliversEveryEventOnceAcrossARestart) {
  auto d = client_->Upload(TanksCsv(2000, 1), "t.csv");
  ASSERT_TRUE(d.ok());
  v1::JobSpec spec = SmallSpec(d->id(), 4000);
  spec.mutable_split()->mutable_train(0)->set_last(1800);
  spec.mutable_split()->mutable_test(0)->set_first(1801);
  spec.mutable_split()->mutable_test(0)->set_last(2000);
  spec.mutable_model()->mutable_narx_mlp()->set_hidden(0, 32);
  auto job = client_->Submit(spec);
  ASSERT_TRUE(job.ok()) << job.status();

  std::mutex mu;
  std::vector<int64_t> seqs;
  int iterations = 0;
  absl::StatusOr<v1::Job> done;
  std::thread watcher([&] {
    done = client_->Watch(job->id(), 0, [&](const v1::ProgressEvent& e) {
      std::lock_guard<std::mutex> lock(mu);
      seqs.push_back(e.seq());
      iterations += e.kind() == v1::ProgressEvent::ITERATION;
      return true;
    });
  });
  // Restart while the job runs: it checkpoints, resumes, and the watch
  // reconnects after the last seq it delivered.
  for (int i = 0; i < 2000; ++i) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (iterations >= 100) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  RestartServer();
  watcher.join();
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->state(), v1::Job::SUCCEEDED) << done->reason();
  ASSERT_FALSE(seqs.empty());
  for (size_t i = 0; i < seqs.size(); ++i) {
    ASSERT_EQ(seqs[i], static_cast<int64_t>(i + 1)) << "at position " << i;
  }
  EXPECT_EQ(seqs.back(), done->last_seq());
  if (done->attempts() != 2) {
    // The job may have finished before the restart on a fast machine.
    EXPECT_EQ(done->attempts(), 1);
  }
}

TEST_F(ClientTest, StopsWatchingWhenTheCallbackSaysSo) {
  auto d = client_->Upload(TanksCsv(), "t.csv");
  ASSERT_TRUE(d.ok());
  auto job = client_->Submit(SmallSpec(d->id(), 20));
  ASSERT_TRUE(job.ok());
  int seen = 0;
  auto last = client_->Watch(
      job->id(), 0, [&](const v1::ProgressEvent&) { return ++seen < 2; });
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(seen, 2);
}

TEST_F(ClientTest, HealthAndUnreachableServers) {
  auto health = client_->Health();
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(*health, "SERVING");

  ClientOptions o;
  o.address = "127.0.0.1:1";
  o.max_attempts = 3;
  o.initial_backoff = absl::Milliseconds(20);
  auto dead = Client::Connect(o);
  ASSERT_TRUE(dead.ok());
  const absl::Time start = absl::Now();
  auto s = (*dead)->Health();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(s.status().message().find("127.0.0.1:1"), std::string::npos);
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(60));  // 20 + 40 backoff
}

TEST(ClientOptionsTest, BadOptionsAreRefused) {
  ClientOptions o;
  o.address = "";
  EXPECT_FALSE(Client::Connect(o).ok());
  o.address = "127.0.0.1:1";
  o.max_attempts = 0;
  EXPECT_FALSE(Client::Connect(o).ok());
  o.max_attempts = 1;
  o.tls_ca_file = "/nonexistent/ca.pem";
  o.tls = true;
  auto c = Client::Connect(o);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("/nonexistent/ca.pem"),
            std::string::npos);
}

// gRPC would take port 117737 as 52201 (modulo 2^16), another server, and
// retry a malformed host until its deadline: both are refused at once.
TEST(ClientOptionsTest, AddressesGrpcWouldMisreadAreRefused) {
  ClientOptions o;
  for (const char* bad :
       {"127.0.0.1:117737", "127.0.0.1:0", "127.0.0.1", "127.0.0.1:", "[::1",
        "[::1:50051", "::1:50051", ":50051", "host:50a"}) {
    o.address = bad;
    auto c = Client::Connect(o);
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(c.status().message().find("use HOST:PORT"), std::string::npos)
        << c.status();
  }
  for (const char* good : {"127.0.0.1:65535", "[::1]:50051", "localhost:1",
                           "unix:/tmp/sparrow.sock", "dns:///db:50051"}) {
    o.address = good;
    EXPECT_TRUE(Client::Connect(o).ok()) << good;
  }
}

}  // namespace
}  // namespace sparrow::client
