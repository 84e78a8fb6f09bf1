#include "core/data/dataset.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/data/csv.h"
#include "core/util/random.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sparrow::core::data {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Message(const absl::Status& status) {
  return std::string(status.message());
}

// Columns: trace id, u, y, w; rows r = 1..8 hold u = r, y = 10 r, w = 100 r.
CsvTable SmallTable() {
  absl::StatusOr<CsvTable> table = ParseCsv(
      "id,u,y,w\n"
      "1,1,10,100\n"
      "1,2,20,200\n"
      "1,3,30,300\n"
      "2,4,40,400\n"
      "2,5,50,500\n"
      "3,6,60,600\n"
      "3,7,70,700\n"
      "3,8,80,800\n");
  EXPECT_TRUE(table.ok()) << table.status();
  return *table;
}

std::vector<int> Lengths(const SequenceData& data) {
  std::vector<int> lengths;
  for (const Trace& trace : data.traces) lengths.push_back(trace.length());
  return lengths;
}

TEST(ValidateRangesTest, AcceptsValidAndEmptyLists) {
  EXPECT_TRUE(ValidateRanges({}, 10, "split.train").ok());
  EXPECT_TRUE(
      ValidateRanges({{1, 10}, {3, 3}, {2, 5}}, 10, "split.train").ok());
}

TEST(ValidateRangesTest, RejectsFirstBelowOne) {
  const absl::Status status =
      ValidateRanges({{1, 4}, {0, 5}}, 10, "split.train");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(status), AllOf(HasSubstr("split.train[1] = rows 0..5"),
                                     HasSubstr("at least 1")));
}

TEST(ValidateRangesTest, RejectsLastBeforeFirst) {
  const absl::Status status = ValidateRanges({{7, 6}}, 10, "split.test");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(status), AllOf(HasSubstr("split.test[0] = rows 7..6"),
                                     HasSubstr("last is before first")));
}

TEST(ValidateRangesTest, RejectsLastBeyondTableNamingItsSize) {
  const absl::Status status = ValidateRanges({{1, 2000}}, 1024, "split.train");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(status), AllOf(HasSubstr("split.train[0] = rows 1..2000"),
                                     HasSubstr("1024 data rows")));
}

TEST(MakeTableTest, ConcatenatesRangesInOrder) {
  const CsvTable table = SmallTable();
  absl::StatusOr<TableData> data =
      MakeTable(table, {1, 3}, {2}, {{7, 8}, {2, 3}});
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_THAT(data->input_names, ElementsAre("u", "w"));
  EXPECT_THAT(data->output_names, ElementsAre("y"));
  ASSERT_EQ(data->num_samples(), 4);
  Eigen::MatrixXd x(2, 4), y(1, 4);
  x << 7, 8, 2, 3, 700, 800, 200, 300;
  y << 70, 80, 20, 30;
  EXPECT_EQ(data->x, x);
  EXPECT_EQ(data->y, y);
}

TEST(MakeTableTest, RejectsBadColumns) {
  const CsvTable table = SmallTable();
  EXPECT_THAT(Message(MakeTable(table, {}, {2}, {{1, 8}}).status()),
              HasSubstr("no input columns"));
  EXPECT_THAT(Message(MakeTable(table, {1}, {}, {{1, 8}}).status()),
              HasSubstr("no output columns"));
  EXPECT_THAT(Message(MakeTable(table, {1, 4}, {2}, {{1, 8}}).status()),
              AllOf(HasSubstr("input column index 4"), HasSubstr("4 columns")));
  EXPECT_THAT(Message(MakeTable(table, {1}, {-1}, {{1, 8}}).status()),
              HasSubstr("output column index -1"));
  EXPECT_THAT(Message(MakeTable(table, {1, 2}, {2}, {{1, 8}}).status()),
              HasSubstr("column 'y' is both an input and an output"));
  EXPECT_THAT(Message(MakeTable(table, {1, 1}, {2}, {{1, 8}}).status()),
              HasSubstr("column 'u' is listed twice among the inputs"));
}

