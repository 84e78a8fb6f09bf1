// The backends the Store tests run on: a SQLite file in a temporary
// directory, or a database of its own on a real PostgreSQL 15 server that the
// test process starts on first use (postgres_server.h) and stops at exit.
//
//   INSTANTIATE_TEST_SUITE_P(Backends, MyTest, ::testing::ValuesIn(kBackends),
//                            BackendName);
#ifndef SPARROW_TESTS_SERVER_TESTING_STORE_BACKEND_H_
#define SPARROW_TESTS_SERVER_TESTING_STORE_BACKEND_H_

#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/store/store.h"
#include "tests/server/testing/postgres_server.h"

namespace sparrow::server::testing {

enum class Backend { kSqlite, kPostgres };
inline constexpr Backend kBackends[] = {Backend::kSqlite, Backend::kPostgres};

inline std::string BackendName(const ::testing::TestParamInfo<Backend>& info) {
  return info.param == Backend::kSqlite ? "Sqlite" : "Postgres";
}

class StoreBackend {
 public:
  // `name` names the database (letters, digits and _).
  StoreBackend(Backend backend, std::filesystem::path dir, std::string name)
      : backend_(backend), dir_(std::move(dir)), name_(std::move(name)) {}

  // False (and the test should skip) where PostgreSQL is not installed.
  bool Available() {
    if (backend_ == Backend::kSqlite) return true;
    if (uri_.empty()) {
      PostgresServer* server = Server();
      if (server == nullptr) return false;
      std::string db;
      for (char c : name_) {
        db.push_back(std::isalnum(static_cast<unsigned char>(c))
                         ? std::tolower(c)
                         : '_');
      }
      uri_ = server->Database(db.substr(0, 60));
    }
    return true;
  }
  // The same store each time (closing the previous one is the caller's).
  absl::StatusOr<std::unique_ptr<Store>> Open() {
    if (backend_ == Backend::kSqlite) {
      return OpenSqliteStore((dir_ / "sparrow.db").string());
    }
    return OpenPostgresStore(uri_);
  }
  Backend backend() const { return backend_; }
  const std::string& uri() const { return uri_; }

 private:
  // One server per test process, stopped when it exits.
  static PostgresServer* Server() {
    static std::unique_ptr<PostgresServer> server = PostgresServer::Start();
    return server.get();
  }

  Backend backend_;
  std::filesystem::path dir_;
  std::string name_;
  std::string uri_;
};

// A fixture with a fresh store of the parameter's backend in store_.
class BackendStoreTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    const std::string name = absl::StrCat(
        ::testing::UnitTest::GetInstance()->current_test_info()->name(), "_",
        ::getpid());
    dir_ = std::filesystem::path(::testing::TempDir()) /
           absl::StrCat("store_", name);
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    backend_ = std::make_unique<StoreBackend>(GetParam(), dir_, name);
    if (!backend_->Available()) GTEST_SKIP() << "postgresql-15 is missing";
    Reopen();
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  // Closes the store (if open) and opens the same one again.
  void Reopen() {
    store_.reset();
    absl::StatusOr<std::unique_ptr<Store>> store = backend_->Open();
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }

  std::filesystem::path dir_;  // the SQLite file is dir_ / "sparrow.db"
  std::unique_ptr<StoreBackend> backend_;
  std::unique_ptr<Store> store_;
};

}  // namespace sparrow::server::testing

#endif  // SPARROW_TESTS_SERVER_TESTING_STORE_BACKEND_H_
