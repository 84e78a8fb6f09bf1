#include "translate/data.h"

#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/translate/testing/image_fixture.h"
#include "tests/translate/testing/spec_fixture.h"
#include "translate/config.h"
#include "translate/images.h"
#include "translate/json.h"

namespace sparrow::translate {
namespace {

TEST(DataTest, ValidSpecLoads) { EXPECT_TRUE(Load(kRnnSpec, Csv(200)).ok()); }

TEST(DataTest, SplitOutsideTheDataIsNamed) {
  ExpectError(
      Load(Replace(kRnnSpec, "\"last\": 200", "\"last\": 260"), Csv(200)),
      "split.test");
}

TEST(DataTest, LagLongerThanTheDataIsNamed) {
  const std::string narx = Replace(
      kRnnSpec,
      R"({"state_space_rnn": {"nx": 2, "fx_hidden": [3], "fy_hidden": [3]}})",
      R"({"narx_mlp": {"input_lags": 80, "output_lags": 2, "hidden": [4]}})");
  ExpectError(Load(narx, Csv(200)), "lag 80 is longer than the data");
}

TEST(DataTest, UnknownColumnIsNamed) {
  ExpectError(Load(Replace(kRnnSpec, "[\"y\"]", "[\"force\"]"), Csv(200)),
              "force");
}

TEST(DataTest, AColumnHasOneRole) {
  ExpectError(
      Load(Replace(kRnnSpec, "\"outputs\": [\"y\"]", "\"outputs\": [\"0\"]"),
           Csv(200)),
      "selected twice");
}

TEST(DataTest, HeldOutRowsMustNotBeTrainedOn) {
  ExpectError(
      Load(Replace(kRnnSpec, "\"first\": 151", "\"first\": 141"), Csv(200)),
      "split.test overlaps split.train at rows 141-150");
}

TEST(DataTest, BadCsvIsNamedWithRowAndColumn) {
  std::string csv = Csv(200);
  csv = Replace(csv, "\n0.0998", "\nabc");
  const absl::Status s = Load(kRnnSpec, csv);
  ExpectError(s, "line 3");
  EXPECT_NE(s.message().find("u"), std::string::npos);
}

// --- data.categorical, data.drop_missing and the random split. ---

// Columns u (row number), c (category), y (a number), z (yes / no); rows
// 1..rows. c cycles b, a, c, except the last row's "d".
std::string CategoricalCsv(int rows) {
  std::string s = "u,c,y,z\n";
  const char* cycle[] = {"b", "a", "c"};
  for (int i = 1; i <= rows; ++i) {
    s += std::to_string(i) + "," + (i == rows ? "d" : cycle[i % 3]) + "," +
         std::to_string(0.5 * i) + "," + (i % 2 ? "yes" : "no") + "\n";
  }
  return s;
}

constexpr char kMlpSpec[] = R"({
  "data": {"csv_path": "x.csv", "inputs": ["u", "c"], "outputs": ["y"],
           "categorical": ["c"]},
  "model": {"mlp": {"hidden": [4]}},
  "optimizer": {"lbfgs": {}},
  "stopping": {"max_epochs": 5},
  "seed": 1
})";

absl::StatusOr<core::TrainData> LoadData(const std::string& json,
                                         const std::string& csv,
                                         DataSummary* summary = nullptr) {
  auto spec = ParseJobSpecJson(json);
  if (!spec.ok()) return spec.status();
  auto config = ToTrainConfig(*spec);
  if (!config.ok()) return config.status();
  return LoadTrainData(*spec, *config, csv, summary);
}

// The first input (u, the row number) of every sample.
std::vector<int> RowsOfTable(const core::data::TableData& t) {
  std::vector<int> rows;
  for (int j = 0; j < t.num_samples(); ++j) {
    rows.push_back(static_cast<int>(t.x(0, j)));
  }
  return rows;
}

