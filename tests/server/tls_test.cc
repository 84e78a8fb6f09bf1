// sparrowd over TLS: a client that trusts the server's certificate gets in, a
// plaintext client does not.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gtest/gtest.h"
#include "tests/server/testing/server_fixture.h"

namespace sparrow::server {
namespace {

std::string Slurp(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class TlsTest : public testing::ServerFixture {
 protected:
  void SetUp() override {
    if (std::system("command -v openssl >/dev/null 2>&1") != 0) {
      GTEST_SKIP() << "the openssl command is not installed";
    }
    cert_dir_ = std::filesystem::path(::testing::TempDir()) /
                absl::StrFormat("sparrow-tls-%d", getpid());
    std::filesystem::create_directories(cert_dir_);
    const std::string command = absl::StrCat(
        "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost "
        "-addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout ",
        (cert_dir_ / "key.pem").string(), " -out ",
        (cert_dir_ / "cert.pem").string(), " >/dev/null 2>&1");
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    ServerFixture::SetUp();
  }
  void TearDown() override {
    ServerFixture::TearDown();
    std::filesystem::remove_all(cert_dir_);
  }
  void Configure(ServerOptions* options) override {
    options->tls_cert = (cert_dir_ / "cert.pem").string();
    options->tls_key = (cert_dir_ / "key.pem").string();
  }

  std::filesystem::path cert_dir_;
};

TEST_F(TlsTest, TrustedClientConnectsPlaintextClientDoesNot) {
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = Slurp(cert_dir_ / "cert.pem");
  auto secure =
      grpc::CreateChannel(server_->address(), grpc::SslCredentials(ssl));
  auto stub = v1::DatasetService::NewStub(secure);
  v1::ListDatasetsRequest request;
  v1::ListDatasetsResponse response;
  auto context = Context();
  grpc::Status s = stub->List(context.get(), request, &response);
  EXPECT_TRUE(s.ok()) << s.error_message();

  // The fixture's own stubs speak plaintext.
  context = Context();
  context->set_deadline(std::chrono::system_clock::now() +
                        std::chrono::seconds(5));
  s = datasets_->List(context.get(), request, &response);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
}

TEST(TlsOptionsTest, CertWithoutKeyIsRefused) {
  ServerOptions options;
  options.listen = "127.0.0.1:0";
  options.data_dir = (std::filesystem::path(::testing::TempDir()) /
                      absl::StrFormat("sparrow-tls-opt-%d", getpid()))
                         .string();
  options.tls_cert = "/nonexistent/cert.pem";
  auto server = SparrowServer::Start(options);
  ASSERT_FALSE(server.ok());
  EXPECT_NE(server.status().message().find("--tls-key"), std::string::npos);
  std::filesystem::remove_all(options.data_dir);
}

}  // namespace
}  // namespace sparrow::server
