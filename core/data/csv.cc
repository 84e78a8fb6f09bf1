#include "core/data/csv.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/util/status_macros.h"

namespace sparrow::core::data {
namespace {

constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";

// Error messages quote offending values; cap their length so a corrupt line
// of megabytes does not end up in a status message.
constexpr size_t kMaxQuotedValue = 40;
// At most this many column names are listed in an error message.
constexpr size_t kMaxListedColumns = 40;

bool IsSpace(char c) { return c == ' ' || c == '\t'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

bool IsBlank(std::string_view line) {
  return std::all_of(line.begin(), line.end(),
                     [](char c) { return IsSpace(c) || c == '\r'; });
}

// `value` in single quotes, shortened if long.
std::string Quote(std::string_view value) {
  if (value.size() <= kMaxQuotedValue) return absl::StrFormat("'%s'", value);
  return absl::StrFormat("'%s...' (%d characters)",
                         value.substr(0, kMaxQuotedValue), value.size());
}

// Yields the lines of a buffer without their LF / CRLF ends, numbered from 1.
class LineReader {
 public:
  explicit LineReader(std::string_view buffer) : rest_(buffer) {}

  // Returns false at the end of the buffer. A final line without a newline is
  // still a line; an empty remainder after the last newline is not.
  bool Next(std::string_view* line) {
    if (rest_.empty()) return false;
    const size_t end = rest_.find('\n');
    if (end == std::string_view::npos) {
      *line = rest_;
      rest_ = {};
    } else {
      *line = rest_.substr(0, end);
      rest_.remove_prefix(end + 1);
    }
    if (!line->empty() && line->back() == '\r') line->remove_suffix(1);
    ++number_;
    return true;
  }
  int64_t number() const { return number_; }

 private:
  std::string_view rest_;
  int64_t number_ = 0;
};

// One field of a line. For a quoted field `text` is the content between the
// quotes with `""` escapes still in place; otherwise it is the trimmed text.
struct Field {
  std::string_view text;
  bool quoted = false;
};

// Splits `line` at commas outside double quotes into `fields` (cleared first).
absl::Status SplitFields(std::string_view line, int64_t line_number,
                         std::vector<Field>* fields) {
  fields->clear();
  // Fast path: the numeric files have no quotes on their data lines.
  if (line.find('"') == std::string_view::npos) {
    size_t start = 0;
    while (true) {
      const size_t comma = line.find(',', start);
      if (comma == std::string_view::npos) {
        fields->push_back({Trim(line.substr(start)), false});
        return absl::OkStatus();
      }
      fields->push_back({Trim(line.substr(start, comma - start)), false});
      start = comma + 1;
    }
  }
  size_t pos = 0;
  while (true) {
    while (pos < line.size() && IsSpace(line[pos])) ++pos;
    Field field;
    if (pos < line.size() && line[pos] == '"') {
      const size_t open = pos++;
      bool closed = false;
      while (pos < line.size()) {
        if (line[pos] == '"') {
          if (pos + 1 < line.size() && line[pos + 1] == '"') {
            pos += 2;  // An escaped quote.
            continue;
          }
          closed = true;
          break;
        }
        ++pos;
      }
      if (!closed) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "line %d: field %d has an opening quote (column %d of the line) "
            "but no closing quote; fields may not span lines",
            line_number, fields->size() + 1, open + 1));
      }
      field = {line.substr(open + 1, pos - open - 1), true};
      ++pos;  // Past the closing quote.
      while (pos < line.size() && IsSpace(line[pos])) ++pos;
      if (pos < line.size() && line[pos] != ',') {
        return absl::InvalidArgumentError(absl::StrFormat(
            "line %d: unexpected text %s after the closing quote of field %d; "
            "quote the whole field",
            line_number, Quote(line.substr(pos)), fields->size() + 1));
      }
    } else {
      const size_t comma = std::min(line.find(',', pos), line.size());
      field = {Trim(line.substr(pos, comma - pos)), false};
      pos = comma;
    }
    fields->push_back(field);
    if (pos >= line.size()) return absl::OkStatus();
    ++pos;  // Past the comma.
  }
}