TEST(MakeTableTest, RejectsBadRanges) {
  const CsvTable table = SmallTable();
  EXPECT_THAT(Message(MakeTable(table, {1}, {2}, {}).status()),
              AllOf(HasSubstr("no row ranges"), HasSubstr("{1, 8}")));
  EXPECT_THAT(Message(MakeTable(table, {1}, {2}, {{1, 9}}).status()),
              AllOf(HasSubstr("rows 1..9"), HasSubstr("8 data rows")));
}

TEST(MakeSequencesTest, OneTracePerRange) {
  const CsvTable table = SmallTable();
  absl::StatusOr<SequenceData> data =
      MakeSequences(table, {1}, {2, 3}, {{1, 3}, {4, 8}}, -1, {});
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->n_u, 1);
  EXPECT_EQ(data->n_y, 2);
  EXPECT_THAT(data->input_names, ElementsAre("u"));
  EXPECT_THAT(data->output_names, ElementsAre("y", "w"));
  EXPECT_THAT(Lengths(*data), ElementsAre(3, 5));
  EXPECT_EQ(data->total_samples(), 8);
  Eigen::MatrixXd u(1, 5), y(2, 5);
  u << 4, 5, 6, 7, 8;
  y << 40, 50, 60, 70, 80, 400, 500, 600, 700, 800;
  EXPECT_EQ(data->traces[1].u, u);
  EXPECT_EQ(data->traces[1].y, y);
}

TEST(MakeSequencesTest, CutsTracesWhereTraceColumnChanges) {
  const CsvTable table = SmallTable();
  absl::StatusOr<SequenceData> data =
      MakeSequences(table, {1}, {2}, {{1, 8}}, 0, {});
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_THAT(Lengths(*data), ElementsAre(3, 2, 3));
  EXPECT_EQ(data->traces[2].u(0, 0), 6.0);
  // A range cut inside traces keeps its own ends.
  data = MakeSequences(table, {1}, {2}, {{2, 7}}, 0, {});
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_THAT(Lengths(*data), ElementsAre(2, 2, 2));
  EXPECT_EQ(data->traces[0].u(0, 0), 2.0);
  EXPECT_EQ(data->traces[2].u(0, 1), 7.0);
}

TEST(MakeSequencesTest, CutsTracesAtTraceStarts) {
  const CsvTable table = SmallTable();
  // Unordered, duplicated, and one at the start of the range.
  absl::StatusOr<SequenceData> data =
      MakeSequences(table, {1}, {2}, {{1, 8}}, -1, {6, 1, 4, 6});
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_THAT(Lengths(*data), ElementsAre(3, 2, 3));
  EXPECT_EQ(data->traces[1].y(0, 1), 50.0);
}

TEST(MakeSequencesTest, RejectsOneSampleTraceNamingItsRows) {
  const CsvTable table = SmallTable();
  absl::StatusOr<SequenceData> data =
      MakeSequences(table, {1}, {2}, {{3, 8}}, 0, {});
  ASSERT_FALSE(data.ok());
  EXPECT_EQ(data.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(data.status()),
              AllOf(HasSubstr("rows 3..3"), HasSubstr("ranges[0] = rows 3..8"),
                    HasSubstr("at least 2"), HasSubstr("trace column 'id'")));
  data = MakeSequences(table, {1}, {2}, {{1, 8}}, -1, {8});
  ASSERT_FALSE(data.ok());
  EXPECT_THAT(Message(data.status()),
              AllOf(HasSubstr("rows 8..8"), HasSubstr("trace_starts")));
  data = MakeSequences(table, {1}, {2}, {{1, 4}, {5, 5}}, -1, {});
  ASSERT_FALSE(data.ok());
  EXPECT_THAT(Message(data.status()), HasSubstr("ranges[1] = rows 5..5"));
}

