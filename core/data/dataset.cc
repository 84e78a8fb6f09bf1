#include "core/data/dataset.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "core/util/random.h"
#include "core/util/status_macros.h"

namespace sparrow::core::data {
namespace {

// Checks that the input and output columns exist, are not empty, and that no
// column is used twice: a column both input and output would leak the target
// into the regressor.
absl::Status ValidateColumns(const CsvTable& table,
                             const std::vector<int>& input_cols,
                             const std::vector<int>& output_cols) {
  if (input_cols.empty()) {
    return absl::InvalidArgumentError(
        "no input columns; select at least one input column");
  }
  if (output_cols.empty()) {
    return absl::InvalidArgumentError(
        "no output columns; select at least one output column");
  }
  const int num_columns = table.num_columns();
  enum Role : char { kNone, kInput, kOutput };
  std::vector<Role> roles(num_columns, kNone);
  for (const Role role : {kInput, kOutput}) {
    const char* role_name = role == kInput ? "input" : "output";
    for (const int c : role == kInput ? input_cols : output_cols) {
      if (c < 0 || c >= num_columns) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s column index %d is out of range: the table has %d columns "
            "(indices 0 to %d)",
            role_name, c, num_columns, num_columns - 1));
      }
      if (roles[c] == role) {
        return absl::InvalidArgumentError(
            absl::StrFormat("column '%s' is listed twice among the %ss",
                            table.header[c], role_name));
      }
      if (roles[c] != kNone) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "column '%s' is both an input and an output; a model may not see "
            "its own target",
            table.header[c]));
      }
      roles[c] = role;
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateNonEmptyRanges(const std::vector<RowRange>& ranges,
                                    int64_t num_rows) {
  if (ranges.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "no row ranges given; use {1, %d} for all rows of the table",
        num_rows));
  }
  return ValidateRanges(ranges, num_rows, "ranges");
}

std::vector<std::string> ColumnNames(const CsvTable& table,
                                     const std::vector<int>& cols) {
  std::vector<std::string> names;
  names.reserve(cols.size());
  for (const int c : cols) names.push_back(table.header[c]);
  return names;
}

// The block of `table` with channels `cols` and 1-based rows first..last.
Eigen::MatrixXd Block(const CsvTable& table, const std::vector<int>& cols,
                      int64_t first, int64_t last) {
  return table.values(cols, Eigen::seqN(first - 1, last - first + 1));
}

}  // namespace

int64_t SequenceData::total_samples() const {
  int64_t total = 0;
  for (const Trace& trace : traces) total += trace.length();
  return total;
}