// The field's text with quote escapes resolved.
std::string Unescape(const Field& field) {
  if (!field.quoted) return std::string(field.text);
  std::string out;
  out.reserve(field.text.size());
  for (size_t i = 0; i < field.text.size(); ++i) {
    out.push_back(field.text[i]);
    if (field.text[i] == '"') ++i;  // `""` -> `"`.
  }
  return out;
}

// Drops the empty field a trailing comma leaves at the end of a line.
void DropTrailingEmptyField(std::vector<Field>* fields) {
  if (fields->size() > 1 && !fields->back().quoted &&
      fields->back().text.empty()) {
    fields->pop_back();
  }
}

// absl::EqualsIgnoreCase takes absl::string_view, which Debian's Abseil does
// not alias to std::string_view.
bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return absl::ascii_tolower(static_cast<unsigned char>(x)) ==
                  absl::ascii_tolower(static_cast<unsigned char>(y));
         });
}

bool IsMissingToken(std::string_view text) {
  static constexpr std::string_view kTokens[] = {
      "na", "n/a", "#n/a", "nan", "-nan", "+nan", "null", "none", "nil", "?"};
  for (std::string_view token : kTokens) {
    if (EqualsIgnoreCase(text, token)) return true;
  }
  return false;
}

// Whether an out-of-range decimal is too small (rather than too large) for a
// double: a negative exponent, or no exponent and a zero integer part.
bool IsUnderflow(std::string_view text) {
  const size_t e = text.find_first_of("eE");
  if (e != std::string_view::npos) {
    return e + 1 < text.size() && text[e + 1] == '-';
  }
  const std::string_view integer_part = text.substr(0, text.find('.'));
  return integer_part.find_first_of("123456789") == std::string_view::npos;
}

absl::Status MissingValueError(int64_t line_number, std::string_view column,
                               std::string_view text) {
  return absl::InvalidArgumentError(absl::StrFormat(
      "line %d, column '%s': missing value %s; Sparrow does not impute "
      "missing values: drop or fill those rows, or leave the column out",
      line_number, column,
      text.empty() ? std::string("(empty field)") : Quote(text)));
}

// Converts one field to a finite double or explains why it is not one. With
// `keep_missing`, a missing value becomes NaN.
absl::Status ParseValue(const Field& field, int64_t line_number,
                        std::string_view column, bool keep_missing,
                        double* value) {
  std::string_view text = field.quoted ? Trim(field.text) : field.text;
  if (text.empty() || (keep_missing && IsMissingToken(text))) {
    if (!keep_missing) return MissingValueError(line_number, column, text);
    *value = std::numeric_limits<double>::quiet_NaN();
    return absl::OkStatus();
  }
  std::string_view digits = text;
  // std::from_chars rejects a leading '+'.
  if (digits.size() > 1 && digits[0] == '+' && digits[1] != '+' &&
      digits[1] != '-') {
    digits.remove_prefix(1);
  }
  const char* end = digits.data() + digits.size();
  const auto [ptr, ec] = std::from_chars(digits.data(), end, *value);
  if (ptr == end && ec == std::errc::result_out_of_range) {
    if (IsUnderflow(digits)) {
      *value = digits[0] == '-' ? -0.0 : 0.0;
      return absl::OkStatus();
    }
    return absl::InvalidArgumentError(absl::StrFormat(
        "line %d, column '%s': value %s is outside the range of a double",
        line_number, column, Quote(text)));
  }
  if (ptr == end && ec == std::errc() && std::isfinite(*value)) {
    return absl::OkStatus();
  }
  if ((ptr == end && ec == std::errc() && std::isnan(*value)) ||
      IsMissingToken(text)) {
    if (keep_missing) {
      *value = std::numeric_limits<double>::quiet_NaN();
      return absl::OkStatus();
    }
    return MissingValueError(line_number, column, text);
  }
  if (ptr == end && ec == std::errc()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "line %d, column '%s': non-finite value %s; all values must be finite",
        line_number, column, Quote(text)));
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "line %d, column '%s': %s is not a number; only numeric columns can be "
      "used: leave the column out or encode it as numbers",
      line_number, column, Quote(text)));
}