TEST(MakeSequencesTest, RejectsBadTraceBoundaries) {
  const CsvTable table = SmallTable();
  EXPECT_THAT(
      Message(MakeSequences(table, {1}, {2}, {{1, 8}}, 0, {4}).status()),
      HasSubstr("give one of them"));
  EXPECT_THAT(Message(MakeSequences(table, {1}, {2}, {{1, 8}}, 4, {}).status()),
              HasSubstr("trace column index 4 is out of range"));
  EXPECT_THAT(
      Message(MakeSequences(table, {1}, {2}, {{1, 8}}, -2, {}).status()),
      HasSubstr("trace column index -2"));
  EXPECT_THAT(
      Message(MakeSequences(table, {1}, {2}, {{1, 8}}, -1, {9}).status()),
      AllOf(HasSubstr("trace_starts[0] = 9"), HasSubstr("1 to 8")));
  EXPECT_THAT(
      Message(MakeSequences(table, {1}, {2}, {{1, 8}}, -1, {0}).status()),
      HasSubstr("trace_starts[0] = 0"));
}

TEST(MakeSequencesTest, RejectsBadColumnsAndRanges) {
  const CsvTable table = SmallTable();
  EXPECT_THAT(
      Message(MakeSequences(table, {1}, {1}, {{1, 8}}, -1, {}).status()),
      HasSubstr("both an input and an output"));
  EXPECT_THAT(Message(MakeSequences(table, {1}, {2}, {}, -1, {}).status()),
              HasSubstr("no row ranges"));
  EXPECT_THAT(
      Message(MakeSequences(table, {1}, {2}, {{5, 4}}, -1, {}).status()),
      AllOf(HasSubstr("ranges[0] = rows 5..4"), HasSubstr("no data")));
}

TEST(RowsOfTest, ListsTheRowsOfAllRangesInOrder) {
  EXPECT_THAT(RowsOf({{5, 6}, {1, 2}}), ElementsAre(5, 6, 1, 2));
  EXPECT_TRUE(RowsOf({}).empty());
}

TEST(CompleteRowsTest, LeavesOutRowsWithANan) {
  CsvOptions options;
  options.keep_missing = true;
  options.categorical = {"c"};
  absl::StatusOr<CsvTable> table =
      ParseCsv("a,c\n1,x\nNA,x\n3,\n4,y\n", options);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(CompleteRows(*table), ElementsAre(1, 4));
}

std::vector<int64_t> Iota(int64_t n) {
  std::vector<int64_t> rows(n);
  for (int64_t i = 0; i < n; ++i) rows[i] = i + 1;
  return rows;
}

std::vector<int64_t> Sorted(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(RandomSplitTest, SizesAreRoundedFractionsAndTheSplitsPartitionTheRows) {
  absl::StatusOr<RowSplit> split = RandomSplit(Iota(9568), 0.1, 0.2, 2024, "s");
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ(split->test.size(), 1914u);  // round(1913.6)
  EXPECT_EQ(split->validation.size(), 957u);
  EXPECT_EQ(split->train.size(), 9568u - 1914u - 957u);
  std::vector<int64_t> all = split->train;
  all.insert(all.end(), split->validation.begin(), split->validation.end());
  all.insert(all.end(), split->test.begin(), split->test.end());
  EXPECT_EQ(Sorted(all), Iota(9568));
  // A permutation, not the file order.
  EXPECT_NE(split->train, Sorted(split->train));
}

TEST(RandomSplitTest, IsDeterministicInTheSeed) {
  const auto a = RandomSplit(Iota(1000), 0.0, 0.2, 7, "s");
  const auto b = RandomSplit(Iota(1000), 0.0, 0.2, 7, "s");
  const auto c = RandomSplit(Iota(1000), 0.0, 0.2, 8, "s");
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->train, b->train);
  EXPECT_EQ(a->test, b->test);
  EXPECT_NE(Sorted(a->test), Sorted(c->test));
  EXPECT_TRUE(a->validation.empty());
}