TEST(CategoricalSpecTest, InputsAreOneHotWithSortedLevelNames) {
  const std::string json =
      Replace(kMlpSpec, "\"model\"",
              R"("split": {"train": [{"first": 1, "last": 8}],
                   "test": [{"first": 9, "last": 9}]}, "model")");
  DataSummary summary;
  auto data = LoadData(json, CategoricalCsv(9), &summary);
  ASSERT_TRUE(data.ok()) << data.status();
  const core::data::TableData& t = data->train_table;
  EXPECT_EQ(t.input_names,
            (std::vector<std::string>{"u", "c=a", "c=b", "c=c", "c=d"}));
  // Row 1 is "a", row 2 "c", row 3 "b".
  EXPECT_EQ(t.x.col(0), (Eigen::VectorXd(5) << 1, 1, 0, 0, 0).finished());
  EXPECT_EQ(t.x.col(1), (Eigen::VectorXd(5) << 2, 0, 0, 1, 0).finished());
  EXPECT_EQ(t.x.col(2), (Eigen::VectorXd(5) << 3, 0, 1, 0, 0).finished());
  // "d" is only in the test row, yet the training data has its (zero)
  // indicator: the levels come from the whole file.
  EXPECT_EQ(t.x.row(4).sum(), 0.0);
  EXPECT_EQ(data->test_table.x.col(0),
            (Eigen::VectorXd(5) << 9, 0, 0, 0, 1).finished());
  EXPECT_EQ(summary.inputs, 5);
  EXPECT_EQ(summary.outputs, 1);
}

TEST(CategoricalSpecTest, TwoLevelOutputIsTheIndicatorOfItsSecondLevel) {
  const std::string json =
      Replace(Replace(kMlpSpec, "\"outputs\": [\"y\"]", "\"outputs\": [\"z\"]"),
              "\"categorical\": [\"c\"]", "\"categorical\": [\"c\", \"z\"]");
  auto data = LoadData(json, CategoricalCsv(10));
  ASSERT_TRUE(data.ok()) << data.status();
  const core::data::TableData& t = data->train_table;
  EXPECT_EQ(t.output_names, std::vector<std::string>{"z=yes"});
  ASSERT_EQ(t.y.rows(), 1);
  for (int j = 0; j < t.num_samples(); ++j) {
    EXPECT_EQ(t.y(0, j), static_cast<int>(t.x(0, j)) % 2 ? 1.0 : 0.0);
  }
  // Another count of levels gives one column per level.
  const std::string three =
      Replace(Replace(kMlpSpec, "\"inputs\": [\"u\", \"c\"]",
                      "\"inputs\": [\"u\", \"y\"]"),
              "\"outputs\": [\"y\"]", "\"outputs\": [\"c\"]");
  data = LoadData(three, CategoricalCsv(10));
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->train_table.output_names,
            (std::vector<std::string>{"c=a", "c=b", "c=c", "c=d"}));
}

TEST(CategoricalSpecTest, BadCategoricalColumnsAreNamed) {
  const auto with = [](const std::string& list) {
    return Replace(kMlpSpec, "\"categorical\": [\"c\"]",
                   "\"categorical\": " + list);
  };
  ExpectError(LoadData(with(R"(["c", "x9"])"), CategoricalCsv(9)).status(),
              "data.categorical[1] 'x9' is not a column of the CSV");
  ExpectError(LoadData(with(R"(["z"])"), CategoricalCsv(9)).status(),
              "data.categorical[0] 'z' is not among data.inputs/outputs/"
              "test_inputs/test_outputs");
  ExpectError(LoadData(with(R"(["c", "1"])"), CategoricalCsv(9)).status(),
              "data.categorical[1] '1' repeats data.categorical[0]");
  // Without data.categorical the text is not a number.
  ExpectError(LoadData(with("[]"), CategoricalCsv(9)).status(),
              "'a' is not a number");
}

TEST(CategoricalSpecTest, TestColumnsMustEncodeAlike) {
  std::string csv = "u,c,y,u2,c2,y2\n";
  for (int i = 1; i <= 6; ++i) {
    csv += std::to_string(i) + "," + (i % 2 ? "p" : "q") + ",1,1," +
           (i % 2 ? "p" : "r") + ",1\n";
  }
  const std::string json = Replace(
      Replace(kMlpSpec, "\"categorical\": [\"c\"]",
              R"("categorical": ["c", "c2"], "test_inputs": ["u2", "c2"],
                 "test_outputs": ["y2"])"),
      "\"model\"",
      R"("split": {"train": [{"first": 1, "last": 6}],
                   "test": [{"first": 1, "last": 6}]}, "model")");
  ExpectError(LoadData(json, csv).status(),
              "data.test_inputs[1] 'c2' replaces data.inputs[1] 'c'");
  std::string same = csv;
  for (size_t at = same.find(",r,"); at != std::string::npos;
       at = same.find(",r,")) {
    same.replace(at, 3, ",q,");
  }
  auto data = LoadData(json, same);
  EXPECT_TRUE(data.ok()) << data.status();
}

