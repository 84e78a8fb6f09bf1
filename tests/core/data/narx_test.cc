#include "core/data/narx.h"

#include <limits>
#include <string>
#include <vector>

#include "core/data/csv.h"
#include "core/data/dataset.h"
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

// One SISO trace: u(t) = t + 1, y(t) = 10 (t + 1), t = 0..n-1.
SequenceData Siso(int n) {
  SequenceData data;
  data.n_u = 1;
  data.n_y = 1;
  data.input_names = {"u"};
  data.output_names = {"y"};
  Trace trace;
  trace.u = Eigen::RowVectorXd::LinSpaced(n, 1, n);
  trace.y = 10 * trace.u;
  data.traces.push_back(trace);
  return data;
}

TEST(NarxLagsTest, DimensionAndMaxLag) {
  EXPECT_EQ((NarxLags{2, 1, true}).dimension(1, 1), 4);
  EXPECT_EQ((NarxLags{2, 1, false}).dimension(1, 1), 3);
  EXPECT_EQ((NarxLags{2, 3, true}).dimension(2, 3), 2 * 3 + 3 * 3);
  EXPECT_EQ((NarxLags{0, 0, true}).dimension(2, 1), 2);
  EXPECT_EQ((NarxLags{2, 5, true}).max_lag(), 5);
  EXPECT_EQ((NarxLags{4, 1, true}).max_lag(), 4);
}

TEST(NarxLagsTest, Validate) {
  EXPECT_TRUE(ValidateNarxLags(NarxLags{}).ok());  // Static map u(t) -> y(t).
  EXPECT_TRUE(ValidateNarxLags(NarxLags{0, 2, false}).ok());
  EXPECT_THAT(Message(ValidateNarxLags(NarxLags{-1, 2, true})),
              HasSubstr("input_lags = -1"));
  EXPECT_THAT(Message(ValidateNarxLags(NarxLags{1, -3, true})),
              HasSubstr("output_lags = -3"));
  EXPECT_THAT(Message(ValidateNarxLags(
                  NarxLags{std::numeric_limits<int>::max(), 0, true})),
              HasSubstr("out of range"));
  const absl::Status empty = ValidateNarxLags(NarxLags{0, 0, false});
  EXPECT_EQ(empty.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(empty), HasSubstr("empty"));
}

// Hand-checked: input_lags 2, output_lags 1, feed-through, so max_lag = 2 and
// z(t) = [u(t), u(t-1), u(t-2), y(t-1)] for t = 2, 3, 4.
TEST(BuildNarxRegressorsTest, SisoByHand) {
  absl::StatusOr<TableData> table =
      BuildNarxRegressors(Siso(5), NarxLags{2, 1, true});
  ASSERT_TRUE(table.ok()) << table.status();
  Eigen::MatrixXd x(4, 3), y(1, 3);
  x << 3, 4, 5,  //
      2, 3, 4,   //
      1, 2, 3,   //
      20, 30, 40;
  y << 30, 40, 50;
  EXPECT_EQ(table->x, x);
  EXPECT_EQ(table->y, y);
  EXPECT_THAT(table->input_names,
              ElementsAre("u(t)", "u(t-1)", "u(t-2)", "y(t-1)"));
  EXPECT_THAT(table->output_names, ElementsAre("y"));
}

// Two inputs, two outputs, no feed-through: each lag block lists all channels.
TEST(BuildNarxRegressorsTest, MimoChannelOrder) {
  SequenceData data;
  data.n_u = 2;
  data.n_y = 2;
  data.input_names = {"a", "b"};
  data.output_names = {"p", "q"};
  Trace trace;
  trace.u.resize(2, 3);
  trace.u << 1, 2, 3,  //
      -1, -2, -3;
  trace.y.resize(2, 3);
  trace.y << 10, 20, 30,  //
      -10, -20, -30;
  data.traces.push_back(trace);
  absl::StatusOr<TableData> table =
      BuildNarxRegressors(data, NarxLags{1, 2, false});
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_EQ(table->x.rows(), NarxLags({1, 2, false}).dimension(2, 2));
  ASSERT_EQ(table->num_samples(), 1);  // Only t = 2.
  Eigen::VectorXd z(6);
  z << 2, -2, 20, -20, 10, -10;
  EXPECT_EQ(table->x.col(0), z);
  EXPECT_EQ(table->y.col(0), Eigen::Vector2d(30, -30));
  EXPECT_THAT(table->input_names, ElementsAre("a(t-1)", "b(t-1)", "p(t-1)",
                                              "q(t-1)", "p(t-2)", "q(t-2)"));
}

