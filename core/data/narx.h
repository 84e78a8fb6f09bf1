// NARX regressors (ALGORITHMS.md §1.1, with its erratum: y(t) is predicted
// from z(t), and u(t) enters as a direct feed-through):
//
//   z(t) = [u(t), u(t-1), ..., u(t-input_lags), y(t-1), ..., y(t-output_lags)]
//
// u(t) only when `feedthrough`. Each lag block holds all channels of that lag
// in channel order, so for n_u = 2: [u_0(t), u_1(t), u_0(t-1), u_1(t-1), ...].
// Note the paper's naming: n_a is the *input* lag and n_b the *output* lag.
//
// Thread safety: pure functions.
#ifndef SPARROW_CORE_DATA_NARX_H_
#define SPARROW_CORE_DATA_NARX_H_

#include "Eigen/Core"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/data/dataset.h"

namespace sparrow::core::data {

// Lags are capped so that sizes computed from them cannot overflow; real NARX
// models use tens of lags.
inline constexpr int kMaxNarxLag = 100000;

struct NarxLags {
  int input_lags = 0;       // n_a: past inputs u(t-1)..u(t-n_a), >= 0.
  int output_lags = 0;      // n_b: past outputs y(t-1)..y(t-n_b), >= 0.
  bool feedthrough = true;  // Whether z(t) contains u(t).

  // Length of z(t): n_u * (input_lags + feedthrough) + n_y * output_lags.
  int dimension(int n_u, int n_y) const {
    return n_u * (input_lags + (feedthrough ? 1 : 0)) + n_y * output_lags;
  }
  // Samples of history z(t) needs: max(input_lags, output_lags).
  int max_lag() const {
    return input_lags > output_lags ? input_lags : output_lags;
  }
};

// InvalidArgument for a negative lag, a lag above kMaxNarxLag, or lags that
// leave z(t) empty (no input lag, no output lag, no feed-through).
absl::Status ValidateNarxLags(const NarxLags& lags);

// One-step-ahead regression data over all traces: for each trace, samples
// t = max_lag .. N-1 in order (the first max_lag samples are history only),
// traces concatenated. x is dimension × M with z(t) in its columns, y is
// n_y × M with y(t). input_names name the regressor entries ("u(t-2)" uses
// the input column names), output_names are the data's.
// Errors (InvalidArgument): invalid lags, a trace whose u and y do not match
// n_u / n_y / each other, and a trace with N <= max_lag samples ("lag L is
// longer than trace i (N samples)").
absl::StatusOr<TableData> BuildNarxRegressors(const SequenceData& data,
                                              const NarxLags& lags);

// Writes z(t) for time t of one trace into `z`, reading past outputs from
// `y_hist` (n_y × N; only columns < t are read, so free-run simulation can
// pass the outputs simulated so far). Preconditions (checked by assert):
// max_lag <= t < u.cols(), y_hist.cols() >= t, z.size() ==
// lags.dimension(u.rows(), y_hist.rows()).
void FillNarxRegressor(const NarxLags& lags, const Eigen::MatrixXd& u,
                       const Eigen::MatrixXd& y_hist, int t,
                       Eigen::Ref<Eigen::VectorXd> z);

}  // namespace sparrow::core::data

#endif  // SPARROW_CORE_DATA_NARX_H_