absl::Status ValidateRanges(const std::vector<RowRange>& ranges,
                            int64_t num_rows, std::string_view what) {
  for (size_t i = 0; i < ranges.size(); ++i) {
    const RowRange& r = ranges[i];
    const std::string name =
        absl::StrFormat("%s[%d] = rows %d..%d", what, i, r.first, r.last);
    if (r.first < 1) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: first must be at least 1 (data rows are numbered from 1, the "
          "header is not counted)",
          name));
    }
    if (r.last < r.first) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: last is before first, so the range holds no data; both ends "
          "are included, so a single row is {%d, %d}",
          name, r.first, r.first));
    }
    if (r.last > num_rows) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: last exceeds the table, which has %d data rows (1 to %d)", name,
          num_rows, num_rows));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<SequenceData> MakeSequences(
    const CsvTable& table, const std::vector<int>& input_cols,
    const std::vector<int>& output_cols, const std::vector<RowRange>& ranges,
    int trace_column, const std::vector<int64_t>& trace_starts) {
  SPARROW_RETURN_IF_ERROR(ValidateColumns(table, input_cols, output_cols));
  const int64_t num_rows = table.num_rows();
  SPARROW_RETURN_IF_ERROR(ValidateNonEmptyRanges(ranges, num_rows));
  if (trace_column != -1 && !trace_starts.empty()) {
    return absl::InvalidArgumentError(
        "trace boundaries are given both by a trace column and by trace "
        "starts; give one of them");
  }
  if (trace_column < -1 || trace_column >= table.num_columns()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "trace column index %d is out of range: the table has %d columns "
        "(indices 0 to %d; -1 = no trace column)",
        trace_column, table.num_columns(), table.num_columns() - 1));
  }
  // is_start[r] for 1-based row r.
  std::vector<bool> is_start(num_rows + 1, false);
  for (size_t i = 0; i < trace_starts.size(); ++i) {
    const int64_t row = trace_starts[i];
    if (row < 1 || row > num_rows) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "trace_starts[%d] = %d is outside the table's data rows 1 to %d", i,
          row, num_rows));
    }
    is_start[row] = true;
  }
  const auto starts_trace = [&](int64_t row) {
    if (trace_column >= 0) {
      return table.values(trace_column, row - 1) !=
             table.values(trace_column, row - 2);
    }
    return static_cast<bool>(is_start[row]);
  };

  SequenceData data;
  data.n_u = static_cast<int>(input_cols.size());
  data.n_y = static_cast<int>(output_cols.size());
  data.input_names = ColumnNames(table, input_cols);
  data.output_names = ColumnNames(table, output_cols);
  for (size_t k = 0; k < ranges.size(); ++k) {
    const RowRange& range = ranges[k];
    int64_t first = range.first;
    for (int64_t row = range.first; row <= range.last; ++row) {
      if (row != range.last && !starts_trace(row + 1)) continue;
      // Rows first..row form one trace.
      if (row - first + 1 < 2) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "the trace at rows %d..%d (in ranges[%d] = rows %d..%d) has 1 "
            "sample, but a trace needs at least 2; check the trace boundaries "
            "(%s) and the range ends",
            first, row, k, range.first, range.last,
            trace_column >= 0
                ? absl::StrFormat("trace column '%s'",
                                  table.header[trace_column])
                : std::string(trace_starts.empty() ? "none" : "trace_starts")));
      }
      Trace trace;
      trace.u = Block(table, input_cols, first, row);
      trace.y = Block(table, output_cols, first, row);
      data.traces.push_back(std::move(trace));
      first = row + 1;
    }
  }
  return data;
}

absl::StatusOr<TableData> MakeTable(const CsvTable& table,
                                    const std::vector<int>& input_cols,
                                    const std::vector<int>& output_cols,
                                    const std::vector<RowRange>& ranges) {
  SPARROW_RETURN_IF_ERROR(ValidateColumns(table, input_cols, output_cols));
  SPARROW_RETURN_IF_ERROR(ValidateNonEmptyRanges(ranges, table.num_rows()));
  int64_t num_samples = 0;
  for (const RowRange& range : ranges) {
    num_samples += range.last - range.first + 1;
  }
  if (num_samples > std::numeric_limits<int>::max()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the ranges select %d rows in total, more than the supported %d",
        num_samples, std::numeric_limits<int>::max()));
  }
  TableData data;
  data.input_names = ColumnNames(table, input_cols);
  data.output_names = ColumnNames(table, output_cols);
  data.x.resize(static_cast<Eigen::Index>(input_cols.size()), num_samples);
  data.y.resize(static_cast<Eigen::Index>(output_cols.size()), num_samples);
  int64_t offset = 0;
  for (const RowRange& range : ranges) {
    const int64_t length = range.last - range.first + 1;
    data.x.middleCols(offset, length) =
        Block(table, input_cols, range.first, range.last);
    data.y.middleCols(offset, length) =
        Block(table, output_cols, range.first, range.last);
    offset += length;
  }
  return data;
}

std::vector<int64_t> RowsOf(const std::vector<RowRange>& ranges) {
  std::vector<int64_t> rows;
  for (const RowRange& range : ranges) {
    for (int64_t row = range.first; row <= range.last; ++row) {
      rows.push_back(row);
    }
  }
  return rows;
}

