// The HTTP port speaks TLS when sparrowd has a certificate: a client that
// trusts it gets the API, a plaintext client gets nothing.
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "gtest/gtest.h"
#include "tests/server/testing/http_fixture.h"
#include "tests/server/testing/self_signed_cert.h"

namespace sparrow::server::testing {
namespace {

class HttpTlsTest : public HttpFixture {
 protected:
  void SetUp() override {
    if (!SelfSignedCert::OpensslInstalled()) {
      GTEST_SKIP() << "the openssl command is not installed";
    }
    cert_ = std::make_unique<SelfSignedCert>("sparrow-http-tls");
    HttpFixture::SetUp();
  }
  void TearDown() override {
    HttpFixture::TearDown();
    cert_.reset();
  }
  void ConfigureHttp(ServerOptions* options) override {
    options->tls_cert = cert_->cert();
    options->tls_key = cert_->key();
  }
  std::unique_ptr<SelfSignedCert> cert_;
};

TEST_F(HttpTlsTest, ATrustingClientGetsTheApiAPlaintextOneDoesNot) {
  EXPECT_EQ(server_->dashboard_url().rfind("https://", 0), 0u);
  httplib::SSLClient secure("127.0.0.1", server_->http_port());
  secure.set_ca_cert_path(cert_->cert().c_str());
  secure.enable_server_certificate_verification(true);
  httplib::Result r = secure.Get("/api/v1/session");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(nlohmann::json::parse(r->body)["tenant"], "default");

  httplib::Client plain("127.0.0.1", server_->http_port());
  plain.set_read_timeout(5, 0);
  httplib::Result p = plain.Get("/api/v1/session");
  EXPECT_TRUE(!p || p->status != 200);
}

}  // namespace
}  // namespace sparrow::server::testing
