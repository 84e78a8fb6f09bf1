// Training data cut out of a CsvTable: sequences (multi-trace input/output
// records for dynamical models) and tables (independent samples for static
// models). Samples are columns everywhere in core.
//
// Thread safety: plain structs and pure functions.
#ifndef SPARROW_CORE_DATA_DATASET_H_
#define SPARROW_CORE_DATA_DATASET_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "Eigen/Core"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/data/csv.h"

namespace sparrow::core::data {

// Rows first..last of a table: 1-based data rows (the header is not counted),
// both ends included. {1, 1024} is the whole Cascaded Tanks record.
struct RowRange {
  int64_t first = 0;
  int64_t last = 0;
};

// One contiguous record of a dynamical system.
struct Trace {
  Eigen::MatrixXd u;  // n_u × N inputs, column t = sample t.
  Eigen::MatrixXd y;  // n_y × N outputs.

  int length() const { return static_cast<int>(u.cols()); }
};

// Subsequences of the traces (SUBNET's practice for long records): each trace
// of N samples gives the windows [s - warmup, min(s + length, N)) for s =
// warmup, warmup + stride, ... while at least 2 samples follow the warmup
// part, which an encoder reads to give the window's initial state (0 for a
// free initial state). With stride = length the predicted parts tile each
// trace. Requires length >= 2 and stride >= 1. `origins`, when not null,
// receives where each window's predicted part starts.
struct WindowOrigin {
  int trace = 0;      // index into `traces`
  int64_t start = 0;  // sample s of that trace
};
std::vector<Trace> Subsequences(const std::vector<Trace>& traces, int warmup,
                                int length, int stride,
                                std::vector<WindowOrigin>* origins = nullptr);

// Several traces of the same system (same channels).
struct SequenceData {
  std::vector<Trace> traces;
  int n_u = 0;
  int n_y = 0;
  std::vector<std::string> input_names;   // n_u column names.
  std::vector<std::string> output_names;  // n_y column names.

  // Sum of the trace lengths.
  int64_t total_samples() const;
};

// Independent samples: column j of x is the input of sample j, column j of y
// its target.
struct TableData {
  Eigen::MatrixXd x;                      // n_in × M.
  Eigen::MatrixXd y;                      // n_out × M.
  std::vector<std::string> input_names;   // n_in names.
  std::vector<std::string> output_names;  // n_out names.
  // Image data (IDX files, image datasets): each column of x is one image,
  // channel-major (channels x height x width); all 0 for other tables.
  int image_channels = 0, image_height = 0, image_width = 0;

  int num_samples() const { return static_cast<int>(x.cols()); }
};

// Checks every range against a table of `num_rows` data rows: first >= 1,
// last >= first, last <= num_rows. An empty list is valid. Errors are
// InvalidArgument naming the range as `what`[i] (e.g. "split.train[1]"), its
// bounds and the table size.
absl::Status ValidateRanges(const std::vector<RowRange>& ranges,
                            int64_t num_rows, std::string_view what);

// Cuts sequences out of `table`: one trace per range, further cut at trace
// boundaries inside the range. Boundaries come from `trace_column` (a column
// index of `table`; a new trace starts wherever its value differs from the
// previous row's) or from `trace_starts` (1-based data rows where a trace
// begins; order does not matter); pass -1 and {} for neither. Giving both is an
// error. Traces are returned in range order, then row order.
//
// Errors (InvalidArgument): no ranges, an invalid range, no input or no output
// column, a column index out of range, a column used twice or as both input
// and output, a trace start outside the table, and a trace shorter than 2
// samples (named by its rows).
absl::StatusOr<SequenceData> MakeSequences(
    const CsvTable& table, const std::vector<int>& input_cols,
    const std::vector<int>& output_cols, const std::vector<RowRange>& ranges,
    int trace_column, const std::vector<int64_t>& trace_starts);

// Builds a table from the rows of all ranges, concatenated in range order.
// Same column and range errors as MakeSequences.
absl::StatusOr<TableData> MakeTable(const CsvTable& table,
                                    const std::vector<int>& input_cols,
                                    const std::vector<int>& output_cols,
                                    const std::vector<RowRange>& ranges);

// The 1-based rows of all ranges, in range order (no checks).
std::vector<int64_t> RowsOf(const std::vector<RowRange>& ranges);

// The 1-based rows of `table` without a missing value (NaN, see
// CsvOptions::keep_missing) in any column, ascending.
std::vector<int64_t> CompleteRows(const CsvTable& table);

// Rows of a table dealt into splits; 1-based row numbers.
struct RowSplit {
  std::vector<int64_t> train, validation, test;
};

// A random split of `rows`: they are permuted by core::Rng(seed) (the same
// permutation on every platform), the last round(test_fraction * n) go to
// `test`, the round(validation_fraction * n) before them to `validation`, and
// the rest to `train`; each split keeps the permuted order. The fractions are
// in [0, 1). Errors (InvalidArgument, the fields named `what`.test_fraction
// and `what`.validation_fraction): a fraction out of range, a nonzero
// fraction that rounds to no row, or no row left for training.
absl::StatusOr<RowSplit> RandomSplit(std::vector<int64_t> rows,
                                     double validation_fraction,
                                     double test_fraction, uint64_t seed,
                                     std::string_view what);

// Builds a table from the given 1-based rows, in the order given (a row may
// repeat). Same column errors as MakeTable; no rows, or a row outside the
// table, is InvalidArgument.
absl::StatusOr<TableData> MakeTableFromRows(const CsvTable& table,
                                            const std::vector<int>& input_cols,
                                            const std::vector<int>& output_cols,
                                            const std::vector<int64_t>& rows);

}  // namespace sparrow::core::data

#endif  // SPARROW_CORE_DATA_DATASET_H_
