// A JobSpec's data part -> core::TrainData: reads the CSV bytes, picks the
// input / output / test columns, one-hot encodes the categorical ones, drops
// rows with missing values and cuts the train / validation / test splits
// (row ranges or a random split) into tables (mlp) or traces (sequence
// models). Also the subset of those checks a service can run at submission.
#ifndef SPARROW_TRANSLATE_DATA_H_
#define SPARROW_TRANSLATE_DATA_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/data/idx.h"
#include "core/train/trainer.h"
#include "sparrow/v1/spec.pb.h"

namespace sparrow::translate {

// What LoadTrainData made of the file, for the caller to report.
struct DataSummary {
  int64_t file_rows = 0;     // data rows of the CSV
  int64_t dropped_rows = 0;  // rows with a missing value (data.drop_missing)
  // Samples per split (mlp: rows; sequence models: samples of all traces).
  int64_t train_rows = 0, validation_rows = 0, test_rows = 0;
  // Model inputs and outputs, after one-hot encoding data.categorical.
  int inputs = 0, outputs = 0;
};

// The contents of a spec's data files: data's, and validation_data's and
// test_data's when the spec sets them (empty otherwise).
struct DataFiles {
  absl::string_view data;
  absl::string_view validation;
  absl::string_view test;
};

// Parses the CSV bytes of the spec's data source, one-hot encodes the
// categorical columns, drops the rows with missing values (data.drop_missing)
// and cuts the splits (row ranges or a random split). Bytes that start with
// the image-dataset magic (translate/images.h) are read as images instead
// (LoadImageTrainData). Fills `summary` when given.
absl::StatusOr<core::TrainData> LoadTrainData(const v1::JobSpec& spec,
                                              const core::TrainConfig& config,
                                              absl::string_view csv,
                                              DataSummary* summary = nullptr);

// The same, with messages that call the training split `train_name` ("the
// training split"; "the file" where a record file loads as one).
absl::StatusOr<core::TrainData> LoadTrainDataAs(const v1::JobSpec& spec,
                                                const core::TrainConfig& config,
                                                absl::string_view csv,
                                                absl::string_view train_name,
                                                DataSummary* summary = nullptr);

// The same, with the validation and test splits read from their own files
// when the spec sets validation_data / test_data (all rows of the file, with
// data's column selectors unless the record names its own; the record's
// channels must match data's). The summary's validation_rows and test_rows
// count them; file_rows and dropped_rows are data's file's.
absl::StatusOr<core::TrainData> LoadTrainData(const v1::JobSpec& spec,
                                              const core::TrainConfig& config,
                                              const DataFiles& files,
                                              DataSummary* summary = nullptr);

// The spec's validation_data and test_data, checked against the rest of the
// spec: a source given, as many columns as data's, no categorical columns
// with own selectors, no image dataset, and no second way of giving the same
// split (row ranges, test columns, a random split's fraction).
absl::Status CheckRecordFiles(const v1::JobSpec& spec);

// The checks of a record file that need only its header (its columns exist,
// each selected once), for a service to run at submission. `field` is
// "validation_data" or "test_data".
absl::Status ValidateRecordFile(const v1::JobSpec& spec,
                                absl::string_view field,
                                const std::vector<std::string>& header);

// The checks of LoadTrainData that need only the file's header and number of
// data rows (column roles, categorical columns, split ranges and fractions),
// for a service to refuse a spec at submission rather than fail the job when
// it starts. rows <= 0 skips the row ranges. Trace lengths (NARX lags), the
// levels of categorical columns, missing values and the sizes of a random
// split are still checked by LoadTrainData only.
absl::Status ValidateDataSpec(const v1::JobSpec& spec,
                              const std::vector<std::string>& header,
                              int64_t rows);

// An image dataset's tables: the split's row ranges (or random split) index
// the images, 1-based; x holds the pixels / 255, y the labels
// (core::data::MakeImageTable). For table models (mlp, cnn) only. Fills
// `summary` (file_rows = images) when given.
absl::StatusOr<core::TrainData> LoadImageTrainData(
    const v1::JobSpec& spec, const core::TrainConfig& config,
    const core::data::ImageSet& images, DataSummary* summary = nullptr);

// The checks of LoadImageTrainData that need only the number of images
// (images <= 0 skips the row ranges): no column selectors (data.inputs,
// outputs, categorical, ...: an image's inputs are its pixels, its output the
// label), a table model, and the split.
absl::Status ValidateImageDataSpec(const v1::JobSpec& spec, int64_t images);

}  // namespace sparrow::translate

#endif  // SPARROW_TRANSLATE_DATA_H_
