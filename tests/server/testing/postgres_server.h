// A real PostgreSQL 15 server for tests: initdb in a temporary directory (as
// the `postgres` user when the tests run as root, since PostgreSQL refuses
// root), its socket in that directory and no TCP; stopped and
// removed when the object goes. Start() returns null where Debian's
// postgresql-15 is not installed, so that callers can skip. PostgresTest
// (below) is the fixture most tests want.
#ifndef SPARROW_TESTS_SERVER_TESTING_POSTGRES_SERVER_H_
#define SPARROW_TESTS_SERVER_TESTING_POSTGRES_SERVER_H_

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace sparrow::server::testing {

class PostgresServer {
 public:
  static constexpr char kBin[] = "/usr/lib/postgresql/15/bin";

  static std::unique_ptr<PostgresServer> Start() {
    if (!std::filesystem::exists(absl::StrCat(kBin, "/initdb"))) return nullptr;
    char pattern[] = "/tmp/sparrow-pg-XXXXXX";
    if (mkdtemp(pattern) == nullptr) return nullptr;
    auto server = std::unique_ptr<PostgresServer>(new PostgresServer(pattern));
    if (!server->Init()) return nullptr;
    return server;
  }
  ~PostgresServer() {
    Run(absl::StrCat(kBin, "/pg_ctl -D ", dir_, "/data -m immediate stop",
                     " >/dev/null 2>&1"));
    std::filesystem::remove_all(dir_);
  }

  // A libpq URI of a database of its own (created on first use).
  std::string Database(const std::string& name) {
    Run(absl::StrCat(kBin, "/createdb -h ", dir_, " -p ", port_,
                     " -U postgres ", name, " >/dev/null 2>&1"));
    return Uri(name);
  }
  std::string Uri(const std::string& database) const {
    return absl::StrCat("postgresql:///", database, "?host=", dir_,
                        "&port=", port_, "&user=postgres");
  }
  const std::string& dir() const { return dir_; }

 private:
  explicit PostgresServer(std::string dir) : dir_(std::move(dir)) {}

  // Runs a shell command, as postgres when this process is root.
  int Run(const std::string& command) const {
    if (geteuid() != 0) return std::system(command.c_str());
    return std::system(
        absl::StrCat("su postgres -s /bin/sh -c '", command, "'").c_str());
  }

  bool Init() {
    if (geteuid() == 0) {
      const passwd* pw = getpwnam("postgres");
      if (pw == nullptr || chown(dir_.c_str(), pw->pw_uid, pw->pw_gid) != 0) {
        return false;
      }
    }
    if (Run(absl::StrCat(kBin, "/initdb -D ", dir_,
                         "/data -A trust -U postgres -E UTF8 --no-sync >", dir_,
                         "/initdb.log 2>&1")) != 0) {
      return false;
    }
    // No TCP: the port only names the socket file in dir_, so it cannot
    // collide with another server's.
    return Run(absl::StrCat(kBin, "/pg_ctl -D ", dir_, "/data -l ", dir_,
                            "/server.log -w -o \"-p ", port_, " -k ", dir_,
                            " -c listen_addresses= -c fsync=off\" start",
                            " >/dev/null 2>&1")) == 0;
  }

  std::string dir_;
  int port_ = 5432;
};

// A fixture with one server for the test suite and a database of its own
// for each test, named after it, in uri_. Tests skip where PostgreSQL is not
// installed (a derived SetUp checks IsSkipped() after calling this one's).
class PostgresTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = PostgresServer::Start().release(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    if (server_ == nullptr) GTEST_SKIP() << "postgresql-15 is not installed";
    uri_ = server_->Database(absl::AsciiStrToLower(
        ::testing::UnitTest::GetInstance()->current_test_info()->name()));
  }

  static inline PostgresServer* server_ = nullptr;
  std::string uri_;
};

}  // namespace sparrow::server::testing

#endif  // SPARROW_TESTS_SERVER_TESTING_POSTGRES_SERVER_H_
