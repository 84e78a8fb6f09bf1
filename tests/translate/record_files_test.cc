// JobSpec.validation_data / test_data: validation and test records read from
// their own files.
#include <string>
#include <vector>

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
