// Parsing numeric CSV text into a column-major table. No I/O: the caller
// hands over the whole file as a buffer (the server reads it from its store,
// the CLI from disk).
//
// Accepted dialect (everything found in ../shared/data):
//   - one header row; names may be double-quoted ("uEst"), `""` escapes a
//     quote inside a quoted field; fields never span lines;
//   - LF or CRLF line ends, a leading UTF-8 byte-order mark, a missing final
//     newline, and blank lines at the end of the buffer;
//   - a trailing comma on a line (the MATLAB exports of nonlinearbenchmark.org
//     end every line, the header included, with one): a single empty last
//     field is dropped;
//   - spaces or tabs around fields.
// Every selected value must be a finite decimal number, except in columns read
// as categories (CsvOptions::categorical), which hold any text. Missing values
// (an empty field, NA, N/A, #N/A, NaN, null, none, nil, ?; case-insensitive)
// are errors unless CsvOptions::keep_missing turns them into NaN: Sparrow does
// not impute. Inf is never missing; it is an error.
//
// Numbers are converted with std::from_chars, so shortest round-trip decimals
// come back bit-exact. The parser is hand-written rather than taken from a CSV
// library because core links only Eigen and Abseil, and the dialect is small.
//
// Thread safety: all functions are pure and may be called concurrently.
#ifndef SPARROW_CORE_DATA_CSV_H_
#define SPARROW_CORE_DATA_CSV_H_

#include <string>
#include <string_view>
#include <vector>

#include "Eigen/Core"
#include "absl/status/statusor.h"

namespace sparrow::core::data {

// One selected column of the file and the rows of CsvTable::values that hold
// it: a numeric column is one row, a categorical column one 0/1 indicator row
// per level.
struct CsvColumn {
  std::string name;  // The file's (unquoted) header name.
  int first = 0;     // Its first row in CsvTable::values.
  bool categorical = false;
  // Categorical columns: the distinct non-missing values of the column over
  // every data row of the buffer, sorted (numerically when every level is a
  // number, so "2" < "10"; otherwise bytewise). Row first + k of
  // CsvTable::values is 1 where the value is levels[k], else 0.
  std::vector<std::string> levels;

  int width() const {
    return categorical ? static_cast<int>(levels.size()) : 1;
  }
};

// A parsed table. Each data row is one contiguous column of `values`.
struct CsvTable {
  // Unquoted column names, one per row of `values`, in file order (or
  // selector order, see ParseCsv). The indicator rows of a categorical
  // column are named "<column>=<level>".
  std::vector<std::string> header;
  // columns × rows: values(c, r) is data row r (0-based, header excluded) of
  // column c. NaN marks a missing value (only with CsvOptions::keep_missing;
  // a missing category is NaN in all its indicator rows).
  Eigen::MatrixXd values;
  // One entry per selector (per file column without selectors), in order.
  std::vector<CsvColumn> columns;

  int num_rows() const { return static_cast<int>(values.cols()); }
  int num_columns() const { return static_cast<int>(values.rows()); }
};

// What ParseCsv reads and how.
struct CsvOptions {
  // Column selectors as in ResolveColumns; empty = every column, in file
  // order.
  std::vector<std::string> columns;
  // Selectors of columns read as text and one-hot encoded (see CsvColumn).
  // Each must name a column that `columns` selects. Default: none.
  std::vector<std::string> categorical;
  // Missing values become NaN (see CsvTable::values) instead of errors, so
  // that the caller can drop those rows. Default false.
  bool keep_missing = false;
};

// Parses a CSV buffer with a header row and converts every column to double.
// Errors are InvalidArgument and name the 1-based file line and the column:
// empty buffer, header only (no data rows), a non-numeric value, a missing or
// non-finite value ("NA", "NaN", "Inf", empty field), a ragged row (says the
// expected and actual field counts), duplicate or empty header names, a blank
// line before the end of the buffer, an unterminated quote.
absl::StatusOr<CsvTable> ParseCsv(std::string_view buffer);

// As above, but converts only the columns named by `columns` (selectors as in
// ResolveColumns; empty = all columns, in file order). Column i of the result
// is selectors[i]: `header` holds the selected names in selector order, and a
// column selected twice appears twice. Values of unselected columns are not
// checked (so a file with a date or category column can be used as long as
// that column is not selected); every row must still have the header's number
// of fields. Parsing is linear in the buffer size.
// Note: a digit selector such as "3" means column 3 of the *file*; to find the
// roles in the result, use positions (selector i -> column i) or names, not
// the file's indices.
absl::StatusOr<CsvTable> ParseCsv(std::string_view buffer,
                                  const std::vector<std::string>& columns);

// As above, with categorical columns and missing values as `options` says.
// The levels of a categorical column come from the whole buffer, so every
// split cut from the table encodes a category the same way. Additional
// errors: a categorical selector that is unknown or not selected.
absl::StatusOr<CsvTable> ParseCsv(std::string_view buffer,
                                  const CsvOptions& options);

// The header and the number of data rows of a CSV buffer.
struct CsvShape {
  std::vector<std::string> header;
  int64_t rows = 0;
};

// Checks the structure of a CSV buffer as ParseCsv does (header, one field per
// column on every line, quotes, blank lines only at the end, at least one data
// row) without converting any value: what a stored dataset must satisfy, when
// each job later converts only the columns it selects (text columns, "NA" and
// empty cells elsewhere are fine). Linear in the buffer size.
absl::StatusOr<CsvShape> CheckCsvStructure(std::string_view buffer);

// The column names of the header line alone (same checks as ParseCsv: empty
// buffer, blank first line, empty or duplicate names). Linear in the header's
// length.
absl::StatusOr<std::vector<std::string>> ParseCsvHeader(
    std::string_view buffer);

// Resolves column selectors against a header. A selector equal to a header
// name selects that column; otherwise a string of decimal digits is a 0-based
// column index. An unknown name, an index out of range or an empty selector is
// InvalidArgument listing the available columns.
absl::StatusOr<std::vector<int>> ResolveColumns(
    const std::vector<std::string>& header,
    const std::vector<std::string>& selectors);

}  // namespace sparrow::core::data

#endif  // SPARROW_CORE_DATA_CSV_H_
