// Uploads stream into spool files under --data-dir instead of memory, their
// unfinished bytes are capped per tenant and overall (RESOURCE_EXHAUSTED
// naming the flag), and spool files go when their upload ends, whichever way,
// and at start-up.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "tests/server/testing/service_fixture.h"

namespace sparrow::server {
namespace {

using testing::ServiceFixture;
using testing::TanksCsv;

constexpr int64_t kKiB = 1024;

// An upload stream left open after its first chunk.
struct OpenUpload {
  std::unique_ptr<grpc::ClientContext> context;
  v1::UploadDatasetResponse response;
  std::unique_ptr<grpc::ClientWriter<v1::UploadDatasetRequest>> writer;
};

class UploadLimitsTest : public ServiceFixture {
 protected:
  void Configure(ServerOptions* options) override {
    WriteTokens(options);
    options->uploads.max_in_flight_per_tenant = 64 * kKiB;
    options->uploads.max_in_flight = 96 * kKiB;
  }

  std::filesystem::path spool() const { return dir_ / "uploads"; }

  // Sizes of the spool's files, sorted. The server may remove a file between
  // the listing and its size (a finished or refused upload): it is then no
  // longer in the spool.
  std::vector<int64_t> SpoolSizes() const {
    std::vector<int64_t> sizes;
    for (const auto& f : std::filesystem::directory_iterator(spool())) {
      std::error_code gone;
      const std::uintmax_t size = f.file_size(gone);
      if (!gone) sizes.push_back(static_cast<int64_t>(size));
    }
    std::sort(sizes.begin(), sizes.end());
    return sizes;
  }

  // Polls (2 ms steps, at most 10 s) until the spool holds these sizes.
  bool WaitForSpool(const std::vector<int64_t>& sizes) {
    const absl::Time end = absl::Now() + absl::Seconds(10);
    while (SpoolSizes() != sizes) {
      if (absl::Now() > end) return false;
      absl::SleepFor(absl::Milliseconds(2));
    }
    return true;
  }

  std::unique_ptr<OpenUpload> StartUpload(int64_t bytes,
                                          const std::string& token) {
    auto upload = std::make_unique<OpenUpload>();
    upload->context = Context(token);
    upload->writer =
        datasets_->Upload(upload->context.get(), &upload->response);
    EXPECT_TRUE(upload->writer->Write(Chunk(0, std::string(bytes, 'x'))));
    return upload;
  }
};

TEST_F(UploadLimitsTest, UnfinishedUploadsWaitOnDiskWithinTheCaps) {
  auto alice = StartUpload(48 * kKiB, kTokenA);
  ASSERT_TRUE(WaitForSpool({48 * kKiB}));

  // Alice's next 32 KiB would pass her 64 KiB.
  const std::string csv = TanksCsv(800);
  ASSERT_GT(static_cast<int64_t>(csv.size()), 16 * kKiB);
  v1::UploadDatasetResponse response;
  grpc::Status s = Upload(csv, &response, kTokenA, /*chunk=*/32 * kKiB);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << s.error_message();
  EXPECT_TRUE(absl::StrContains(s.error_message(),
                                "--max-upload-bytes-in-flight-per-tenant"))
      << s.error_message();

  // Bob has room of his own, until all uploads together pass 96 KiB.
  auto bob = StartUpload(40 * kKiB, kTokenB);
  ASSERT_TRUE(WaitForSpool({40 * kKiB, 48 * kKiB}));
  s = Upload(csv, &response, kTokenB, /*chunk=*/16 * kKiB);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << s.error_message();
  EXPECT_TRUE(absl::StrContains(s.error_message(),
                                "--max-upload-bytes-in-flight (sparrowd") ||
              absl::StrContains(s.error_message(),
                                "(sparrowd --max-upload-bytes-in-flight)"))
      << s.error_message();
  EXPECT_TRUE(AllDatasetIds(kTokenB).empty());

  // An abandoned upload gives its bytes and its file back.
  alice->context->TryCancel();
  alice->writer->Finish().IgnoreError();
  ASSERT_TRUE(WaitForSpool({40 * kKiB}));
  s = Upload(csv, &response, kTokenA, /*chunk=*/32 * kKiB);
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(AllDatasetIds(kTokenA),
            std::vector<std::string>{response.dataset().id()});

  // So does one that ends without its last message.
  bob->writer->WritesDone();
  s = bob->writer->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(WaitForSpool({}));
  EXPECT_TRUE(AllDatasetIds(kTokenB).empty());
}

TEST_F(UploadLimitsTest, SpoolFilesOfAnEarlierRunAreRemovedAtStart) {
  server_.reset();
  std::ofstream(spool() / "upload-stale") << std::string(1000, 'x');
  ASSERT_EQ(SpoolSizes(), std::vector<int64_t>{1000});
  StartServer();
  EXPECT_TRUE(SpoolSizes().empty());
  EXPECT_TRUE(AllDatasetIds(kTokenA).empty());
}

}  // namespace
}  // namespace sparrow::server
