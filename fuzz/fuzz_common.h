// What the fuzz targets and their seed generator share: a small deterministic
// data file and the job specs trained on it.
#ifndef SPARROW_FUZZ_FUZZ_COMMON_H_
#define SPARROW_FUZZ_FUZZ_COMMON_H_

#include <cmath>
#include <string>

#include "absl/strings/str_format.h"

namespace sparrow::fuzz {

// A trace of a small nonlinear system: input u, a dynamic output y and a
// static output z = f(u). %.17g round-trips, so parsing is exact. Small enough
// (48 rows) that loading and one-epoch training cost well under a millisecond.
inline std::string SmallCsv(int rows = 48) {
  std::string csv = "u,y,z\n";
  double y = 0.0;
  for (int k = 0; k < rows; ++k) {
    const double u = std::sin(0.13 * k) + 0.5 * std::sin(0.031 * k + 1.0);
    absl::StrAppendFormat(&csv, "%.17g,%.17g,%.17g\n", u, y,
                          std::tanh(2.0 * u) + 0.1 * u * u);
    y = 0.7 * y + 0.4 * std::tanh(u) - 0.05 * y * y;
  }
  return csv;
}

// Job specs (JSON) over SmallCsv(48): one per model family and per optimizer
// whose state a checkpoint restores. Each trains in a few milliseconds.
inline constexpr const char* kSmallSpecs[] = {
    R"({"data": {"csv_path": "x.csv", "inputs": ["u"], "outputs": ["y"]},
        "split": {"train": [{"first": 1, "last": 36}],
                  "test": [{"first": 37, "last": 48}]},
        "model": {"narx_mlp": {"input_lags": 2, "output_lags": 2,
                               "hidden": [4]}},
        "optimizer": {"adam": {"learning_rate": 0.01}},
        "stopping": {"max_epochs": 3}, "seed": 1})",
    R"({"data": {"csv_path": "x.csv", "inputs": ["u"], "outputs": ["y"]},
        "split": {"train": [{"first": 1, "last": 36}]},
        "model": {"state_space_rnn": {"nx": 2, "fx_hidden": [3],
                  "fy_hidden": [3], "initial_state": "INITIAL_STATE_FREE"}},
        "optimizer": {"nailm": {}},
        "stopping": {"max_epochs": 2}, "seed": 2})",
    R"({"data": {"csv_path": "x.csv", "inputs": ["u"], "outputs": ["y", "z"]},
        "split": {"train": [{"first": 1, "last": 40}]},
        "model": {"mlp": {"hidden": [4]}},
        "optimizer": {"sgd": {"learning_rate": 0.01}},
        "stopping": {"max_epochs": 2}, "seed": 3})",
    R"({"data": {"csv_path": "x.csv", "inputs": ["u"], "outputs": ["y"]},
        "split": {"train": [{"first": 1, "last": 36}]},
        "model": {"narx_mlp": {"input_lags": 2, "output_lags": 2,
                               "hidden": [4]}},
        "optimizer": {"sbdl": {"lambda": [1.0], "outer_iterations": 2,
                               "inner_epochs": 2, "learning_rate": 0.01}},
        "seed": 4})",
    R"({"data": {"csv_path": "x.csv", "inputs": ["u"], "outputs": ["z"]},
        "split": {"train": [{"first": 1, "last": 40}]},
        "model": {"mlp": {"hidden": [4, 3], "no_bias": true}},
        "optimizer": {"b2ld": {}},
        "stopping": {"max_epochs": 2}, "seed": 5})",
    R"({"data": {"csv_path": "x.csv", "inputs": ["u"], "outputs": ["z"]},
        "split": {"train": [{"first": 1, "last": 40}]},
        "model": {"mlp": {"hidden": [4, 3], "no_bias": true}},
        "optimizer": {"bling": {}},
        "stopping": {"max_epochs": 2}, "seed": 6})",
};
inline constexpr int kNumSmallSpecs =
    static_cast<int>(sizeof(kSmallSpecs) / sizeof(kSmallSpecs[0]));

}  // namespace sparrow::fuzz

#endif  // SPARROW_FUZZ_FUZZ_COMMON_H_