TEST(BuildNarxRegressorsTest, ConcatenatesTracesWithoutCrossingThem) {
  SequenceData data = Siso(4);
  data.traces.push_back(Siso(3).traces[0]);
  data.traces[1].u.array() += 100;
  absl::StatusOr<TableData> table =
      BuildNarxRegressors(data, NarxLags{1, 1, false});
  ASSERT_TRUE(table.ok()) << table.status();
  // Trace 0 gives t = 1, 2, 3; trace 1 gives t = 1, 2.
  ASSERT_EQ(table->num_samples(), 5);
  EXPECT_EQ(table->x.col(3), Eigen::Vector2d(101, 10));
  EXPECT_EQ(table->y(0, 3), 20.0);
}

TEST(BuildNarxRegressorsTest, RejectsLagLongerThanTrace) {
  SequenceData data = Siso(10);
  data.traces.push_back(Siso(3).traces[0]);
  absl::StatusOr<TableData> table =
      BuildNarxRegressors(data, NarxLags{3, 1, true});
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(table.status()),
              HasSubstr("lag 3 is longer than trace 1 (3 samples)"));
  EXPECT_TRUE(BuildNarxRegressors(data, NarxLags{2, 1, true}).ok());
}

TEST(BuildNarxRegressorsTest, RejectsInconsistentData) {
  SequenceData data = Siso(5);
  data.traces[0].y.resize(1, 4);
  EXPECT_THAT(Message(BuildNarxRegressors(data, NarxLags{1, 1, true}).status()),
              HasSubstr("trace 0"));
  data = Siso(5);
  data.n_y = 2;
  EXPECT_FALSE(BuildNarxRegressors(data, NarxLags{1, 1, true}).ok());
  data = Siso(5);
  data.traces.clear();
  EXPECT_THAT(Message(BuildNarxRegressors(data, NarxLags{1, 1, true}).status()),
              HasSubstr("no traces"));
  EXPECT_FALSE(BuildNarxRegressors(Siso(5), NarxLags{-1, 1, true}).ok());
}

// Free-run simulation passes its own outputs; only columns before t are read.
TEST(FillNarxRegressorTest, ReadsOnlyPastOfOutputHistory) {
  const SequenceData data = Siso(6);
  const NarxLags lags{1, 2, true};
  Eigen::MatrixXd y_hist =
      Eigen::MatrixXd::Constant(1, 6, std::numeric_limits<double>::quiet_NaN());
  y_hist(0, 1) = -1.0;
  y_hist(0, 2) = -2.0;
  Eigen::VectorXd z(lags.dimension(1, 1));
  FillNarxRegressor(lags, data.traces[0].u, y_hist, 3, z);
  Eigen::VectorXd expected(4);
  expected << 4, 3, -2, -1;
  EXPECT_EQ(z, expected);
}

// CSV text -> sequences -> regressors, as a training job does it.
TEST(NarxPipelineTest, FromCsvBuffer) {
  absl::StatusOr<CsvTable> table =
      ParseCsv("\"uEst\",\"yEst\",\"Ts\",\n1,10,4,\n2,20,,\n3,30,,\n4,40,,\n\n",
               {"uEst", "yEst"});
  ASSERT_TRUE(table.ok()) << table.status();
  absl::StatusOr<std::vector<int>> u = ResolveColumns(table->header, {"uEst"});
  absl::StatusOr<std::vector<int>> y = ResolveColumns(table->header, {"yEst"});
  ASSERT_TRUE(u.ok() && y.ok());
  absl::StatusOr<SequenceData> data =
      MakeSequences(*table, *u, *y, {{1, 4}}, -1, {});
  ASSERT_TRUE(data.ok()) << data.status();
  absl::StatusOr<TableData> regressors =
      BuildNarxRegressors(*data, NarxLags{1, 1, true});
  ASSERT_TRUE(regressors.ok()) << regressors.status();
  EXPECT_THAT(regressors->input_names,
              ElementsAre("uEst(t)", "uEst(t-1)", "yEst(t-1)"));
  ASSERT_EQ(regressors->num_samples(), 3);
  EXPECT_EQ(regressors->x.col(2), Eigen::Vector3d(4, 3, 30));
  EXPECT_EQ(regressors->y(0, 2), 40.0);
}

}  // namespace
}  // namespace sparrow::core::data
