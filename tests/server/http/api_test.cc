// The JSON API, event streams and pages of sparrowd's HTTP port without a
// tokens file (docs/dashboard.md), against an in-process SparrowServer whose
// jobs run in real worker processes.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/server/testing/http_fixture.h"

namespace sparrow::server::testing {
namespace {

using nlohmann::json;

class HttpApiTest : public HttpFixture {};

TEST_F(HttpApiTest, SessionWithoutTokensIsTheDefaultTenant) {
  json session = GetJson("/api/v1/session");
  EXPECT_EQ(session["tenant"], "default");
  EXPECT_EQ(session["auth"], "none");
  EXPECT_GE(session["csrf_token"].get<std::string>().size(), 32u);
}

TEST_F(HttpApiTest, ListsJobsByPagesAndState) {
  const std::string dataset = UploadOrDie(TanksCsv());
  const std::string a = TrainedJob(dataset).id();
  const std::string b = TrainedJob(dataset).id();
  json first = GetJson("/api/v1/jobs?page_size=1");
  ASSERT_EQ(first["jobs"].size(), 1u);
  const std::string token = first["next_page_token"];
  ASSERT_FALSE(token.empty());
  json second = GetJson("/api/v1/jobs?page_size=1&page_token=" + token);
  ASSERT_EQ(second["jobs"].size(), 1u);
  EXPECT_EQ(second["next_page_token"], "");
  std::vector<std::string> ids = {first["jobs"][0]["id"],
                                  second["jobs"][0]["id"]};
  EXPECT_EQ(ids, (std::vector<std::string>{a, b}));  // oldest first

  EXPECT_EQ(GetJson("/api/v1/jobs?state=SUCCEEDED")["jobs"].size(), 2u);
  EXPECT_EQ(GetJson("/api/v1/jobs?state=RUNNING")["jobs"].size(), 0u);
  EXPECT_NE(ErrorMessage(Get("/api/v1/jobs?state=DONE"), 400).find("QUEUED"),
            std::string::npos);
  EXPECT_NE(ErrorMessage(Get("/api/v1/jobs?page_size=-1"), 400).find(">= 0"),
            std::string::npos);
  EXPECT_NE(
      ErrorMessage(Get("/api/v1/jobs?page_size=ten"), 400).find("integer"),
      std::string::npos);
}

TEST_F(HttpApiTest, JobHasASummaryAndTheWholeJob) {
  const std::string id = TrainedJob(UploadOrDie(TanksCsv())).id();
  json j = GetJson("/api/v1/jobs/" + id);
  const json& s = j["summary"];
  EXPECT_EQ(s["id"], id);
  EXPECT_EQ(s["state"], "SUCCEEDED");
  EXPECT_EQ(s["optimizer"], "adam");
  EXPECT_EQ(s["model"], "narx_mlp");
  EXPECT_EQ(s["iterations"], 20);
  EXPECT_TRUE(std::isfinite(s["loss"].get<double>()));
  EXPECT_EQ(j["job"]["spec"]["name"], "small");
  EXPECT_EQ(j["job"]["last_seq"], s["last_seq"]);
}

TEST_F(HttpApiTest, AnUnknownJobIsNotFoundOnEveryPath) {
  const std::string csrf = CsrfToken();
  for (const std::string suffix :
       {"", "/series", "/model", "/fit", "/events", "/events.csv"}) {
    EXPECT_NE(ErrorMessage(Get("/api/v1/jobs/job-nope" + suffix), 404)
                  .find("job-nope"),
              std::string::npos)
        << suffix;
  }
  ErrorMessage(Post("/api/v1/jobs/job-nope:cancel", {{"X-CSRF-Token", csrf}}),
               404);
  ErrorMessage(Get("/api/v1/nothing"), 404);
  ErrorMessage(Get("/api/v1/jobs/bad%20id/series"), 404);
}

TEST_F(HttpApiTest, SeriesHasEveryIterationOrKeepsTheExtremes) {
  const std::string id = TrainedJob(UploadOrDie(TanksCsv()), "", 60).id();
  json full = GetJson("/api/v1/jobs/" + id + "/series");
  EXPECT_EQ(full["count"], 60);
  EXPECT_EQ(full["downsampled"], false);
  ASSERT_EQ(full["loss"].size(), 60u);
  EXPECT_EQ(full["last_seq"], GetJob(id).last_seq());
  EXPECT_EQ(full["states"].back()["state"], "SUCCEEDED");
  std::vector<double> loss = full["loss"];

  json small = GetJson("/api/v1/jobs/" + id + "/series?points=6");
  EXPECT_EQ(small["downsampled"], true);
  std::vector<double> kept = small["loss"];
  EXPECT_LE(kept.size(), 6u);
  EXPECT_EQ(small["iteration"].size(), kept.size());
  EXPECT_EQ(*std::max_element(kept.begin(), kept.end()),
            *std::max_element(loss.begin(), loss.end()));
  EXPECT_EQ(*std::min_element(kept.begin(), kept.end()),
            *std::min_element(loss.begin(), loss.end()));
  EXPECT_EQ(small["best"]["loss"], full["best"]["loss"]);
}

TEST_F(HttpApiTest, PointsOutsideTheLimitsAreRefused) {
  const std::string id = TrainedJob(UploadOrDie(TanksCsv())).id();
  for (const std::string points : {"1", "20001", "1000000000", "many", "-5"}) {
    for (const std::string path : {"/series", "/fit"}) {
      EXPECT_NE(ErrorMessage(
                    Get("/api/v1/jobs/" + id + path + "?points=" + points), 400)
                    .find("[2, 20000]"),
                std::string::npos)
          << path << " " << points;
    }
  }
}

TEST_F(HttpApiTest, ModelAndFitOfATrainedJob) {
  const std::string id = TrainedJob(UploadOrDie(TanksCsv())).id();
  json model = GetJson("/api/v1/jobs/" + id + "/model");
  EXPECT_EQ(model["kind"], "narx_mlp");
  ASSERT_EQ(model["layers"].size(), 2u);
  EXPECT_EQ(model["layers"][0]["rows"], 8);
  EXPECT_EQ(model["layers"][0]["weights"].size(), 8u);
  EXPECT_EQ(model["layers"][0]["truncated"], false);

  json fit = GetJson("/api/v1/jobs/" + id + "/fit");
  EXPECT_EQ(fit["split"], "test");
  EXPECT_EQ(fit["outputs"], json::array({"y"}));
  ASSERT_EQ(fit["measured"].size(), 1u);
  EXPECT_EQ(fit["measured"][0].size(), fit["x"].size());
  EXPECT_EQ(fit["predicted"][0].size(), fit["x"].size());
  EXPECT_GT(fit["x"].size(), 50u);
  v1::TrainedModel trained;
  ASSERT_TRUE(GetModel(id, &trained).ok());
  EXPECT_DOUBLE_EQ(fit["metrics"]["rmse"].get<double>(),
                   trained.metrics().test_rmse());
}

TEST_F(HttpApiTest, StoredEventsStreamInOrderAndResume) {
  const std::string id = TrainedJob(UploadOrDie(TanksCsv())).id();
  const int64_t last = GetJob(id).last_seq();
  std::vector<SseEvent> all = ReadEvents(id);
  ExpectCompleteStream(all, 0, "SUCCEEDED");
  EXPECT_EQ(all.back().id, last);
  EXPECT_EQ(all.front().event, "state");
  EXPECT_EQ(all[2].event, "iteration");

  ExpectCompleteStream(ReadEvents(id, last - 5), last - 5, "SUCCEEDED");
  // Last-Event-ID wins over after_seq, as a reconnecting EventSource sends it.
  httplib::Result r = Get("/api/v1/jobs/" + id + "/events?after_seq=1",
                          {{"Last-Event-ID", std::to_string(last - 3)}});
  ASSERT_TRUE(r);
  ExpectCompleteStream(ParseSse(r->body), last - 3, "SUCCEEDED");
  EXPECT_NE(r->body.find("retry: 2000"), std::string::npos);
  EXPECT_NE(
      ErrorMessage(
          Get("/api/v1/jobs/" + id + "/events", {{"Last-Event-ID", "x"}}), 400)
          .find("Last-Event-ID"),
      std::string::npos);
}

TEST_F(HttpApiTest, EventsCsvHasEveryEvent) {
  const std::string id = TrainedJob(UploadOrDie(TanksCsv())).id();
  httplib::Result r = Get("/api/v1/jobs/" + id + "/events.csv");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  std::vector<std::string> lines = absl::StrSplit(r->body, '\n');
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.back(), "");  // every row ends with a newline
  lines.pop_back();
  EXPECT_EQ(lines[0].rfind("seq,kind,time,iteration", 0), 0u) << lines[0];
  EXPECT_EQ(static_cast<int64_t>(lines.size()) - 1, GetJob(id).last_seq());
  EXPECT_EQ(lines[1].rfind("1,", 0), 0u) << lines[1];
}

TEST_F(HttpApiTest, ALiveStreamFollowsTheJobUntilItIsCancelled) {
  const std::string id = StartLongJob(UploadOrDie(TanksCsv())).id();
  std::string body;
  std::atomic<int> iterations{0};
  std::thread reader([&] {
    Client().Get(("/api/v1/jobs/" + id + "/events").c_str(),
                 [&](const char* data, size_t size) {
                   body.append(data, size);
                   iterations = static_cast<int>(ParseSse(body).size());
                   return true;
                 });
  });
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (iterations < 10 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_GE(iterations, 10);
  httplib::Result cancel =
      Post("/api/v1/jobs/" + id + ":cancel", {{"X-CSRF-Token", CsrfToken()}});
  ASSERT_TRUE(cancel);
  EXPECT_EQ(cancel->status, 200) << cancel->body;
  reader.join();  // the stream ends after the final state event
  ExpectCompleteStream(ParseSse(body), 0, "CANCELLED");
  EXPECT_EQ(ParseSse(body).back().id, GetJob(id).last_seq());
}

TEST_F(HttpApiTest, CancelNeedsTheCsrfToken) {
  const std::string id = StartLongJob(UploadOrDie(TanksCsv())).id();
  const std::string path = "/api/v1/jobs/" + id + ":cancel";
  EXPECT_NE(ErrorMessage(Post(path), 403).find("X-CSRF-Token"),
            std::string::npos);
  ErrorMessage(Post(path, {{"X-CSRF-Token", "guess"}}), 403);
  EXPECT_EQ(GetJob(id).state(), v1::Job::RUNNING);
  httplib::Result ok = Post(path, {{"X-CSRF-Token", CsrfToken()}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  WaitForState(id, v1::Job::CANCELLED);
}

TEST_F(HttpApiTest, ServesThePagesWithASecurityPolicy) {
  httplib::Result index = Get("/");
  ASSERT_TRUE(index);
  EXPECT_EQ(index->status, 200);
  EXPECT_EQ(index->get_header_value("Content-Type"),
            "text/html; charset=utf-8");
  EXPECT_NE(index->get_header_value("Content-Security-Policy")
                .find("default-src 'self'"),
            std::string::npos);
  httplib::Result uplot = Get("/assets/uPlot.iife.min.js");
  ASSERT_TRUE(uplot);
  EXPECT_EQ(uplot->status, 200);
  EXPECT_GT(uplot->body.size(), 10000u);
  ErrorMessage(Get("/nothing.js"), 404);
}

TEST_F(HttpApiTest, BodiesAndAddressesHaveLimits) {
  EXPECT_NE(ErrorMessage(Post("/login", {}, std::string(100 << 10, 'x'),
                              "application/x-www-form-urlencoded"),
                         413)
                .find("64 KiB"),
            std::string::npos);
  ErrorMessage(Get("/api/v1/jobs?state=" + std::string(10000, 'Q')), 414);
}

class HttpStreamLimitTest : public HttpFixture {
  void ConfigureHttp(ServerOptions* options) override {
    options->http.max_streams = 1;
  }
};

TEST_F(HttpStreamLimitTest, StreamsBeyondTheLimitAreRefusedByName) {
  const std::string id = StartLongJob(UploadOrDie(TanksCsv())).id();
  std::atomic<bool> open{false};
  std::thread reader([&] {
    Client().Get(("/api/v1/jobs/" + id + "/events").c_str(),
                 [&](const char*, size_t) {
                   open = true;
                   return true;
                 });
  });
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (!open && absl::Now() < deadline)
    absl::SleepFor(absl::Milliseconds(10));
  ASSERT_TRUE(open);
  EXPECT_NE(ErrorMessage(Get("/api/v1/jobs/" + id + "/events"), 503)
                .find("--http-max-streams 1"),
            std::string::npos);
  CancelAndWait(id);
  reader.join();
  // The finished stream gives its place back once the server has seen it end,
  // which can come a moment after the client read its last byte.
  const std::string path = "/api/v1/jobs/" + id + "/events";
  const absl::Time released = absl::Now() + absl::Seconds(30);
  httplib::Result r = Get(path);
  while (r && r->status == 503 && absl::Now() < released) {
    absl::SleepFor(absl::Milliseconds(10));
    r = Get(path);
  }
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  ExpectCompleteStream(ParseSse(r->body), 0, "CANCELLED");
}

}  // namespace
}  // namespace sparrow::server::testing
