// A throwaway self-signed certificate for localhost / 127.0.0.1, made with
// the openssl command, for the TLS tests of the gRPC and HTTP ports.
#ifndef SPARROW_TESTS_SERVER_TESTING_SELF_SIGNED_CERT_H_
#define SPARROW_TESTS_SERVER_TESTING_SELF_SIGNED_CERT_H_

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace sparrow::server::testing {

class SelfSignedCert {
 public:
  static bool OpensslInstalled() {
    return std::system("command -v openssl >/dev/null 2>&1") == 0;
  }
  // Writes key.pem and cert.pem into a fresh directory; fails the test when
  // openssl does.
  explicit SelfSignedCert(const std::string& name)
      : dir_(std::filesystem::path(::testing::TempDir()) /
             absl::StrCat(name, "-", getpid())) {
    std::filesystem::create_directories(dir_);
    const std::string command = absl::StrCat(
        "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost "
        "-addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout ",
        key(), " -out ", cert(), " >/dev/null 2>&1");
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
  }
  ~SelfSignedCert() { std::filesystem::remove_all(dir_); }

  std::string cert() const { return (dir_ / "cert.pem").string(); }
  std::string key() const { return (dir_ / "key.pem").string(); }

 private:
  std::filesystem::path dir_;
};

}  // namespace sparrow::server::testing

#endif  // SPARROW_TESTS_SERVER_TESTING_SELF_SIGNED_CERT_H_