// Rows 3 (y missing) and 6 (c missing) of 10.
std::string CsvWithMissing() {
  std::string csv = CategoricalCsv(10);
  csv = Replace(csv, "\n3,b,1.500000,", "\n3,b,NA,");
  return Replace(csv, "\n6,b,", "\n6,,");
}

TEST(DropMissingTest, WithoutTheFlagAMissingValueIsAnError) {
  ExpectError(LoadData(kMlpSpec, CsvWithMissing()).status(),
              "line 4, column 'y': missing value 'NA'");
}

TEST(DropMissingTest, DropsRowsWithAMissingSelectedValueAndCountsThem) {
  const std::string json = Replace(kMlpSpec, "\"categorical\"",
                                   "\"drop_missing\": true, \"categorical\"");
  DataSummary summary;
  auto data = LoadData(json, CsvWithMissing(), &summary);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(summary.file_rows, 10);
  EXPECT_EQ(summary.dropped_rows, 2);
  EXPECT_EQ(summary.train_rows, 8);
  EXPECT_EQ(RowsOfTable(data->train_table),
            (std::vector<int>{1, 2, 4, 5, 7, 8, 9, 10}));
  EXPECT_TRUE(data->train_table.x.allFinite());
  EXPECT_TRUE(data->train_table.y.allFinite());
  // A missing value in an unselected column does not drop the row.
  const std::string no_y =
      Replace(Replace(json, "\"outputs\": [\"y\"]", "\"outputs\": [\"z\"]"),
              "\"categorical\": [\"c\"]", "\"categorical\": [\"c\", \"z\"]");
  data = LoadData(no_y, CsvWithMissing(), &summary);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(summary.dropped_rows, 1);
}

// Row ranges keep numbering the file's rows; the dropped rows leave them.
TEST(DropMissingTest, RowRangesCountFileRows) {
  const std::string json =
      Replace(Replace(kMlpSpec, "\"categorical\"",
                      "\"drop_missing\": true, \"categorical\""),
              "\"model\"",
              R"("split": {"train": [{"first": 1, "last": 5}],
                   "test": [{"first": 6, "last": 10}]}, "model")");
  auto data = LoadData(json, CsvWithMissing());
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(RowsOfTable(data->train_table), (std::vector<int>{1, 2, 4, 5}));
  EXPECT_EQ(RowsOfTable(data->test_table), (std::vector<int>{7, 8, 9, 10}));
  ExpectError(LoadData(Replace(json, "\"first\": 6, \"last\": 10",
                               "\"first\": 6, \"last\": 6"),
                       CsvWithMissing())
                  .status(),
              "split.test: every row of its ranges has a missing value");
}

TEST(DropMissingTest, SequenceModelsRefuseIt) {
  ExpectError(Load(Replace(kRnnSpec, "\"outputs\": [\"y\"]",
                           "\"outputs\": [\"y\"], \"drop_missing\": true"),
                   Csv(200)),
              "data.drop_missing is for mlp models only");
}

std::string RandomSplitSpec(const std::string& split) {
  return Replace(kMlpSpec, "\"model\"", "\"split\": " + split + ", \"model\"");
}

