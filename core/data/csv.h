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
// Every selected value must be a finite decimal number. Missing values
// (empty field, NA, NaN, Inf, null, ...) are errors: Sparrow does not impute.
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

// A parsed numeric table. Each data row is one contiguous column of `values`.
struct CsvTable {
  // Unquoted column names, in file order (or selector order, see ParseCsv).
  std::vector<std::string> header;
  // columns × rows: values(c, r) is data row r (0-based, header excluded) of
  // column c.
  Eigen::MatrixXd values;

  int num_rows() const { return static_cast<int>(values.cols()); }
  int num_columns() const { return static_cast<int>(values.rows()); }
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

// Resolves column selectors against a header. A selector equal to a header
// name selects that column; otherwise a string of decimal digits is a 0-based
// column index. An unknown name, an index out of range or an empty selector is
// InvalidArgument listing the available columns.
absl::StatusOr<std::vector<int>> ResolveColumns(
    const std::vector<std::string>& header,
    const std::vector<std::string>& selectors);

}  // namespace sparrow::core::data

#endif  // SPARROW_CORE_DATA_CSV_H_
