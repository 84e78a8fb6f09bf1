#include "core/data/narx.h"

#include <cassert>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/util/status_macros.h"

namespace sparrow::core::data {
namespace {

// Regressor matrices above this many entries (2 GiB of doubles) are refused
// with an error rather than left to fail allocation.
constexpr int64_t kMaxRegressorEntries = int64_t{1} << 28;

// "name(t)" or "name(t-k)".
std::string LaggedName(const std::string& name, int lag) {
  return lag == 0 ? absl::StrCat(name, "(t)")
                  : absl::StrCat(name, "(t-", lag, ")");
}

// The data's channel names, or u0, u1, ... when they are missing.
std::vector<std::string> ChannelNames(const std::vector<std::string>& names,
                                      int n, const char* prefix) {
  if (static_cast<int>(names.size()) == n) return names;
  std::vector<std::string> generated;
  for (int i = 0; i < n; ++i) generated.push_back(absl::StrCat(prefix, i));
  return generated;
}

}  // namespace

absl::Status ValidateNarxLags(const NarxLags& lags) {
  for (const auto& [name, value] :
       {std::pair<const char*, int>{"input_lags", lags.input_lags},
        std::pair<const char*, int>{"output_lags", lags.output_lags}}) {
    if (value < 0 || value > kMaxNarxLag) {
      return absl::InvalidArgumentError(
          absl::StrFormat("NARX %s = %d is out of range; it must be in [0, %d]",
                          name, value, kMaxNarxLag));
    }
  }
  if (lags.input_lags == 0 && lags.output_lags == 0 && !lags.feedthrough) {
    return absl::InvalidArgumentError(
        "NARX regressor is empty: input_lags and output_lags are 0 and "
        "feedthrough is off; enable feedthrough or use a positive lag");
  }
  return absl::OkStatus();
}

absl::StatusOr<TableData> BuildNarxRegressors(const SequenceData& data,
                                              const NarxLags& lags) {
  SPARROW_RETURN_IF_ERROR(ValidateNarxLags(lags));
  if (data.n_u < 0 || data.n_y < 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "NARX data needs at least one output channel (n_u = %d, n_y = %d)",
        data.n_u, data.n_y));
  }
  if (data.traces.empty()) {
    return absl::InvalidArgumentError("NARX data has no traces");
  }
  const int max_lag = lags.max_lag();
  const int64_t dimension =
      int64_t{data.n_u} * (lags.input_lags + (lags.feedthrough ? 1 : 0)) +
      int64_t{data.n_y} * lags.output_lags;
  if (dimension == 0) {
    return absl::InvalidArgumentError(
        "NARX regressor is empty: the data has no input channel and "
        "output_lags is 0");
  }
  int64_t num_samples = 0;
  for (size_t i = 0; i < data.traces.size(); ++i) {
    const Trace& trace = data.traces[i];
    if (trace.u.rows() != data.n_u || trace.y.rows() != data.n_y ||
        trace.u.cols() != trace.y.cols()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "trace %d has u of size %d × %d and y of size %d × %d; expected "
          "%d × N and %d × N",
          i, trace.u.rows(), trace.u.cols(), trace.y.rows(), trace.y.cols(),
          data.n_u, data.n_y));
    }
    if (trace.length() <= max_lag) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "NARX lag %d is longer than trace %d (%d samples): a trace needs at "
          "least max(input_lags, output_lags) + 1 = %d samples; use smaller "
          "lags or longer traces",
          max_lag, i, trace.length(), max_lag + 1));
    }
    num_samples += trace.length() - max_lag;
  }
  if (dimension * num_samples > kMaxRegressorEntries) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "NARX regressors would be %d × %d, more than %d entries; use smaller "
        "lags or less data",
        dimension, num_samples, kMaxRegressorEntries));
  }

  TableData table;
  table.x.resize(dimension, num_samples);
  table.y.resize(data.n_y, num_samples);
  Eigen::Index column = 0;
  for (const Trace& trace : data.traces) {
    for (int t = max_lag; t < trace.length(); ++t, ++column) {
      FillNarxRegressor(lags, trace.u, trace.y, t, table.x.col(column));
      table.y.col(column) = trace.y.col(t);
    }
  }

  const std::vector<std::string> u_names =
      ChannelNames(data.input_names, data.n_u, "u");
  const std::vector<std::string> y_names =
      ChannelNames(data.output_names, data.n_y, "y");
  table.input_names.reserve(dimension);
  for (int k = lags.feedthrough ? 0 : 1; k <= lags.input_lags; ++k) {
    for (const std::string& name : u_names) {
      table.input_names.push_back(LaggedName(name, k));
    }
  }
  for (int k = 1; k <= lags.output_lags; ++k) {
    for (const std::string& name : y_names) {
      table.input_names.push_back(LaggedName(name, k));
    }
  }
  table.output_names = y_names;
  return table;
}

void FillNarxRegressor(const NarxLags& lags, const Eigen::MatrixXd& u,
                       const Eigen::MatrixXd& y_hist, int t,
                       Eigen::Ref<Eigen::VectorXd> z) {
  const Eigen::Index n_u = u.rows();
  const Eigen::Index n_y = y_hist.rows();
  assert(t >= lags.max_lag() && t < u.cols() && t <= y_hist.cols());
  assert(z.size() ==
         lags.dimension(static_cast<int>(n_u), static_cast<int>(n_y)));
  Eigen::Index offset = 0;
  for (int k = lags.feedthrough ? 0 : 1; k <= lags.input_lags; ++k) {
    z.segment(offset, n_u) = u.col(t - k);
    offset += n_u;
  }
  for (int k = 1; k <= lags.output_lags; ++k) {
    z.segment(offset, n_y) = y_hist.col(t - k);
    offset += n_y;
  }
}

}  // namespace sparrow::core::data