TEST(RandomSplitSpecTest, SizesAndDeterminismFollowTheShuffleSeed) {
  const std::string json =
      RandomSplitSpec(R"({"test_fraction": 0.2, "shuffle_seed": 2024})");
  DataSummary summary;
  auto a = LoadData(json, CategoricalCsv(200), &summary);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(summary.train_rows, 160);
  EXPECT_EQ(summary.test_rows, 40);
  EXPECT_EQ(summary.validation_rows, 0);
  std::vector<int> all = RowsOfTable(a->train_table);
  const std::vector<int> test = RowsOfTable(a->test_table);
  all.insert(all.end(), test.begin(), test.end());
  std::sort(all.begin(), all.end());
  for (int i = 0; i < 200; ++i) EXPECT_EQ(all[i], i + 1);
  // The job seed does not move the split; the shuffle seed does.
  auto b = LoadData(Replace(json, "\"seed\": 1", "\"seed\": 99"),
                    CategoricalCsv(200));
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(RowsOfTable(a->test_table), RowsOfTable(b->test_table));
  EXPECT_EQ(a->train_table.x, b->train_table.x);
  auto c = LoadData(Replace(json, "2024", "2025"), CategoricalCsv(200));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_NE(RowsOfTable(a->test_table), RowsOfTable(c->test_table));
}

TEST(RandomSplitSpecTest, ValidationFractionAndTrainFraction) {
  DataSummary summary;
  auto full = LoadData(
      RandomSplitSpec(R"({"test_fraction": 0.2, "validation_fraction": 0.1})"),
      CategoricalCsv(200), &summary);
  ASSERT_TRUE(full.ok()) << full.status();
  EXPECT_EQ(summary.train_rows, 140);
  EXPECT_EQ(summary.validation_rows, 20);
  EXPECT_EQ(summary.test_rows, 40);
  // train_fraction keeps a prefix of the shuffled training rows; the held-out
  // splits do not change.
  auto half = LoadData(RandomSplitSpec(R"({"test_fraction": 0.2,
      "validation_fraction": 0.1, "train_fraction": 0.5})"),
                       CategoricalCsv(200), &summary);
  ASSERT_TRUE(half.ok()) << half.status();
  EXPECT_EQ(summary.train_rows, 70);
  EXPECT_EQ(half->train_table.x, full->train_table.x.leftCols(70));
  EXPECT_EQ(half->test_table.x, full->test_table.x);
  EXPECT_EQ(half->validation_table.x, full->validation_table.x);
}

// A sweep chooses on the validation split: for every way of splitting, its
// rows are never test rows (nor training rows).
TEST(RandomSplitSpecTest, ValidationRowsAreNeverTestRows) {
  const std::string splits[] = {
      R"({"train": [{"first": 1, "last": 120}],
          "validation": [{"first": 121, "last": 160}],
          "test": [{"first": 161, "last": 200}]})",
      R"({"train": [{"first": 41, "last": 160}],
          "validation": [{"first": 1, "last": 20}, {"first": 181, "last": 200}],
          "test": [{"first": 21, "last": 40}, {"first": 161, "last": 180}]})",
      R"({"test_fraction": 0.2, "validation_fraction": 0.1})",
      R"({"test_fraction": 0.3, "validation_fraction": 0.3,
          "shuffle_seed": 7})",
      R"({"test_fraction": 0.2, "validation_fraction": 0.1,
          "train_fraction": 0.5})",
  };
  for (const std::string& split : splits) {
    SCOPED_TRACE(split);
    auto data = LoadData(RandomSplitSpec(split), CategoricalCsv(200));
    ASSERT_TRUE(data.ok()) << data.status();
    std::vector<int> validation = RowsOfTable(data->validation_table);
    std::vector<int> test = RowsOfTable(data->test_table);
    std::vector<int> train = RowsOfTable(data->train_table);
    ASSERT_FALSE(validation.empty());
    ASSERT_FALSE(test.empty());
    for (std::vector<int>* rows : {&validation, &test, &train}) {
      std::sort(rows->begin(), rows->end());
    }
    std::vector<int> shared;
    std::set_intersection(validation.begin(), validation.end(), test.begin(),
                          test.end(), std::back_inserter(shared));
    EXPECT_TRUE(shared.empty()) << shared.size() << " rows in both";
    std::set_intersection(validation.begin(), validation.end(), train.begin(),
                          train.end(), std::back_inserter(shared));
    EXPECT_TRUE(shared.empty()) << shared.size() << " rows in both";
  }
  // Ranges that overlap are refused, not split between the two.
  ExpectError(LoadData(RandomSplitSpec(R"({"train": [{"first": 1, "last": 120}],
      "validation": [{"first": 121, "last": 170}],
      "test": [{"first": 161, "last": 200}]})"),
                       CategoricalCsv(200))
                  .status(),
              "overlaps");
}