std::vector<int64_t> CompleteRows(const CsvTable& table) {
  std::vector<int64_t> rows;
  rows.reserve(table.num_rows());
  for (Eigen::Index r = 0; r < table.values.cols(); ++r) {
    // NaN is the only value that fails x == x.
    if ((table.values.col(r).array() == table.values.col(r).array()).all()) {
      rows.push_back(r + 1);
    }
  }
  return rows;
}

absl::StatusOr<RowSplit> RandomSplit(std::vector<int64_t> rows,
                                     double validation_fraction,
                                     double test_fraction, uint64_t seed,
                                     std::string_view what) {
  const int64_t n = static_cast<int64_t>(rows.size());
  int64_t count[2] = {0, 0};  // validation, test
  const double fractions[2] = {validation_fraction, test_fraction};
  const char* names[2] = {"validation_fraction", "test_fraction"};
  for (int k = 0; k < 2; ++k) {
    const double f = fractions[k];
    if (!(f >= 0.0 && f < 1.0)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s.%s is %g; it must be in [0, 1)", what, names[k], f));
    }
    count[k] = std::llround(f * static_cast<double>(n));
    if (f > 0.0 && count[k] == 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s.%s is %g, which of %d rows is no row; use a larger fraction",
          what, names[k], f, n));
    }
  }
  if (count[0] + count[1] >= n) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s.validation_fraction %g and %s.test_fraction %g hold out %d of %d "
        "rows, leaving none for training",
        what, validation_fraction, what, test_fraction, count[0] + count[1],
        n));
  }
  Rng(seed).Shuffle(&rows);
  RowSplit split;
  const auto begin = rows.begin();
  const int64_t train_end = n - count[0] - count[1];
  split.train.assign(begin, begin + train_end);
  split.validation.assign(begin + train_end, begin + train_end + count[0]);
  split.test.assign(begin + train_end + count[0], rows.end());
  return split;
}

absl::StatusOr<TableData> MakeTableFromRows(const CsvTable& table,
                                            const std::vector<int>& input_cols,
                                            const std::vector<int>& output_cols,
                                            const std::vector<int64_t>& rows) {
  SPARROW_RETURN_IF_ERROR(ValidateColumns(table, input_cols, output_cols));
  if (rows.empty()) {
    return absl::InvalidArgumentError("no rows given; a table needs a row");
  }
  if (rows.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%d rows requested, more than the supported %d",
                        rows.size(), std::numeric_limits<int>::max()));
  }
  std::vector<Eigen::Index> columns;
  columns.reserve(rows.size());
  for (const int64_t row : rows) {
    if (row < 1 || row > table.num_rows()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("row %d is outside the table's data rows 1 to %d",
                          row, table.num_rows()));
    }
    columns.push_back(static_cast<Eigen::Index>(row - 1));
  }
  TableData data;
  data.input_names = ColumnNames(table, input_cols);
  data.output_names = ColumnNames(table, output_cols);
  data.x = table.values(input_cols, columns);
  data.y = table.values(output_cols, columns);
  return data;
}

std::vector<Trace> Subsequences(const std::vector<Trace>& traces, int warmup,
                                int length, int stride,
                                std::vector<WindowOrigin>* origins) {
  std::vector<Trace> out;
  if (origins != nullptr) origins->clear();
  for (size_t i = 0; i < traces.size(); ++i) {
    const Trace& t = traces[i];
    const int64_t n = t.length();
    for (int64_t s = warmup; s + 2 <= n; s += stride) {
      const int64_t first = s - warmup;
      const int64_t size = std::min<int64_t>(s + length, n) - first;
      out.push_back({t.u.middleCols(first, size), t.y.middleCols(first, size)});
      if (origins != nullptr) origins->push_back({static_cast<int>(i), s});
    }
  }
  return out;
}

}  // namespace sparrow::core::data
