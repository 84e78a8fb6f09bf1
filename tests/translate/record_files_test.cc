// JobSpec.validation_data / test_data: validation and test records read from
// their own files.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/translate/testing/spec_fixture.h"
#include "translate/config.h"
#include "translate/data.h"
#include "translate/json.h"

namespace sparrow::translate {
namespace {

// kRnnSpec's training rows, with the test split from test.csv.
constexpr char kSpec[] = R"({
  "data": {"csv_path": "x.csv", "inputs": ["u"], "outputs": ["y"]},
  "split": {"train": [{"first": 1, "last": 150}]},
  "test_data": {"csv_path": "test.csv"},
  "model": {"state_space_rnn": {"nx": 2, "fx_hidden": [3], "fy_hidden": [3]}},
  "optimizer": {"lbfgs": {}},
  "seed": 7
})";

absl::StatusOr<core::TrainData> LoadFiles(const std::string& json,
                                          const DataFiles& files,
                                          DataSummary* summary = nullptr) {
  auto spec = ParseJobSpecJson(json);
  if (!spec.ok()) return spec.status();
  auto config = ToTrainConfig(*spec);
  if (!config.ok()) return config.status();
  return LoadTrainData(*spec, *config, files, summary);
}

// The rows first..last (1-based) of Csv(rows), header included.
std::string Rows(const std::string& csv, int first, int last) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < csv.size()) {
    const size_t end = csv.find('\n', start);
    lines.push_back(csv.substr(start, end - start + 1));
    start = end + 1;
  }
  std::string out = lines[0];
  for (int r = first; r <= last; ++r) out += lines[r];
  return out;
}

TEST(RecordFilesTest, TestFileGivesTheSameSplitAsRowRanges) {
  const std::string csv = Csv(200);
  auto ranges = ParseJobSpecJson(kRnnSpec);
  ASSERT_TRUE(ranges.ok());
  auto config = ToTrainConfig(*ranges);
  ASSERT_TRUE(config.ok());
  auto want = LoadTrainData(*ranges, *config, csv);
  ASSERT_TRUE(want.ok()) << want.status();

  DataSummary summary;
  const std::string test = Rows(csv, 151, 200);
  auto got = LoadFiles(kSpec, {csv, "", test}, &summary);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->test_seq.traces.size(), 1u);
  EXPECT_EQ(got->test_seq.traces[0].u, want->test_seq.traces[0].u);
  EXPECT_EQ(got->test_seq.traces[0].y, want->test_seq.traces[0].y);
  EXPECT_EQ(got->test_seq.output_names, want->test_seq.output_names);
  EXPECT_EQ(got->train_seq.traces[0].y, want->train_seq.traces[0].y);
  EXPECT_EQ(summary.test_rows, 50);
  EXPECT_EQ(summary.train_rows, 150);
}

TEST(RecordFilesTest, ValidationFileAndTraceStarts) {
  const std::string csv = Csv(200);
  const std::string spec =
      Replace(kSpec, R"("test_data": {"csv_path": "test.csv"},)",
              R"("validation_data": {"csv_path": "v.csv",
                                     "trace_starts": [1, 21]},)");
  auto got = LoadFiles(spec, {csv, Rows(csv, 151, 200), ""});
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->validation_seq.traces.size(), 2u);
  EXPECT_EQ(got->validation_seq.traces[0].length(), 20);
  EXPECT_EQ(got->validation_seq.traces[1].length(), 30);
  EXPECT_TRUE(got->test_seq.traces.empty());
}

TEST(RecordFilesTest, OwnColumnNames) {
  const std::string csv = Csv(200);
  std::string test = Rows(csv, 151, 200);
  test = Replace(test, "u,y", "force,displacement");
  const std::string spec = Replace(
      kSpec, R"({"csv_path": "test.csv"})",
      R"({"csv_path": "test.csv", "inputs": ["force"], "outputs": ["displacement"]})");
  auto got = LoadFiles(spec, {csv, "", test});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->test_seq.traces[0].length(), 50);
  // Without own selectors the file must have data's columns, and the error
  // names the record.
  const absl::Status missing = LoadFiles(kSpec, {csv, "", test}).status();
  ExpectError(missing, "test_data (its own file)");
}

TEST(RecordFilesTest, TwoWaysOfGivingASplitAreRefused) {
  const std::string csv = Csv(200);
  const std::string both =
      Replace(kSpec, R"("split": {"train": [{"first": 1, "last": 150}]})",
              R"("split": {"train": [{"first": 1, "last": 150}],
                   "test": [{"first": 151, "last": 200}]})");
  ExpectError(LoadFiles(both, {csv, "", csv}).status(),
              "test_data and split.test both give the test split");
  const std::string columns = Replace(
      kSpec, R"("outputs": ["y"]})",
      R"("outputs": ["y"], "test_inputs": ["u"], "test_outputs": ["y"]})");
  ExpectError(LoadFiles(columns, {csv, "", csv}).status(),
              "data.test_inputs/test_outputs both give");
}

