// The splits of a table's rows (JobSpec.split, data.test_inputs): for
// translate/data.cc, which loads the data.
#ifndef SPARROW_TRANSLATE_SPLITS_H_
#define SPARROW_TRANSLATE_SPLITS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "core/data/dataset.h"
#include "sparrow/v1/spec.pb.h"

namespace sparrow::translate {

// Row ranges (1-based, inclusive) of each split.
struct SplitRows {
  std::vector<core::data::RowRange> train, validation, test;
};

// The test split reads other columns (data.test_inputs / test_outputs).
bool HasTestColumns(const v1::DataSource& src);

// The split's row ranges over a table of `rows` data rows, checked: within
// the table, train_fraction in range, held-out rows disjoint from training
// and validation rows from test rows.
absl::StatusOr<SplitRows> CutSplits(const v1::JobSpec& spec, int64_t rows);

// split.test_fraction or validation_fraction: a random split (mlp only).
bool IsRandomSplit(const v1::Split& split);

}  // namespace sparrow::translate

#endif  // SPARROW_TRANSLATE_SPLITS_H_
