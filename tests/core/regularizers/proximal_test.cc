#include "core/regularizers/proximal.h"

#include "gtest/gtest.h"
#include "tests/testing/finite_difference.h"

namespace sparrow::core {
namespace {

using Eigen::VectorXd;

// prox_{c g}(v) minimizes c g(x) + |x - v|^2 / 2: no nearby point may do
// better.
void ExpectIsProximalPoint(const Proximal& g, double c, const VectorXd& v) {
  VectorXd x = v;
  g.Apply(c, x);
  const double best = c * g.Value(x) + 0.5 * (x - v).squaredNorm();
  Rng rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    VectorXd y = x;
    for (int i = 0; i < y.size(); ++i) y(i) += 0.05 * rng.Normal();
    if (trial % 3 == 0) y(trial % y.size()) = 0.0;
    EXPECT_GE(c * g.Value(y) + 0.5 * (y - v).squaredNorm(), best - 1e-12)
        << g.Name();
  }
}

TEST(ProximalTest, SoftThreshold) {
  auto g = MakeL1(2.0);
  VectorXd v(4);
  v << 3.0, -0.5, 0.9, -1.5;
  VectorXd x = v;
  g->Apply(0.5, x);  // threshold 1
  VectorXd want(4);
  want << 2.0, 0.0, 0.0, -0.5;
  EXPECT_EQ(x, want);
  ExpectIsProximalPoint(*g, 0.5, v);
}

TEST(ProximalTest, HardThresholdUsesTheCorrectedRule) {
  // Keep v_i iff v_i^2 >= 2 tau / rho (ALGORITHMS.md §2.9, not the paper's 2
  // rho / tau).
  auto g = MakeL0(0.5);
  const double rho = 4.0;  // threshold v^2 >= 0.25 -> |v| >= 0.5
  VectorXd v(3);
  v << 0.49, 0.51, -2.0;
  VectorXd x = v;
  g->Apply(1.0 / rho, x);
  EXPECT_EQ(x(0), 0.0);
  EXPECT_EQ(x(1), 0.51);
  EXPECT_EQ(x(2), -2.0);
  ExpectIsProximalPoint(*g, 1.0 / rho, testing::RandomMatrix(6, 1, 1).col(0));
}

TEST(ProximalTest, GroupLassoShrinksOrZeroesWholeGroups) {
  auto g = MakeGroupLasso(1.0, {{0, 1}, {2, 3}});
  VectorXd v(5);
  v << 3.0, 4.0, 0.3, 0.4, 7.0;  // group norms 5 and 0.5; index 4 ungrouped
  VectorXd x = v;
  g->Apply(1.0, x);
  EXPECT_NEAR(x(0), 3.0 * 0.8, 1e-15);
  EXPECT_NEAR(x(1), 4.0 * 0.8, 1e-15);
  EXPECT_EQ(x(2), 0.0);
  EXPECT_EQ(x(3), 0.0);
  EXPECT_EQ(x(4), 7.0);
  VectorXd zero = VectorXd::Zero(5);
  g->Apply(1.0, zero);
  EXPECT_TRUE(zero.allFinite());
  ExpectIsProximalPoint(*g, 0.3, v);
}

TEST(ProximalTest, QuantizationProjectsOntoTheNearestLevel) {
  std::vector<double> q;
  for (int i = -5; i <= 5; ++i) q.push_back(0.1 * i);
  auto g = MakeQuantization(q);
  ASSERT_TRUE(g.ok());
  VectorXd v(5);
  v << -3.0, 0.04, 0.26, 0.499, 9.0;
  (*g)->Apply(1.0, v);
  VectorXd want(5);
  want << -0.5, 0.0, 0.3, 0.5, 0.5;
  EXPECT_LT((v - want).cwiseAbs().maxCoeff(), 1e-15);
  EXPECT_EQ((*g)->Value(v), 0.0);
  EXPECT_FALSE(MakeQuantization({}).ok());
}

TEST(ProximalTest, BinaryRoundsAtOneHalf) {
  auto g = MakeBinary();
  VectorXd v(4);
  v << -1.0, 0.49, 0.5, 3.0;
  g->Apply(1.0, v);
  VectorXd want(4);
  want << 0.0, 0.0, 1.0, 1.0;
  EXPECT_EQ(v, want);
}

TEST(ProximalTest, WeightedL1UsesPerCoordinateThresholds) {
  VectorXd w(3);
  w << 0.0, 1.0, 10.0;
  auto g = MakeWeightedL1(w);
  VectorXd v = VectorXd::Constant(3, 2.0);
  g->Apply(1.0, v);
  EXPECT_EQ(v(0), 2.0);
  EXPECT_EQ(v(1), 1.0);
  EXPECT_EQ(v(2), 0.0);
}

}  // namespace
}  // namespace sparrow::core