TEST(RandomSplitSpecTest, SplitsTheRowsLeftAfterDropping) {
  DataSummary summary;
  auto data = LoadData(
      Replace(RandomSplitSpec(R"({"test_fraction": 0.25})"), "\"categorical\"",
              "\"drop_missing\": true, \"categorical\""),
      CsvWithMissing(), &summary);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(summary.dropped_rows, 2);
  EXPECT_EQ(summary.train_rows, 6);
  EXPECT_EQ(summary.test_rows, 2);
}

TEST(RandomSplitSpecTest, RefusedWhereItDoesNotApply) {
  ExpectError(Load(Replace(kRnnSpec, "\"split\": {",
                           "\"split\": {\"test_fraction\": 0.2, "),
                   Csv(200)),
              "split.test_fraction (a random split) is for mlp models only");
  ExpectError(LoadData(RandomSplitSpec(R"({"validation_fraction": 0.2,
      "train": [{"first": 1, "last": 100}]})"),
                       CategoricalCsv(200))
                  .status(),
              "split.validation_fraction (a random split) cannot be combined "
              "with split.train/validation/test row ranges");
  ExpectError(
      LoadData(RandomSplitSpec(R"({"shuffle_seed": 5})"), CategoricalCsv(200))
          .status(),
      "split.shuffle_seed is set but");
  ExpectError(LoadData(RandomSplitSpec(R"({"test_fraction": 1.5})"),
                       CategoricalCsv(200))
                  .status(),
              "split.test_fraction is 1.5; it must be in [0, 1)");
  ExpectError(LoadData(RandomSplitSpec(R"({"test_fraction": 0.001})"),
                       CategoricalCsv(200))
                  .status(),
              "split.test_fraction is 0.001, which of 200 rows is no row");
}

// A service checks a spec against the dataset's raw header before the job
// runs: categorical columns are header names like any other.
TEST(ValidateDataSpecTest, AcceptsCategoricalColumnsOfTheRawHeader) {
  const std::vector<std::string> header = {"u", "c", "y", "z"};
  auto spec = ParseJobSpecJson(
      RandomSplitSpec(R"({"test_fraction": 0.2, "shuffle_seed": 3})"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(ValidateDataSpec(*spec, header, 200).ok());
  spec->mutable_data()->add_categorical("q");
  ExpectError(ValidateDataSpec(*spec, header, 200),
              "data.categorical[1] 'q' is not a column of the CSV");
}

// --- Image datasets (data.images, or image-dataset bytes). ---

// An mlp classifier on images, with `split` (JSON) as its split.
std::string ImageSpec(const std::string& split) {
  return R"({
    "data": {"images": {"images": ["i.gz"], "labels": ["l.gz"]}},
    "split": )" +
         split + R"(,
    "model": {"mlp": {"hidden": [4]}},
    "loss": {"kind": "LOSS_SOFTMAX_CROSS_ENTROPY"},
    "optimizer": {"lbfgs": {}},
    "stopping": {"max_epochs": 5},
    "seed": 1
  })";
}

// The data of an image spec, from image-dataset bytes as the worker has them.
absl::StatusOr<core::TrainData> LoadImages(const std::string& json,
                                           const core::data::ImageSet& set,
                                           DataSummary* summary = nullptr) {
  return LoadData(json, PackImageDataset(set), summary);
}

TEST(ImageDataTest, RangesIndexTheImages) {
  const core::data::ImageSet set = sparrow::testing::TinyImages(30);
  DataSummary summary;
  auto data = LoadImages(ImageSpec(R"({"train": [{"first": 1, "last": 20}],
                                       "validation": [{"first": 21, "last": 24}],
                                       "test": [{"first": 25, "last": 30}]})"),
                         set, &summary);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->train_table.num_samples(), 20);
  EXPECT_EQ(data->validation_table.num_samples(), 4);
  EXPECT_EQ(data->test_table.num_samples(), 6);
  EXPECT_EQ(data->train_table.x.rows(), 16);
  EXPECT_DOUBLE_EQ(data->train_table.x(0, 0), 200 / 255.0);
  EXPECT_DOUBLE_EQ(data->test_table.y(0, 0), 24 % 3);  // image 25
  EXPECT_EQ(data->train_table.image_height, 4);
  EXPECT_EQ(data->train_table.output_names[0], "label");
  EXPECT_EQ(summary.file_rows, 30);
  EXPECT_EQ(summary.train_rows, 20);
  EXPECT_EQ(summary.validation_rows, 4);
  EXPECT_EQ(summary.test_rows, 6);
  EXPECT_EQ(summary.inputs, 16);
  EXPECT_EQ(summary.outputs, 1);
}

