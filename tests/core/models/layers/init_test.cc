#include "core/models/layers/init.h"

#include <Eigen/Dense>
#include <cmath>

#include "core/models/layers/lstm.h"
#include "core/models/layers/rnn.h"
#include "gtest/gtest.h"

namespace sparrow::core {
namespace {

using Eigen::Map;
using Eigen::MatrixXd;
using Eigen::VectorXd;

// True when a is sigma0 times an orthogonal matrix.
bool ScaledOrthogonal(const MatrixXd& a, double sigma0) {
  const MatrixXd eye = MatrixXd::Identity(a.cols(), a.cols());
  return (a.transpose() * a / (sigma0 * sigma0) - eye).cwiseAbs().maxCoeff() <
         1e-13;
}

TEST(InitOrthogonalTest, WritesAScaledOrthogonalBlockIntoItsRows) {
  const int n = 5, ld = 12;
  MatrixXd w = MatrixXd::Constant(ld, n, 7.0);
  Rng rng(3);
  InitOrthogonal(0.5, n, ld, &rng, w.data() + 4);
  EXPECT_TRUE(ScaledOrthogonal(w.middleRows(4, n), 0.5));
  // The rows outside the block keep their values.
  EXPECT_TRUE((w.topRows(4).array() == 7.0).all());
  EXPECT_TRUE((w.bottomRows(ld - 4 - n).array() == 7.0).all());
}

TEST(InitOrthogonalTest, IsDeterministicPerSeedAndDiffersBetweenSeeds) {
  const int n = 6;
  MatrixXd a(n, n), b(n, n), c(n, n);
  Rng r1(9), r2(9), r3(10);
  InitOrthogonal(1.0, n, n, &r1, a.data());
  InitOrthogonal(1.0, n, n, &r2, b.data());
  InitOrthogonal(1.0, n, n, &r3, c.data());
  EXPECT_EQ(a, b);
  EXPECT_GT((a - c).cwiseAbs().maxCoeff(), 0.1);
}

// Under the Haar law E[Q_ij] = 0, E[Q_ij^2] = 1/n, det(Q) is +1 or -1 with
// probability 1/2 each, and two diagonal entries are uncorrelated. Without the
// sign fix Q's diagonal is biased and det(Q) has one sign; a fix by rows
// instead of columns correlates the diagonal.
TEST(InitOrthogonalTest, DrawsFollowTheHaarLaw) {
  const int n = 3, draws = 20000;
  MatrixXd sum = MatrixXd::Zero(n, n), sum_sq = MatrixXd::Zero(n, n);
  MatrixXd q(n, n);
  Rng rng(11);
  int positive = 0;
  double diag_product = 0.0;
  for (int k = 0; k < draws; ++k) {
    InitOrthogonal(1.0, n, n, &rng, q.data());
    sum += q;
    sum_sq += q.cwiseProduct(q);
    positive += q.determinant() > 0.0;
    diag_product += q(0, 0) * q(1, 1);
  }
  // Standard errors: below 0.0041 for a mean entry, the share and the mean
  // product.
  EXPECT_LT((sum / draws).cwiseAbs().maxCoeff(), 0.02);
  EXPECT_LT((sum_sq / draws).maxCoeff(), 1.0 / n + 0.02);
  EXPECT_GT((sum_sq / draws).minCoeff(), 1.0 / n - 0.02);
  EXPECT_NEAR(static_cast<double>(positive) / draws, 0.5, 0.02);
  EXPECT_NEAR(diag_product / draws, 0.0, 0.02);
}

TEST(InitOrthogonalTest, RnnRecurrentWeightsAreOrthogonalAndBiasesZero) {
  const int h = 7;
  const RnnLayer layer(3, 4, h, false, InitLaw::kOrthogonal);
  Rng rng(2);
  VectorXd theta(layer.num_params());
  layer.Initialize(0.8, &rng, theta.data());
  const Map<const MatrixXd> v(theta.data() + layer.v_weight_offset(), h, h);
  EXPECT_TRUE(ScaledOrthogonal(v, 0.8));
  EXPECT_TRUE(theta.segment(layer.b_offset(), h).isZero(0));
  EXPECT_TRUE(theta.segment(layer.v_bias_offset(), h).isZero(0));
  // W is drawn (Glorot-normal), not left at zero.
  EXPECT_FALSE(theta.head(4 * h).isZero(0));
}

TEST(InitOrthogonalTest, EachLstmGateBlockIsOrthogonal) {
  const int h = 5;
  const LstmLayer layer(3, 2, h, false, InitLaw::kOrthogonal);
  Rng rng(6);
  VectorXd theta(layer.num_params());
  layer.Initialize(1.0, &rng, theta.data());
  const Map<const MatrixXd> v(theta.data() + layer.v_weight_offset(), 4 * h, h);
  for (int g = 0; g < 4; ++g) {
    EXPECT_TRUE(ScaledOrthogonal(v.middleRows(g * h, h), 1.0)) << "gate " << g;
  }
  // The gates are drawn independently.
  EXPECT_GT((v.topRows(h) - v.middleRows(h, h)).cwiseAbs().maxCoeff(), 0.1);
}

}  // namespace
}  // namespace sparrow::core
