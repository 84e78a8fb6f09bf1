// CSV bytes -> core::data::ParseCsv (every column; selected, categorical and
// missing-value columns) and ParseCsvHeader. Any input must give a table or an
// InvalidArgument, never a crash, and a table must be well-formed.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "core/data/csv.h"

namespace {

namespace data = sparrow::core::data;

void Check(bool condition) {
  if (!condition) std::abort();
}

void CheckTable(const data::CsvTable& t) {
  Check(static_cast<int>(t.header.size()) == t.num_columns());
  int rows = 0;
  for (const data::CsvColumn& c : t.columns) {
    Check(c.first == rows);
    rows += c.width();
  }
  Check(rows == t.num_columns());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  const std::string_view buffer(reinterpret_cast<const char*>(bytes), size);
  auto all = data::ParseCsv(buffer);
  if (all.ok()) CheckTable(*all);
  auto header = data::ParseCsvHeader(buffer);
  if (!header.ok() || header->empty()) return 0;
  // The first column as a category, the last one and (by index) the first
  // again as numbers, missing values kept.
  data::CsvOptions options;
  options.columns = {header->front(), header->back(), "0"};
  options.categorical = {header->front()};
  options.keep_missing = true;
  auto selected = data::ParseCsv(buffer, options);
  if (selected.ok()) CheckTable(*selected);
  return 0;
}
