// ServiceFixture with sparrowd's HTTP port on (server/http/): an httplib
// client, bearer-token and cookie headers, JSON bodies, and a parser for
// Server-Sent Events as docs/dashboard.md describes them.
#ifndef SPARROW_TESTS_SERVER_TESTING_HTTP_FIXTURE_H_
#define SPARROW_TESTS_SERVER_TESTING_HTTP_FIXTURE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/server/testing/service_fixture.h"
// After Eigen (in service_fixture.h): httplib.h brings <resolv.h>, whose
// `_res` macro breaks Eigen's headers that follow it.
#include "httplib.h"  // NOLINT(build/include_order)

namespace sparrow::server::testing {

// One Server-Sent Event: its id: (the seq), event: and data: as JSON.
struct SseEvent {
  int64_t id = -1;
  std::string event;
  nlohmann::json data;
};

// The complete events of an event-stream body (a body read so far may end
// inside one); comments and retry: skipped.
inline std::vector<SseEvent> ParseSse(const std::string& body) {
  std::vector<SseEvent> events;
  const size_t end = body.rfind("\n\n");
  if (end == std::string::npos) return events;
  for (absl::string_view block :
       absl::StrSplit(absl::string_view(body).substr(0, end), "\n\n")) {
    SseEvent e;
    bool any = false;
    for (absl::string_view line : absl::StrSplit(block, '\n')) {
      if (absl::ConsumePrefix(&line, "id: ")) {
        EXPECT_TRUE(absl::SimpleAtoi(line, &e.id)) << line;
        any = true;
      } else if (absl::ConsumePrefix(&line, "event: ")) {
        e.event = std::string(line);
      } else if (absl::ConsumePrefix(&line, "data: ")) {
        e.data = nlohmann::json::parse(line);
      }
    }
    if (any) events.push_back(std::move(e));
  }
  return events;
}

class HttpFixture : public ServiceFixture {
 protected:
  void Configure(ServerOptions* options) override {
    options->http.listen = "127.0.0.1:0";
    options->http.keep_alive = absl::Milliseconds(200);
    ConfigureHttp(options);
  }
  virtual void ConfigureHttp(ServerOptions* /*options*/) {}

  httplib::Client Client() {
    httplib::Client client("127.0.0.1", server_->http_port());
    client.set_read_timeout(60, 0);
    return client;
  }

  static httplib::Headers Bearer(const std::string& token) {
    return {{"Authorization", "Bearer " + token}};
  }

  // GET path; fails the test when the server does not answer.
  httplib::Result Get(const std::string& path,
                      const httplib::Headers& headers = {}) {
    httplib::Result r = Client().Get(path.c_str(), headers);
    EXPECT_TRUE(r) << "GET " << path << ": " << httplib::to_string(r.error());
    return r;
  }

  httplib::Result Post(const std::string& path,
                       const httplib::Headers& headers = {},
                       const std::string& body = "",
                       const std::string& type = "application/json") {
    httplib::Result r =
        Client().Post(path.c_str(), headers, body, type.c_str());
    EXPECT_TRUE(r) << "POST " << path << ": " << httplib::to_string(r.error());
    return r;
  }

  // GET path answered 200 with JSON; its body.
  nlohmann::json GetJson(const std::string& path,
                         const httplib::Headers& headers = {}) {
    httplib::Result r = Get(path, headers);
    if (!r) return nullptr;
    EXPECT_EQ(r->status, 200) << path << ": " << r->body;
    return nlohmann::json::parse(r->body);
  }

  // Expects `status` and a JSON error body; its message.
  static std::string ErrorMessage(const httplib::Result& r, int status) {
    if (!r) return "";
    EXPECT_EQ(r->status, status) << r->body;
    auto j = nlohmann::json::parse(r->body, nullptr, false);
    EXPECT_TRUE(j.contains("error")) << r->body;
    if (!j.contains("error")) return "";
    EXPECT_EQ(j["error"]["code"], status);
    return j["error"]["message"].get<std::string>();
  }

  // The event stream of a job after `after_seq`, read until it ends.
  std::vector<SseEvent> ReadEvents(const std::string& id, int64_t after_seq = 0,
                                   const httplib::Headers& headers = {}) {
    httplib::Result r = Get(
        "/api/v1/jobs/" + id + "/events?after_seq=" + std::to_string(after_seq),
        headers);
    if (!r) return {};
    EXPECT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(r->get_header_value("Content-Type"), "text/event-stream");
    return ParseSse(r->body);
  }

  // The CSRF token of the caller these headers make.
  std::string CsrfToken(const httplib::Headers& headers = {}) {
    nlohmann::json session = GetJson("/api/v1/session", headers);
    return session.value("csrf_token", "");
  }
};

// Expects ids after+1, after+2, ... with data.seq == id, the last a final
// state event of `state`.
inline void ExpectCompleteStream(const std::vector<SseEvent>& events,
                                 int64_t after, const std::string& state) {
  ASSERT_FALSE(events.empty());
  for (size_t i = 0; i < events.size(); ++i) {
    ASSERT_EQ(events[i].id, after + 1 + static_cast<int64_t>(i));
    ASSERT_EQ(events[i].data["seq"], events[i].id);
  }
  EXPECT_EQ(events.back().event, "state");
  EXPECT_EQ(events.back().data["state"], state);
}

}  // namespace sparrow::server::testing

#endif  // SPARROW_TESTS_SERVER_TESTING_HTTP_FIXTURE_H_