TEST(RecordFilesTest, BadRecordsAreNamed) {
  const std::string csv = Csv(200);
  ExpectError(LoadFiles(Replace(kSpec, R"({"csv_path": "test.csv"})", "{}"),
                        {csv, "", csv})
                  .status(),
              "test_data has no file");
  ExpectError(
      LoadFiles(Replace(kSpec, R"({"csv_path": "test.csv"})",
                        R"({"csv_path": "t.csv", "inputs": ["u", "y"]})"),
                {csv, "", csv})
          .status(),
      "test_data.inputs names 2 columns but data.inputs 1");
}

TEST(RecordFilesTest, ARecordTooShortForTheLagsIsNamedAsTheFile) {
  const std::string spec = Replace(
      kSpec,
      R"("state_space_rnn": {"nx": 2, "fx_hidden": [3], "fy_hidden": [3]})",
      R"("narx_mlp": {"input_lags": 6, "output_lags": 6, "hidden": [3]})");
  const std::string csv = Csv(200);
  ExpectError(LoadFiles(spec, {csv, "", Rows(csv, 1, 4)}).status(),
              "test_data (its own file): model.narx_mlp: lag 6 is longer than "
              "the data: a trace of the file has only 4 samples");
}

TEST(RecordFilesTest, CsvAloneIsRefusedForASpecWithRecords) {
  auto spec = ParseJobSpecJson(kSpec);
  ASSERT_TRUE(spec.ok());
  auto config = ToTrainConfig(*spec);
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(LoadTrainData(*spec, *config, Csv(200)).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

// Tables: categorical levels are read from each file, so a test file that
// lacks a level encodes differently and is refused.
constexpr char kMlpSpec[] = R"({
  "data": {"csv_path": "x.csv", "inputs": ["u", "c"], "outputs": ["y"],
           "categorical": ["c"]},
  "test_data": {"csv_path": "test.csv"},
  "model": {"mlp": {"hidden": [3]}},
  "optimizer": {"lbfgs": {}},
  "seed": 7
})";

TEST(RecordFilesTest, TablesAndCategoricalLevels) {
  const std::string train = "u,c,y\n1,a,2\n2,b,3\n3,a,4\n4,b,5\n";
  auto got = LoadFiles(kMlpSpec, {train, "", "u,c,y\n5,b,6\n6,a,7\n"});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->test_table.num_samples(), 2);
  EXPECT_EQ(got->test_table.input_names, got->train_table.input_names);
  ExpectError(LoadFiles(kMlpSpec, {train, "", "u,c,y\n5,b,6\n"}).status(),
              "needs the same levels in every file");
}

TEST(RecordFilesTest, ValidationAtSubmissionChecksTheHeader) {
  auto spec = ParseJobSpecJson(kSpec);
  ASSERT_TRUE(spec.ok());
  EXPECT_TRUE(ValidateRecordFile(*spec, "test_data", {"u", "y"}).ok());
  ExpectError(ValidateRecordFile(*spec, "test_data", {"u", "x"}), "test_data");
  // Data's own header check knows of the record and its rules.
  EXPECT_TRUE(ValidateDataSpec(*spec, {"u", "y"}, 200).ok());
}

// The rows that choose a model (validation) are never the rows that judge it
// (test), and held-out rows are never training rows, also when a split comes
// from its own file: refused by path (at submission) and by bytes (at load).
TEST(RecordFilesTest, RecordsNeverShareRowsWithAnotherSplit) {
  const std::string csv = Csv(200);
  const std::string held_out = Rows(csv, 151, 200);
  const std::string both =
      Replace(kSpec, R"("test_data": {"csv_path": "test.csv"},)",
              R"("validation_data": {"csv_path": "v.csv"},
                 "test_data": {"csv_path": "test.csv"},)");
  // Two names, one content.
  ExpectError(LoadFiles(both, {csv, held_out, held_out}).status(),
              "validation_data and test_data read the same columns (u, y) of "
              "the same file (csv_path v.csv and csv_path test.csv hold the "
              "same bytes): the rows that choose the model");
  // One name: refused before any file is read (sparrowd's admission).
  auto same_path = ParseJobSpecJson(Replace(both, "test.csv", "v.csv"));
  ASSERT_TRUE(same_path.ok());
  ExpectError(CheckRecordFiles(*same_path),
              "of the same file (csv_path v.csv)");
  auto data_path = ParseJobSpecJson(Replace(kSpec, "test.csv", "x.csv"));
  ASSERT_TRUE(data_path.ok());
  ExpectError(CheckRecordFiles(*data_path),
              "test_data and data (the training rows) read the same columns");
  // The training file's bytes under another name, as test or as validation.
  ExpectError(LoadFiles(kSpec, {csv, "", csv}).status(),
              "held-out rows would be training rows");
  ExpectError(LoadFiles(both, {csv, csv, held_out}).status(),
              "validation_data and data (the training rows)");
  // Distinct files are fine, in any order.
  EXPECT_TRUE(LoadFiles(both, {csv, Rows(csv, 101, 150), held_out}).ok());
}