TEST(ImageDataTest, TrainFractionAndRandomSplit) {
  const core::data::ImageSet set = sparrow::testing::TinyImages(40);
  auto prefix = LoadImages(
      ImageSpec(
          R"({"train": [{"first": 1, "last": 20}], "train_fraction": 0.5})"),
      set);
  ASSERT_TRUE(prefix.ok()) << prefix.status();
  EXPECT_EQ(prefix->train_table.num_samples(), 10);
  auto random = LoadImages(
      ImageSpec(R"({"test_fraction": 0.25, "shuffle_seed": 4})"), set);
  ASSERT_TRUE(random.ok()) << random.status();
  EXPECT_EQ(random->train_table.num_samples(), 30);
  EXPECT_EQ(random->test_table.num_samples(), 10);
}

TEST(ImageDataTest, ErrorsSayWhatIsWrong) {
  const core::data::ImageSet set = sparrow::testing::TinyImages(30);
  ExpectError(
      LoadImages(ImageSpec(R"({"train": [{"first": 1, "last": 31}]})"), set)
          .status(),
      "split.train");
  ExpectError(LoadImages(ImageSpec(R"({"train": [{"first": 1, "last": 20}],
                                       "test": [{"first": 15, "last": 30}]})"),
                         set)
                  .status(),
              "split.test overlaps split.train at rows 15-20");
  ExpectError(LoadImages(Replace(ImageSpec("{}"), "\"images\": {",
                                 "\"inputs\": [\"u\"], \"images\": {"),
                         set)
                  .status(),
              "data.inputs is set but the data are images");
  ExpectError(
      LoadImages(
          Replace(Replace(ImageSpec("{}"), R"({"mlp": {"hidden": [4]}})",
                          R"({"state_space_rnn": {"nx": 2, "fx_hidden": [3],
                                                  "fy_hidden": [3]}})"),
                  "LOSS_SOFTMAX_CROSS_ENTROPY", "LOSS_MSE"),
          set)
          .status(),
      "is a sequence model but the data are images");
  ExpectError(LoadData(ImageSpec("{}"), "u,y\n1,2\n").status(),
              "data.images names IDX files, but the data given are not");
}

TEST(ImageDataTest, ValidateChecksRangesAgainstTheImageCount) {
  auto spec =
      ParseJobSpecJson(ImageSpec(R"({"train": [{"first": 1, "last": 100}]})"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(ValidateImageDataSpec(*spec, 100).ok());
  EXPECT_TRUE(ValidateImageDataSpec(*spec, 0).ok());
  ExpectError(ValidateImageDataSpec(*spec, 99), "split.train");
  ExpectError(ValidateDataSpec(*spec, {}, 99), "split.train");
}

TEST(ImageDataTest, LoadsTheLocalFiles) {
  const core::data::ImageSet set = sparrow::testing::TinyImages(12);
  v1::ImageFiles files;
  files.add_images(sparrow::testing::WriteTemp(
      "data-img.gz",
      sparrow::testing::Gzip(core::data::SerializeIdxImages(set))));
  files.add_labels(sparrow::testing::WriteTemp(
      "data-lab", core::data::SerializeIdxLabels(set.labels)));
  auto read = ReadImageFiles(files);
  ASSERT_TRUE(read.ok()) << read.status();
  auto spec = ParseJobSpecJson(ImageSpec("{}"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto config = ToTrainConfig(*spec);
  ASSERT_TRUE(config.ok()) << config.status();
  auto data = LoadImageTrainData(*spec, *config, *read);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->train_table.num_samples(), 12);
}

}  // namespace
}  // namespace sparrow::translate