// The distinct values of one categorical file column, and each row's.
struct Categories {
  std::unordered_map<std::string, int> ids;  // value -> id, first seen first
  std::vector<std::string> names;            // id -> value
  std::vector<int> codes;                    // row -> id, -1 = missing
};

// Records the category of one field (or a missing value, with
// `keep_missing`). Quoted values are kept as written, quotes resolved.
absl::Status ParseCategory(const Field& field, int64_t line_number,
                           std::string_view column, bool keep_missing,
                           Categories* categories) {
  const std::string_view trimmed = Trim(field.text);
  if (trimmed.empty() || IsMissingToken(trimmed)) {
    if (!keep_missing) return MissingValueError(line_number, column, trimmed);
    categories->codes.push_back(-1);
    return absl::OkStatus();
  }
  std::string value = Unescape(field);
  const auto [it, inserted] = categories->ids.emplace(
      std::move(value), static_cast<int>(categories->names.size()));
  if (inserted) categories->names.push_back(it->first);
  categories->codes.push_back(it->second);
  return absl::OkStatus();
}

// A finite decimal number, as ParseValue reads it.
bool IsNumber(std::string_view text, double* value) {
  if (text.size() > 1 && text[0] == '+' && text[1] != '+' && text[1] != '-') {
    text.remove_prefix(1);
  }
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, *value);
  return ptr == end && ec == std::errc() && std::isfinite(*value);
}

// rank[id] = the position of category `id` among the sorted levels, which
// are stored in `levels`: numerically when every level is a number (ties
// bytewise, so "1" and "1.0" stay distinct), otherwise bytewise.
std::vector<int> SortLevels(const Categories& categories,
                            std::vector<std::string>* levels) {
  const std::vector<std::string>& names = categories.names;
  std::vector<double> numbers(names.size());
  bool numeric = true;
  for (size_t i = 0; i < names.size() && numeric; ++i) {
    numeric = IsNumber(Trim(names[i]), &numbers[i]);
  }
  std::vector<int> order(names.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    if (numeric && numbers[a] != numbers[b]) return numbers[a] < numbers[b];
    return names[a] < names[b];
  });
  std::vector<int> rank(names.size());
  levels->clear();
  for (size_t k = 0; k < order.size(); ++k) {
    rank[order[k]] = static_cast<int>(k);
    levels->push_back(names[order[k]]);
  }
  return rank;
}

// "'a', 'b', 'c'", shortened for very wide tables.
std::string ListColumns(const std::vector<std::string>& header) {
  std::string out;
  const size_t listed = std::min(header.size(), kMaxListedColumns);
  for (size_t i = 0; i < listed; ++i) {
    absl::StrAppend(&out, i == 0 ? "" : ", ", "'", header[i], "'");
  }
  if (listed < header.size()) {
    absl::StrAppend(&out, ", ... (", header.size() - listed, " more)");
  }
  return out;
}

// Parses and checks the header line.
absl::StatusOr<std::vector<std::string>> ParseHeader(
    std::string_view line, std::vector<Field>* fields) {
  if (line.find('\r') != std::string_view::npos) {
    return absl::InvalidArgumentError(
        "line 1: the header contains a carriage return that does not end the "
        "line; CR-only line ends are not supported, use LF or CRLF");
  }
  SPARROW_RETURN_IF_ERROR(SplitFields(line, 1, fields));
  DropTrailingEmptyField(fields);
  std::vector<std::string> header;
  header.reserve(fields->size());
  std::unordered_map<std::string, int> index;
  for (const Field& field : *fields) {
    std::string name = Unescape(field);
    const int column = static_cast<int>(header.size());
    if (name.empty()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "line 1: the name of column index %d is empty; every column needs "
          "a name",
          column));
    }
    const auto [it, inserted] = index.emplace(name, column);
    if (!inserted) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "line 1: duplicate column name '%s' (column indices %d and %d); "
          "column names must be unique",
          name, it->second, column));
    }
    header.push_back(std::move(name));
  }
  return header;
}

