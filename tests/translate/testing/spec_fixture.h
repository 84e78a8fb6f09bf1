// Shared pieces of the translate/ tests: a small sequence data set, a spec
// over it, and loading a spec the way sparrowd does.
#ifndef SPARROW_TESTS_TRANSLATE_TESTING_SPEC_FIXTURE_H_
#define SPARROW_TESTS_TRANSLATE_TESTING_SPEC_FIXTURE_H_

#include <cmath>
#include <string>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "translate/config.h"
#include "translate/data.h"
#include "translate/json.h"

namespace sparrow::translate {

// `rows` rows of columns u and y: smooth signals for a small sequence model.
inline std::string Csv(int rows) {
  std::string s = "u,y\n";
  for (int i = 0; i < rows; ++i) {
    s += std::to_string(std::sin(0.1 * i)) + "," +
         std::to_string(std::cos(0.07 * i)) + "\n";
  }
  return s;
}

// A state-space RNN spec over Csv(200): train rows 1-150, test 151-200.
inline constexpr char kRnnSpec[] = R"({
  "data": {"csv_path": "x.csv", "inputs": ["u"], "outputs": ["y"]},
  "split": {"train": [{"first": 1, "last": 150}], "test": [{"first": 151, "last": 200}]},
  "model": {"state_space_rnn": {"nx": 2, "fx_hidden": [3], "fy_hidden": [3]}},
  "optimizer": {"lbfgs": {}},
  "stopping": {"max_epochs": 30},
  "seed": 7
})";

// ParseJobSpecJson, ToTrainConfig and LoadTrainData in a row.
inline absl::Status Load(const std::string& json, const std::string& csv) {
  auto spec = ParseJobSpecJson(json);
  if (!spec.ok()) return spec.status();
  auto config = ToTrainConfig(*spec);
  if (!config.ok()) return config.status();
  return LoadTrainData(*spec, *config, csv).status();
}

// `s` with the first `from` (which must occur) replaced by `to`.
inline std::string Replace(std::string s, const std::string& from,
                           const std::string& to) {
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

// Expects INVALID_ARGUMENT with `needle` in the message.
inline void ExpectError(const absl::Status& s, const std::string& needle) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find(needle), std::string::npos)
      << "message: " << s.message();
}

}  // namespace sparrow::translate

#endif  // SPARROW_TESTS_TRANSLATE_TESTING_SPEC_FIXTURE_H_
