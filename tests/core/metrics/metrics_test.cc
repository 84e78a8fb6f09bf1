#include "core/metrics/metrics.h"

#include <cmath>

#include "gtest/gtest.h"

namespace sparrow::core {
namespace {

using Eigen::MatrixXd;

TEST(MetricsTest, RmseAndNrmse) {
  MatrixXd y(1, 4), yhat(1, 4);
  y << 1, 2, 3, 4;
  yhat << 1, 2, 3, 6;
  EXPECT_DOUBLE_EQ(Rmse(y, yhat), 1.0);
  EXPECT_NEAR(Nrmse(y, yhat), 1.0 / std::sqrt(1.25), 1e-12);
}

TEST(MetricsTest, BestFitRate) {
  MatrixXd y(1, 4);
  y << 1, 2, 3, 4;
  EXPECT_DOUBLE_EQ(Bfr(y, y), 100.0);
  EXPECT_NEAR(Bfr(y, MatrixXd::Constant(1, 4, 2.5)), 0.0, 1e-12);
  // BFR = 100 (1 - |y - yhat| / |y - mean y|): error norm 1 against spread
  // sqrt(5).
  MatrixXd yhat = y;
  yhat(0, 0) += 1.0;
  EXPECT_NEAR(Bfr(y, yhat), 100.0 * (1.0 - 1.0 / std::sqrt(5.0)), 1e-12);
  // Invariant to an affine change of units applied to both.
  EXPECT_NEAR(Bfr(3.0 * y.array() + 7.0, 3.0 * yhat.array() + 7.0),
              Bfr(y, yhat), 1e-12);
}

TEST(MetricsTest, AccuracyBinaryAndMulticlass) {
  MatrixXd y(1, 4), p(1, 4);
  y << 1, 0, 1, 0;
  p << 0.9, 0.2, 0.4, 0.5;
  EXPECT_DOUBLE_EQ(Accuracy(y, p, false), 50.0);
  MatrixXd y2(2, 2), p2(2, 2);
  y2 << 1, 0, 1, 1;
  p2 << 0.9, 0.1, 0.2, 0.7;
  EXPECT_DOUBLE_EQ(Accuracy(y2, p2, false), 75.0);
  MatrixXd oh(3, 2), logits(3, 2);
  oh << 1, 0, 0, 0, 0, 1;
  logits << 2, 0, 1, 0, 0, 5;
  EXPECT_DOUBLE_EQ(Accuracy(oh, logits, true), 100.0);
}

TEST(MetricsTest, SparsityCountsExactZeros) {
  Eigen::VectorXd w(8);
  w << 0, 1e-300, 0, 2, 0, -1, 0, 0;
  const Sparsity s = ComputeSparsity(w);
  EXPECT_EQ(s.zeros, 5);
  EXPECT_EQ(s.total, 8);
  EXPECT_DOUBLE_EQ(s.zero_pct, 62.5);
  EXPECT_DOUBLE_EQ(s.remaining_pct, 37.5);
}

TEST(MetricsTest, EmptyInputIsNan) {
  EXPECT_TRUE(std::isnan(Rmse(MatrixXd(1, 0), MatrixXd(1, 0))));
  EXPECT_TRUE(std::isnan(Bfr(MatrixXd(1, 0), MatrixXd(1, 0))));
}

// BFR compares the error with the output's spread: with none (one sample, or
// a constant output) it is undefined, not -Inf.
TEST(MetricsTest, BfrOfAConstantOutputIsNan) {
  EXPECT_TRUE(std::isnan(
      Bfr(MatrixXd::Constant(1, 1, 3.0), MatrixXd::Constant(1, 1, 2.0))));
  MatrixXd two(2, 3);
  two << 1, 2, 3, 5, 5, 5;  // the second output is constant
  EXPECT_TRUE(std::isnan(Bfr(two, two)));
}

}  // namespace
}  // namespace sparrow::core