std::string_view StripBom(std::string_view buffer) {
  if (buffer.substr(0, kUtf8Bom.size()) == kUtf8Bom) {
    buffer.remove_prefix(kUtf8Bom.size());
  }
  return buffer;
}

// Reads and checks the header, the first line of `lines` (which reads
// `buffer`, its byte-order mark removed).
absl::StatusOr<std::vector<std::string>> ReadHeader(
    std::string_view buffer, LineReader* lines, std::vector<Field>* fields) {
  if (std::all_of(buffer.begin(), buffer.end(), [](char c) {
        return IsSpace(c) || c == '\r' || c == '\n';
      })) {
    return absl::InvalidArgumentError(
        "the CSV buffer is empty; expected a header line followed by data "
        "lines");
  }
  std::string_view line;
  lines->Next(&line);
  if (IsBlank(line)) {
    return absl::InvalidArgumentError(
        "line 1 is blank; the first line must be the header with the column "
        "names");
  }
  return ParseHeader(line, fields);
}

// Which file columns ParseCsv reads, and how.
struct ColumnPlan {
  std::vector<int> selected;  // The selected file columns, in output order.
  // slot[c] >= 0: file column c is categorical, its categories are
  // categories[slot[c]].
  std::vector<int> slot;
  std::vector<int> categorical_columns;  // File columns, by slot.
  std::vector<int> numeric;  // The selected numeric columns, in order.
};

absl::StatusOr<ColumnPlan> PlanColumns(const std::vector<std::string>& header,
                                       const CsvOptions& options) {
  ColumnPlan plan;
  if (options.columns.empty()) {
    plan.selected.resize(header.size());
    for (size_t c = 0; c < header.size(); ++c)
      plan.selected[c] = static_cast<int>(c);
  } else {
    SPARROW_ASSIGN_OR_RETURN(plan.selected,
                             ResolveColumns(header, options.columns));
  }
  plan.slot.assign(header.size(), -1);
  SPARROW_ASSIGN_OR_RETURN(std::vector<int> categorical,
                           ResolveColumns(header, options.categorical));
  for (const int c : categorical) {
    if (std::find(plan.selected.begin(), plan.selected.end(), c) ==
        plan.selected.end()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "categorical column '%s' is not among the selected columns; select "
          "it as well",
          header[c]));
    }
    if (plan.slot[c] < 0) {
      plan.slot[c] = static_cast<int>(plan.categorical_columns.size());
      plan.categorical_columns.push_back(c);
    }
  }
  for (const int c : plan.selected) {
    if (plan.slot[c] < 0) plan.numeric.push_back(c);
  }
  return plan;
}

// What the data lines hold: `values` has the numeric columns of each row, one
// row after another; `categories` the categorical columns.
struct ParsedRows {
  std::vector<double> values;
  std::vector<Categories> categories;
  int64_t num_rows = 0;
};

// A data line must have one field per header column.
absl::Status CheckFieldCount(const std::vector<Field>& fields,
                             const std::vector<std::string>& header,
                             int64_t line_number) {
  const size_t num_fields = header.size();
  if (fields.size() == num_fields) return absl::OkStatus();
  const bool short_row = fields.size() < num_fields;
  return absl::InvalidArgumentError(absl::StrFormat(
      "line %d: expected %d fields (one per header column), got %d; %s",
      line_number, num_fields, fields.size(),
      short_row ? absl::StrCat("column '", header[fields.size()],
                               "' and later ones are missing")
                : absl::StrCat("extra fields after the last column '",
                               header.back(), "'")));
}

