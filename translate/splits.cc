// The splits of a table's rows: row ranges checked against the table and
// each other, or a random split.
#include "translate/splits.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/util/option_error.h"
#include "core/util/status_macros.h"

namespace sparrow::translate {
namespace {

using core::data::RowRange;

// Keeps the first `fraction` of the rows covered by `ranges` (a contiguous
// prefix).
std::vector<RowRange> Prefix(std::vector<RowRange> ranges, double fraction) {
  int64_t total = 0;
  for (const auto& r : ranges) total += r.last - r.first + 1;
  int64_t keep = std::max<int64_t>(
      1, static_cast<int64_t>(std::llround(fraction * total)));
  std::vector<RowRange> out;
  for (auto r : ranges) {
    if (keep <= 0) break;
    r.last = std::min(r.last, r.first + keep - 1);
    keep -= r.last - r.first + 1;
    out.push_back(r);
  }
  return out;
}

// Held-out rows must never be trained on, and the rows that choose the model
// (validation) are never the ones that judge it (test); `why` says which.
absl::Status Disjoint(const std::vector<RowRange>& a, absl::string_view a_name,
                      const std::vector<RowRange>& b, absl::string_view b_name,
                      absl::string_view why) {
  for (const auto& x : a) {
    for (const auto& y : b) {
      const int64_t first = std::max(x.first, y.first);
      const int64_t last = std::min(x.last, y.last);
      if (first <= last) {
        return absl::InvalidArgumentError(
            absl::StrCat(b_name, " overlaps ", a_name, " at rows ", first, "-",
                         last, "; ", why));
      }
    }
  }
  return absl::OkStatus();
}

std::vector<RowRange> Ranges(
    const google::protobuf::RepeatedPtrField<v1::RowRange>& r) {
  std::vector<RowRange> out;
  for (const v1::RowRange& x : r) out.push_back({x.first(), x.last()});
  return out;
}

}  // namespace

bool HasTestColumns(const v1::DataSource& src) {
  return !src.test_inputs().empty() || !src.test_outputs().empty();
}

absl::StatusOr<SplitRows> CutSplits(const v1::JobSpec& spec, int64_t rows) {
  const v1::Split& split = spec.split();
  SplitRows out;
  out.train = Ranges(split.train());
  if (out.train.empty()) out.train.push_back({1, rows});
  SPARROW_RETURN_IF_ERROR(
      core::data::ValidateRanges(out.train, rows, "split.train"));
  const double fraction = split.train_fraction();
  if (fraction < 0 || fraction > 1 || !std::isfinite(fraction)) {
    return core::OptionError("split.train_fraction", fraction,
                             "in (0, 1] (0 means 1)");
  }
  if (fraction > 0 && fraction < 1) out.train = Prefix(out.train, fraction);
  out.validation = Ranges(split.validation());
  out.test = Ranges(split.test());
  if (!out.validation.empty()) {
    SPARROW_RETURN_IF_ERROR(
        core::data::ValidateRanges(out.validation, rows, "split.validation"));
  }
  if (!out.test.empty()) {
    SPARROW_RETURN_IF_ERROR(
        core::data::ValidateRanges(out.test, rows, "split.test"));
  }
  // Test rows from other columns may share row numbers with the training rows.
  constexpr absl::string_view kHeldOut =
      "held-out rows must not be used for training";
  if (!HasTestColumns(spec.data())) {
    SPARROW_RETURN_IF_ERROR(
        Disjoint(out.train, "split.train", out.test, "split.test", kHeldOut));
    SPARROW_RETURN_IF_ERROR(Disjoint(
        out.test, "split.test", out.validation, "split.validation",
        "validation rows choose the model (early stopping, the best iterate, "
        "sweeps) and must not be the test rows that judge it"));
  }
  SPARROW_RETURN_IF_ERROR(Disjoint(out.train, "split.train", out.validation,
                                   "split.validation", kHeldOut));
  return out;
}

bool IsRandomSplit(const v1::Split& split) {
  return split.test_fraction() != 0 || split.validation_fraction() != 0;
}

}  // namespace sparrow::translate