// Other columns of the same bytes are other data: a benchmark file with the
// estimation and validation records side by side (Cascaded Tanks) serves as
// training file and, through its other columns, as test file.
TEST(RecordFilesTest, OtherColumnsOfTheSameFileAreOtherRows) {
  std::string wide = "u,y,u2,y2\n";
  for (int r = 0; r < 200; ++r) {
    wide += absl::StrCat(r % 7, ",", r % 5, ",", r % 3, ",", r % 11, "\n");
  }
  const std::string spec =
      Replace(kSpec, R"({"csv_path": "test.csv"})",
              R"({"csv_path": "x.csv", "inputs": ["u2"], "outputs": ["y2"]})");
  auto got = LoadFiles(spec, {wide, "", wide});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->test_seq.traces[0].length(), 200);
  // The same file's training columns are refused.
  ExpectError(
      LoadFiles(Replace(spec, R"(["u2"], "outputs": ["y2"])",
                        R"(["u"], "outputs": ["y"])"),
                {wide, "", wide})
          .status(),
      "test_data and data (the training rows) read the same columns (u, y)");
  // Column indices name the same columns as their names.
  ExpectError(
      LoadFiles(Replace(spec, R"(["u2"], "outputs": ["y2"])",
                        R"(["0"], "outputs": ["1"])"),
                {wide, "", wide})
          .status(),
      "test_data and data (the training rows) read the same output columns "
      "(1 and y) of the same file");
  // The training targets beside other inputs are still the training rows.
  ExpectError(LoadFiles(Replace(spec, R"(["u2"], "outputs": ["y2"])",
                                R"(["u2"], "outputs": ["y"])"),
                        {wide, "", wide})
                  .status(),
              "held-out rows would be training rows");
}

// Row ranges of one file for a sequence model (state-space RNN and NARX):
// overlapping validation and test ranges are refused as for tables; with the
// test split in other columns (data.test_inputs/test_outputs) the same row
// numbers are other data and allowed.
TEST(RecordFilesTest, SequenceRowRangesKeepValidationAndTestApart) {
  const std::string narx = Replace(
      kRnnSpec,
      R"({"state_space_rnn": {"nx": 2, "fx_hidden": [3], "fy_hidden": [3]}})",
      R"({"narx_mlp": {"input_lags": 2, "output_lags": 2, "hidden": [3]}})");
  for (const std::string& model : {std::string(kRnnSpec), narx}) {
    const std::string overlapping =
        Replace(model, R"("test": [{"first": 151, "last": 200}])",
                R"("validation": [{"first": 141, "last": 170}],
           "test": [{"first": 151, "last": 200}])");
    ExpectError(Load(Replace(overlapping, R"("last": 150})", R"("last": 140})"),
                     Csv(200)),
                "split.validation overlaps split.test at rows 151-170");
  }
  std::string wide = "u,y,u2,y2\n";
  for (int r = 0; r < 200; ++r) {
    wide += absl::StrCat(r % 7, ",", r % 5, ",", r % 3, ",", r % 11, "\n");
  }
  const std::string columns = Replace(
      Replace(
          kRnnSpec, R"("outputs": ["y"]})",
          R"("outputs": ["y"], "test_inputs": ["u2"], "test_outputs": ["y2"]})"),
      R"("test": [{"first": 151, "last": 200}])",
      R"("validation": [{"first": 151, "last": 200}],
         "test": [{"first": 1, "last": 200}])");
  EXPECT_TRUE(Load(columns, wide).ok()) << Load(columns, wide);
}

TEST(RecordFilesTest, ImageDatasetsTakeNoRecords) {
  const std::string spec = R"({
    "data": {"images": {"images": ["i.idx"], "labels": ["l.idx"]}},
    "test_data": {"csv_path": "test.csv"},
    "model": {"mlp": {"hidden": [3]}},
    "loss": {"kind": "LOSS_SOFTMAX_CROSS_ENTROPY"},
    "optimizer": {"lbfgs": {}}
  })";
  auto parsed = ParseJobSpecJson(spec);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ExpectError(ValidateImageDataSpec(*parsed, 100), "is for CSV data");
}

}  // namespace
}  // namespace sparrow::translate
