// sparrowd (the real binary) refuses to start on a store it cannot write:
// exit code 2 and a hint about permissions, instead of reporting SERVING and
// failing every client's first write.
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <optional>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "tests/server/testing/sparrowd_process.h"

namespace sparrow::server {
namespace {

using testing::SparrowdProcess;

class SparrowdStartupE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           absl::StrFormat(
               "sparrowd-startup-%d-%s", getpid(),
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "data");
    // Root writes whatever the permissions say, so as root the server runs
    // as "nobody" to meet them.
    if (geteuid() == 0) run_as_ = 65534;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  std::vector<std::string> Args() const {
    return {"--listen",      "127.0.0.1:0",
            "--http-listen", "127.0.0.1:0",
            "--data-dir",    (dir_ / "data").string(),
            "--workers",     "1"};
  }

  // Runs sparrowd until it exits by itself (or 30 s); its exit code.
  std::optional<int> RunToExit(std::string* output) {
    SparrowdProcess sparrowd(Args(), run_as_);
    *output = sparrowd.WaitForOutput(absl::Seconds(30));
    return sparrowd.Wait(absl::Seconds(5));
  }

  static void ExpectPermissionHint(const std::string& output) {
    EXPECT_TRUE(absl::StrContains(output, "cannot be written")) << output;
    EXPECT_TRUE(absl::StrContains(output, "permissions")) << output;
    EXPECT_FALSE(absl::StrContains(output, "listening on")) << output;
  }

  std::filesystem::path dir_;
  std::optional<uid_t> run_as_;
};

TEST_F(SparrowdStartupE2E, AnExistingReadOnlyStoreFileStopsItWithExitCode2) {
  {
    SparrowdProcess first(Args());  // as this user: creates the store
    ASSERT_FALSE(first.WaitForAddress().empty()) << first.output();
    first.Signal(SIGTERM);
    ASSERT_EQ(first.Wait(absl::Seconds(30)), 0) << first.output();
  }
  // The directory stays writable (for the -wal and -shm files); the store
  // file is read-only.
  chmod((dir_ / "data").c_str(), 0777);
  chmod((dir_ / "data" / "sparrow.db").c_str(), 0444);
  std::string output;
  EXPECT_EQ(RunToExit(&output), 2) << output;
  ExpectPermissionHint(output);
}

TEST_F(SparrowdStartupE2E, ADataDirectoryItCannotWriteStopsItWithExitCode2) {
  chmod((dir_ / "data").c_str(), 0555);
  std::string output;
  EXPECT_EQ(RunToExit(&output), 2) << output;
  ExpectPermissionHint(output);
}

}  // namespace
}  // namespace sparrow::server