// Reads the data lines that follow the header.
absl::StatusOr<ParsedRows> ReadRows(std::string_view buffer, LineReader* lines,
                                    const std::vector<std::string>& header,
                                    const ColumnPlan& plan,
                                    const CsvOptions& options,
                                    std::vector<Field>* fields) {
  ParsedRows rows;
  rows.categories.resize(plan.categorical_columns.size());
  // One data row per line at most: reserving avoids regrowth on big files.
  rows.values.reserve(
      plan.numeric.size() *
      static_cast<size_t>(std::count(buffer.begin(), buffer.end(), '\n') + 1));
  int64_t first_blank_line = 0;
  std::string_view line;
  while (lines->Next(&line)) {
    if (IsBlank(line)) {
      if (first_blank_line == 0) first_blank_line = lines->number();
      continue;
    }
    if (first_blank_line != 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "line %d is blank but line %d has data; blank lines are only "
          "allowed at the end of the file",
          first_blank_line, lines->number()));
    }
    SPARROW_RETURN_IF_ERROR(SplitFields(line, lines->number(), fields));
    if (fields->size() == header.size() + 1) DropTrailingEmptyField(fields);
    SPARROW_RETURN_IF_ERROR(CheckFieldCount(*fields, header, lines->number()));
    for (const int c : plan.numeric) {
      double value = 0.0;
      SPARROW_RETURN_IF_ERROR(ParseValue((*fields)[c], lines->number(),
                                         header[c], options.keep_missing,
                                         &value));
      rows.values.push_back(value);
    }
    for (size_t k = 0; k < plan.categorical_columns.size(); ++k) {
      const int c = plan.categorical_columns[k];
      SPARROW_RETURN_IF_ERROR(ParseCategory((*fields)[c], lines->number(),
                                            header[c], options.keep_missing,
                                            &rows.categories[k]));
    }
    ++rows.num_rows;
  }
  if (rows.num_rows == 0) {
    return absl::InvalidArgumentError(
        "the CSV buffer has a header (line 1) but no data rows");
  }
  return rows;
}

// The table's columns and header when a categorical column has one output
// row per level (its levels sorted by SortLevels); returns the table's width.
int DescribeColumns(const std::vector<std::string>& header,
                    const ColumnPlan& plan,
                    const std::vector<std::vector<std::string>>& levels,
                    CsvTable* table) {
  int width = 0;
  for (const int c : plan.selected) {
    CsvColumn column;
    column.name = header[c];
    column.first = width;
    if (plan.slot[c] >= 0) {
      column.categorical = true;
      column.levels = levels[plan.slot[c]];
      for (const std::string& level : column.levels) {
        table->header.push_back(absl::StrCat(column.name, "=", level));
      }
    } else {
      table->header.push_back(column.name);
    }
    width += column.width();
    table->columns.push_back(std::move(column));
  }
  return width;
}

// The table of the parsed rows: numeric columns as they are, categorical ones
// one-hot encoded.
CsvTable BuildTable(const std::vector<std::string>& header,
                    const ColumnPlan& plan, const ParsedRows& rows) {
  // `values` holds the rows one after another: a column-major matrix with one
  // data row per column.
  const int64_t num_rows = rows.num_rows;
  const Eigen::Map<const Eigen::MatrixXd> parsed(
      rows.values.data(), static_cast<Eigen::Index>(plan.numeric.size()),
      num_rows);
  CsvTable table;
  if (plan.categorical_columns.empty()) {
    table.values = parsed;
    for (const int c : plan.selected) {
      CsvColumn column;
      column.name = header[c];
      column.first = static_cast<int>(table.columns.size());
      table.columns.push_back(std::move(column));
      table.header.push_back(header[c]);
    }
    return table;
  }
  const size_t num_categorical = plan.categorical_columns.size();
  std::vector<std::vector<std::string>> levels(num_categorical);
  std::vector<std::vector<int>> ranks(num_categorical);
  for (size_t k = 0; k < num_categorical; ++k) {
    ranks[k] = SortLevels(rows.categories[k], &levels[k]);
  }
  const int width = DescribeColumns(header, plan, levels, &table);
  table.values.setZero(width, num_rows);
  int next_numeric = 0;
  for (size_t i = 0; i < plan.selected.size(); ++i) {
    const CsvColumn& column = table.columns[i];
    const int k = plan.slot[plan.selected[i]];
    if (k < 0) {
      table.values.row(column.first) = parsed.row(next_numeric++);
      continue;
    }
    for (int64_t r = 0; r < num_rows; ++r) {
      const int code = rows.categories[k].codes[r];
      if (code < 0) {
        table.values.col(r)
            .segment(column.first, column.width())
            .setConstant(std::numeric_limits<double>::quiet_NaN());
      } else {
        table.values(column.first + ranks[k][code], r) = 1.0;
      }
    }
  }
  return table;
}

}  // namespace

