// The text forms of progress events: SSE frames with JSON data, CSV rows.
#include "server/http/event_text.h"

#include <cmath>
#include <limits>
#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace sparrow::server::http {
namespace {

v1::ProgressEvent Iteration() {
  v1::ProgressEvent e;
  e.set_seq(17);
  e.set_kind(v1::ProgressEvent::ITERATION);
  e.set_iteration(16);
  e.set_elapsed_seconds(0.25);
  e.set_loss(0.1);
  e.set_sparsity_pct(12.5);
  e.mutable_time()->set_seconds(1764115200);  // 2025-11-26T00:00:00Z
  e.mutable_time()->set_nanos(5000000);
  return e;
}

TEST(EventTextTest, NumbersReadBackExactlyAndNonFiniteIsNull) {
  for (double v : {0.1, 1.0 / 3.0, 1e-300, -2.5e17, 0.0}) {
    std::string text;
    AppendJsonNumber(v, &text);
    EXPECT_EQ(std::stod(text), v) << text;
  }
  std::string text;
  AppendJsonNumber(std::numeric_limits<double>::quiet_NaN(), &text);
  AppendJsonNumber(-std::numeric_limits<double>::infinity(), &text);
  EXPECT_EQ(text, "nullnull");
}

TEST(EventTextTest, StringsAreEscaped) {
  std::string text;
  AppendJsonString("a\"b\\c\nd\x01", &text);
  EXPECT_EQ(text, R"("a\"b\\c\nd\u0001")");
  EXPECT_EQ(nlohmann::json::parse(text), "a\"b\\c\nd\x01");
}

TEST(EventTextTest, AnIterationIsOneSseFrameWithAbsentValuesNull) {
  std::string frame;
  AppendSseFrame(Iteration(), &frame);
  const std::string prefix = "id: 17\nevent: iteration\ndata: ";
  ASSERT_EQ(frame.rfind(prefix, 0), 0u) << frame;
  ASSERT_EQ(frame.substr(frame.size() - 2), "\n\n");
  const std::string data =
      frame.substr(prefix.size(), frame.size() - prefix.size() - 2);
  EXPECT_EQ(data.find('\n'), std::string::npos);
  nlohmann::json j = nlohmann::json::parse(data);
  EXPECT_EQ(j["seq"], 17);
  EXPECT_EQ(j["iteration"], 16);
  EXPECT_EQ(j["loss"], 0.1);
  EXPECT_EQ(j["sparsity_pct"], 12.5);
  EXPECT_TRUE(j["validation_metric"].is_null());
  EXPECT_TRUE(j["step_size"].is_null());
  EXPECT_EQ(j["time"], "2025-11-26T00:00:00.005Z");
}

TEST(EventTextTest, AStateEventsReasonStaysOnOneLine) {
  v1::ProgressEvent e;
  e.set_seq(3);
  e.set_kind(v1::ProgressEvent::STATE);
  e.set_state(v1::Job::FAILED);
  e.set_reason("line 1\nline 2, \"quoted\"");
  std::string frame;
  AppendSseFrame(e, &frame);
  EXPECT_EQ(frame.rfind("id: 3\nevent: state\ndata: {", 0), 0u) << frame;
  EXPECT_EQ(frame.find('\n', frame.find("data: ")), frame.size() - 2);

  std::string row;
  AppendCsvRow(e, &row);
  EXPECT_EQ(row,
            "3,STATE,1970-01-01T00:00:00.000Z,,,,,,,FAILED,"
            "\"line 1\nline 2, \"\"quoted\"\"\"\n");
}

TEST(EventTextTest, ATrialEndSaysWhichTrialEndedHowAndItsFigures) {
  v1::ProgressEvent e;
  e.set_seq(9);
  e.set_kind(v1::ProgressEvent::TRIAL_END);
  e.set_trial(2);
  e.set_state(v1::Job::SUCCEEDED);
  e.set_reason("converged");
  e.set_iteration(40);
  e.set_validation_metric(3.5);
  std::string frame;
  AppendSseFrame(e, &frame);
  ASSERT_EQ(frame.rfind("id: 9\nevent: trial_end\ndata: {", 0), 0u) << frame;
  const std::string data = frame.substr(frame.find("data: ") + 6);
  nlohmann::json j = nlohmann::json::parse(data);
  EXPECT_EQ(j["kind"], "TRIAL_END");
  EXPECT_EQ(j["trial"], 2);
  EXPECT_EQ(j["state"], "SUCCEEDED");
  EXPECT_EQ(j["reason"], "converged");
  EXPECT_EQ(j["iteration"], 40);
  EXPECT_EQ(j["validation_metric"], 3.5);
  EXPECT_TRUE(j["sparsity_pct"].is_null());

  std::string row;
  AppendCsvRow(e, &row);
  EXPECT_EQ(row,
            "9,TRIAL_END,1970-01-01T00:00:00.000Z,40,,,3.5,,,SUCCEEDED,"
            "trial 2: converged\n");
}

TEST(EventTextTest, CsvRowsHaveTheHeadersColumns) {
  std::string row;
  AppendCsvRow(Iteration(), &row);
  EXPECT_EQ(row,
            "17,ITERATION,2025-11-26T00:00:00.005Z,16,0.25,0.1,,12.5,,,\n");
  auto columns = [](absl::string_view s) {
    return std::count(s.begin(), s.end(), ',');
  };
  EXPECT_EQ(columns(row), columns(kEventsCsvHeader));
}

}  // namespace
}  // namespace sparrow::server::http
