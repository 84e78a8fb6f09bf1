// The HTTP port speaks TLS when sparrowd has a certificate: a client that
// trusts it gets the API, a plaintext client gets nothing.
#include <cstdlib>
#include <filesystem>

#include "gtest/gtest.h"
#include "tests/server/testing/http_fixture.h"

namespace sparrow::server::testing {
namespace {

class HttpTlsTest : public HttpFixture {
 protected:
  void SetUp() override {
    if (std::system("command -v openssl >/dev/null 2>&1") != 0) {
      GTEST_SKIP() << "the openssl command is not installed";
    }
    cert_dir_ = std::filesystem::path(::testing::TempDir()) /
                absl::StrFormat("sparrow-http-tls-%d", getpid());
    std::filesystem::create_directories(cert_dir_);
    const std::string command = absl::StrCat(
        "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost "
        "-addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout ",
        (cert_dir_ / "key.pem").string(), " -out ",
        (cert_dir_ / "cert.pem").string(), " >/dev/null 2>&1");
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    HttpFixture::SetUp();
  }
  void TearDown() override {
    HttpFixture::TearDown();
    std::filesystem::remove_all(cert_dir_);
  }
  void ConfigureHttp(ServerOptions* options) override {
    options->tls_cert = (cert_dir_ / "cert.pem").string();
    options->tls_key = (cert_dir_ / "key.pem").string();
  }
  std::filesystem::path cert_dir_;
};

TEST_F(HttpTlsTest, ATrustingClientGetsTheApiAPlaintextOneDoesNot) {
  EXPECT_EQ(server_->dashboard_url().rfind("https://", 0), 0u);
  httplib::SSLClient secure("127.0.0.1", server_->http_port());
  secure.set_ca_cert_path((cert_dir_ / "cert.pem").string().c_str());
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