// The permutation is core::Rng's Fisher-Yates, fixed for every platform.
TEST(RandomSplitTest, PermutationIsPinned) {
  const auto split = RandomSplit(Iota(10), 0.0, 0.3, 2024, "s");
  ASSERT_TRUE(split.ok());
  std::vector<int64_t> rows = Iota(10);
  Rng(2024).Shuffle(&rows);
  EXPECT_EQ(split->test, std::vector<int64_t>(rows.begin() + 7, rows.end()));
  EXPECT_EQ(split->train, std::vector<int64_t>(rows.begin(), rows.begin() + 7));
}

TEST(RandomSplitTest, RejectsBadFractionsNamingTheField) {
  EXPECT_THAT(Message(RandomSplit(Iota(10), 0.0, 1.0, 1, "split").status()),
              HasSubstr("split.test_fraction is 1; it must be in [0, 1)"));
  EXPECT_THAT(Message(RandomSplit(Iota(10), -0.1, 0.2, 1, "split").status()),
              HasSubstr("split.validation_fraction is -0.1"));
  EXPECT_THAT(Message(RandomSplit(Iota(10), 0.0, 0.01, 1, "split").status()),
              HasSubstr("split.test_fraction is 0.01, which of 10 rows is no "
                        "row"));
  EXPECT_THAT(Message(RandomSplit(Iota(4), 0.5, 0.45, 1, "split").status()),
              HasSubstr("leaving none for training"));
}

TEST(MakeTableFromRowsTest, GathersRowsInTheOrderGiven) {
  const CsvTable table = SmallTable();
  absl::StatusOr<TableData> data =
      MakeTableFromRows(table, {1}, {2}, {8, 2, 5});
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->x, (Eigen::MatrixXd(1, 3) << 8, 2, 5).finished());
  EXPECT_EQ(data->y, (Eigen::MatrixXd(1, 3) << 80, 20, 50).finished());
  EXPECT_THAT(data->input_names, ElementsAre("u"));
  EXPECT_THAT(Message(MakeTableFromRows(table, {1}, {2}, {}).status()),
              HasSubstr("no rows"));
  EXPECT_THAT(Message(MakeTableFromRows(table, {1}, {2}, {9}).status()),
              HasSubstr("row 9 is outside the table's data rows 1 to 8"));
  EXPECT_THAT(Message(MakeTableFromRows(table, {1}, {1}, {1}).status()),
              HasSubstr("both an input and an output"));
}

TEST(SubsequencesTest, WindowsTileEachTraceAfterTheirWarmup) {
  Trace a{Eigen::RowVectorXd::LinSpaced(10, 0, 9),
          Eigen::RowVectorXd::LinSpaced(10, 100, 109)};
  Trace b{Eigen::RowVectorXd::LinSpaced(4, 20, 23),
          Eigen::RowVectorXd::LinSpaced(4, 120, 123)};
  // warmup 2, length 3: a's predicted samples 2-4, 5-7, 8-9; b's 2-3.
  const std::vector<Trace> w = Subsequences({a, b}, 2, 3, 3);
  ASSERT_EQ(w.size(), 4u);
  EXPECT_EQ(w[0].u(0, 0), 0);
  EXPECT_EQ(w[0].length(), 5);
  EXPECT_EQ(w[1].u(0, 0), 3);  // its encoder reads samples 3-4
  EXPECT_EQ(w[1].y(0, 2), 105);
  EXPECT_EQ(w[2].u(0, 0), 6);
  EXPECT_EQ(w[2].length(), 4);  // the remainder: 8-9
  EXPECT_EQ(w[3].u(0, 0), 20);
  EXPECT_EQ(w[3].length(), 4);
  // Overlapping windows (stride 1), and none from a trace too short for two
  // predicted samples.
  EXPECT_EQ(Subsequences({a}, 2, 3, 1).size(), 7u);
  EXPECT_TRUE(Subsequences({b}, 3, 3, 3).empty());
}

}  // namespace
}  // namespace sparrow::core::data