absl::StatusOr<CsvTable> ParseCsv(std::string_view buffer) {
  return ParseCsv(buffer, CsvOptions{});
}

absl::StatusOr<CsvTable> ParseCsv(std::string_view buffer,
                                  const std::vector<std::string>& columns) {
  CsvOptions options;
  options.columns = columns;
  return ParseCsv(buffer, options);
}

absl::StatusOr<std::vector<std::string>> ParseCsvHeader(
    std::string_view buffer) {
  buffer = StripBom(buffer);
  LineReader lines(buffer);
  std::vector<Field> fields;
  return ReadHeader(buffer, &lines, &fields);
}

absl::StatusOr<CsvShape> CheckCsvStructure(std::string_view buffer) {
  buffer = StripBom(buffer);
  LineReader lines(buffer);
  std::vector<Field> fields;
  CsvShape shape;
  SPARROW_ASSIGN_OR_RETURN(shape.header, ReadHeader(buffer, &lines, &fields));
  ColumnPlan no_columns;  // nothing converted; every line is still split
  no_columns.slot.assign(shape.header.size(), -1);
  SPARROW_ASSIGN_OR_RETURN(ParsedRows rows,
                           ReadRows(buffer, &lines, shape.header, no_columns,
                                    CsvOptions{}, &fields));
  shape.rows = rows.num_rows;
  return shape;
}

absl::StatusOr<CsvTable> ParseCsv(std::string_view buffer,
                                  const CsvOptions& options) {
  buffer = StripBom(buffer);
  LineReader lines(buffer);
  std::vector<Field> fields;
  SPARROW_ASSIGN_OR_RETURN(std::vector<std::string> header,
                           ReadHeader(buffer, &lines, &fields));
  SPARROW_ASSIGN_OR_RETURN(ColumnPlan plan, PlanColumns(header, options));
  SPARROW_ASSIGN_OR_RETURN(ParsedRows rows, ReadRows(buffer, &lines, header,
                                                     plan, options, &fields));
  return BuildTable(header, plan, rows);
}

absl::StatusOr<std::vector<int>> ResolveColumns(
    const std::vector<std::string>& header,
    const std::vector<std::string>& selectors) {
  std::vector<int> indices;
  indices.reserve(selectors.size());
  for (const std::string& selector : selectors) {
    const auto by_name = std::find(header.begin(), header.end(), selector);
    if (by_name != header.end()) {
      indices.push_back(static_cast<int>(by_name - header.begin()));
      continue;
    }
    const bool is_index =
        !selector.empty() &&
        std::all_of(selector.begin(), selector.end(), [](char c) {
          return std::isdigit(static_cast<unsigned char>(c));
        });
    if (!is_index) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "unknown column %s; available columns: %s (or a 0-based column "
          "index)",
          Quote(selector), ListColumns(header)));
    }
    uint64_t index = 0;
    const char* end = selector.data() + selector.size();
    const auto [ptr, ec] = std::from_chars(selector.data(), end, index);
    if (ec != std::errc() || ptr != end || index >= header.size()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "column index %s is out of range: the table has %d columns "
          "(indices 0 to %d): %s",
          selector, header.size(), static_cast<int64_t>(header.size()) - 1,
          ListColumns(header)));
    }
    indices.push_back(static_cast<int>(index));
  }
  return indices;
}

}  // namespace sparrow::core::data
