// Tenants on sparrowd's HTTP port with a tokens file: bearer tokens, the
// login cookie and its CSRF token, and another tenant's job as 404.
#include <string>

#include "gtest/gtest.h"
#include "tests/server/testing/http_fixture.h"

namespace sparrow::server::testing {
namespace {

using nlohmann::json;

class HttpAuthTest : public HttpFixture {
 protected:
  void ConfigureHttp(ServerOptions* options) override { WriteTokens(options); }

  // Logs in through the form; the Set-Cookie header ("" when refused).
  std::string LogIn(const std::string& token) {
    httplib::Result r = Post("/login", {}, "token=" + token,
                             "application/x-www-form-urlencoded");
    if (!r) return "";
    EXPECT_EQ(r->status, 303);
    return r->get_header_value("Set-Cookie");
  }

  // The Cookie request header for a Set-Cookie value.
  static httplib::Headers CookieHeader(const std::string& set_cookie) {
    return {{"Cookie", set_cookie.substr(0, set_cookie.find(';'))}};
  }
};

TEST_F(HttpAuthTest, EveryApiCallNeedsAToken) {
  for (const std::string path :
       {"/api/v1/session", "/api/v1/jobs", "/api/v1/jobs/j/series",
        "/api/v1/jobs/j/events", "/api/v1/jobs/j/events.csv"}) {
    EXPECT_NE(ErrorMessage(Get(path), 401).find("/login"), std::string::npos)
        << path;
    ErrorMessage(Get(path, Bearer("wrong-token")), 401);
  }
  ErrorMessage(Post("/api/v1/jobs/j:cancel"), 401);
  // The pages themselves load; they send the browser to /login.
  httplib::Result index = Get("/");
  ASSERT_TRUE(index);
  EXPECT_EQ(index->status, 200);
}

TEST_F(HttpAuthTest, AnotherTenantsJobIsNotFound) {
  const std::string id =
      TrainedJob(UploadOrDie(TanksCsv(), kTokenA), kTokenA).id();
  for (const std::string suffix :
       {"", "/series", "/model", "/fit", "/events", "/events.csv"}) {
    const std::string path = "/api/v1/jobs/" + id + suffix;
    ErrorMessage(Get(path, Bearer(kTokenB)), 404);
    httplib::Result mine = Get(path, Bearer(kTokenA));
    ASSERT_TRUE(mine);
    EXPECT_EQ(mine->status, 200) << path << ": " << mine->body;
  }
  ErrorMessage(Post("/api/v1/jobs/" + id + ":cancel", Bearer(kTokenB)), 404);
  EXPECT_EQ(GetJson("/api/v1/jobs", Bearer(kTokenB))["jobs"].size(), 0u);
  EXPECT_EQ(GetJson("/api/v1/jobs", Bearer(kTokenA))["jobs"].size(), 1u);
}

TEST_F(HttpAuthTest, ABearerTokenCancelsWithoutCsrf) {
  const std::string id =
      StartLongJob(UploadOrDie(TanksCsv(), kTokenA), kTokenA).id();
  json session = GetJson("/api/v1/session", Bearer(kTokenA));
  EXPECT_EQ(session["tenant"], "alice");
  EXPECT_EQ(session["auth"], "bearer");
  httplib::Result r = Post("/api/v1/jobs/" + id + ":cancel", Bearer(kTokenA));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  WaitForState(id, v1::Job::CANCELLED, kTokenA);
}

TEST_F(HttpAuthTest, TheLoginCookieIsHttpOnlyAndCancelNeedsItsCsrfToken) {
  const std::string set_cookie = LogIn(kTokenA);
  EXPECT_NE(set_cookie.find("HttpOnly"), std::string::npos) << set_cookie;
  EXPECT_NE(set_cookie.find("SameSite=Strict"), std::string::npos);
  const httplib::Headers cookie = CookieHeader(set_cookie);
  json session = GetJson("/api/v1/session", cookie);
  EXPECT_EQ(session["tenant"], "alice");
  EXPECT_EQ(session["auth"], "cookie");

  const std::string id =
      StartLongJob(UploadOrDie(TanksCsv(), kTokenA), kTokenA).id();
  const std::string path = "/api/v1/jobs/" + id + ":cancel";
  ErrorMessage(Post(path, cookie), 403);
  httplib::Headers wrong = cookie;
  wrong.emplace("X-CSRF-Token", CsrfToken(CookieHeader(LogIn(kTokenA))));
  ErrorMessage(Post(path, wrong), 403);  // another session's token
  httplib::Headers right = cookie;
  right.emplace("X-CSRF-Token", session["csrf_token"].get<std::string>());
  httplib::Result r = Post(path, right);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  WaitForState(id, v1::Job::CANCELLED, kTokenA);
}

TEST_F(HttpAuthTest, AWrongLoginSetsNoCookie) {
  httplib::Result r =
      Post("/login", {}, "token=nope", "application/x-www-form-urlencoded");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 303);
  EXPECT_EQ(r->get_header_value("Location"), "/login?error=1");
  EXPECT_FALSE(r->has_header("Set-Cookie"));
  ErrorMessage(Get("/api/v1/session", {{"Cookie", "sparrow_session=forged"}}),
               401);
}

TEST_F(HttpAuthTest, ATokenInTheAddressLogsInOnceAndIsDropped) {
  httplib::Result r = Get(std::string("/?token=") + kTokenB);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 303);
  EXPECT_EQ(r->get_header_value("Location"), "/");
  json session = GetJson("/api/v1/session",
                         CookieHeader(r->get_header_value("Set-Cookie")));
  EXPECT_EQ(session["tenant"], "bob");
}

}  // namespace
}  // namespace sparrow::server::testing
