// sparrowd over TLS: a client that trusts the server's certificate gets in, a
// plaintext client does not.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "gtest/gtest.h"
#include "tests/server/testing/self_signed_cert.h"
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
    if (!testing::SelfSignedCert::OpensslInstalled()) {
      GTEST_SKIP() << "the openssl command is not installed";
    }
    cert_ = std::make_unique<testing::SelfSignedCert>("sparrow-tls");
    ServerFixture::SetUp();
  }
  void TearDown() override {
    ServerFixture::TearDown();
    cert_.reset();
  }
  void Configure(ServerOptions* options) override {
    options->tls_cert = cert_->cert();
    options->tls_key = cert_->key();
  }

  std::unique_ptr<testing::SelfSignedCert> cert_;
};

TEST_F(TlsTest, TrustedClientConnectsPlaintextClientDoesNot) {
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = Slurp(cert_->cert());
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
