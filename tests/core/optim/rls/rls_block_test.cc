#include "core/optim/rls/rls_block.h"

#include <cmath>
#include <vector>

#include "Eigen/Dense"
#include "gtest/gtest.h"
#include "tests/testing/finite_difference.h"

namespace sparrow::core {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;

// x with a trailing 1, the bias input.
VectorXd WithOne(const VectorXd& x) {
  VectorXd v(x.size() + 1);
  v << x, 1.0;
  return v;
}

// The gradient of (1/2)||B x - y||^2 in B's layout: (B x - y) x^T.
MatrixXd LsGradient(const MatrixXd& b, const VectorXd& x, const VectorXd& y) {
  return (b * x - y) * x.transpose();
}

// With one sample per step (M = 1) the average approximation is exact, and
// with k = 1 the step is textbook exponentially weighted RLS: after S steps
// P = (lambda^S I + sum lambda^(S-i) x_i x_i^T)^-1 and B minimizes
// sum lambda^(S-i) ||B x_i - y_i||^2 + lambda^S ||B - B_0||^2.
TEST(RlsBlockTest, OneSampleStepsWithKOneAreTextbookRls) {
  for (double lambda : {1.0, 0.98}) {
    const int rows = 2, n = 3, steps = 40;
    RlsBlockOptions opt;
    opt.forgetting = lambda;
    RlsBlock block(rows, n, opt);
    MatrixXd b0 = testing::RandomMatrix(rows, n + 1, 1);
    MatrixXd b = b0;
    MatrixXd xs = testing::RandomMatrix(n, steps, 2);
    MatrixXd ys = testing::RandomMatrix(rows, steps, 3);
    MatrixXd a = std::pow(lambda, steps) * MatrixXd::Identity(n + 1, n + 1);
    MatrixXd rhs = std::pow(lambda, steps) * b0;
    for (int s = 0; s < steps; ++s) {
      const VectorXd x = WithOne(xs.col(s));
      const MatrixXd g = LsGradient(b, x, ys.col(s));
      block.Step(x, 1.0, g.data(), b.data());
      const double w = std::pow(lambda, steps - 1 - s);
      a += w * x * x.transpose();
      rhs += w * ys.col(s) * x.transpose();
    }
    const MatrixXd p_expected = a.inverse();
    const MatrixXd b_expected = rhs * p_expected;
    EXPECT_LT(testing::RelativeError(block.P(), p_expected), 1e-11) << lambda;
    EXPECT_LT(testing::RelativeError(b, b_expected), 1e-11) << lambda;
    EXPECT_EQ(block.resets(), 0);
  }
}

// With k != 1, P still follows Sherman–Morrison exactly:
// P = (lambda^S I + k sum lambda^(S-i) x_i x_i^T)^-1.
TEST(RlsBlockTest, RatioFactorScalesTheAutocorrelation) {
  const int rows = 3, n = 4, steps = 25;
  const double k = 0.1, lambda = 0.98;
  RlsBlockOptions opt;
  opt.forgetting = lambda;
  RlsBlock block(rows, n, opt);
  MatrixXd b = testing::RandomMatrix(rows, n + 1, 4);
  MatrixXd xs = testing::RandomMatrix(n, steps, 5);
  MatrixXd a = std::pow(lambda, steps) * MatrixXd::Identity(n + 1, n + 1);
  for (int s = 0; s < steps; ++s) {
    const VectorXd x = WithOne(xs.col(s));
    const MatrixXd g = testing::RandomMatrix(rows, n + 1, 100 + s);
    block.Step(x, k, g.data(), b.data());
    a += k * std::pow(lambda, steps - 1 - s) * x * x.transpose();
  }
  EXPECT_LT(testing::RelativeError(block.P(), a.inverse()), 1e-11);
}

// One step with momentum and l1 against the printed formulas (53), (99),
// (100), from a P and a momentum buffer that earlier steps made non-trivial:
// Omega = alpha Omega - (eta / h) G P_old, P_new = (P_old - (k/h) u u^T) /
// lambda, B += Omega - gamma sgn(B_old) P_new, the bias column's sign 0.
TEST(RlsBlockTest, MomentumAndL1StepMatchesTheFullMatrixFormula) {
  const int rows = 3, n = 5;
  RlsBlockOptions opt;
  opt.forgetting = 0.99;
  opt.eta = 0.7;
  opt.momentum = 0.5;
  opt.l1 = 1e-2;
  const double k = 0.3;
  RlsBlock block(rows, n, opt);
  MatrixXd b = testing::RandomMatrix(rows, n + 1, 6);
  for (int s = 0; s < 5; ++s) {
    const MatrixXd g = testing::RandomMatrix(rows, n + 1, 200 + s);
    const VectorXd x = WithOne(testing::RandomMatrix(n, 1, 300 + s).col(0));
    block.Step(x, k, g.data(), b.data());
  }
  const MatrixXd p = block.P();
  const MatrixXd omega = block.momentum();
  ASSERT_GT(omega.norm(), 0.0);
  const MatrixXd g = testing::RandomMatrix(rows, n + 1, 7);
  const VectorXd x = WithOne(testing::RandomMatrix(n, 1, 8).col(0));

  const VectorXd u = p * x;
  const double h = opt.forgetting + k * x.dot(u);
  const MatrixXd omega_new = opt.momentum * omega - (opt.eta / h) * g * p;
  const MatrixXd p_new = (p - (k / h) * u * u.transpose()) / opt.forgetting;
  MatrixXd sign = b.array().sign().matrix();
  sign.col(n).setZero();
  const MatrixXd b_new = b + omega_new - opt.l1 * sign * p_new;

  block.Step(x, k, g.data(), b.data());
  EXPECT_LT(testing::RelativeError(block.P(), p_new), 1e-13);
  EXPECT_LT(testing::RelativeError(block.momentum(), omega_new), 1e-13);
  EXPECT_LT(testing::RelativeError(b, b_new), 1e-13);
}

// lambda = 1: P stays symmetric positive definite and never grows over many
// steps of arbitrary batch means, without a reset.
TEST(RlsBlockTest, PStaysPositiveDefiniteOverManySteps) {
  const int rows = 2, n = 20, steps = 10000;
  RlsBlock block(rows, n, RlsBlockOptions{});
  MatrixXd b = MatrixXd::Zero(rows, n + 1);
  const MatrixXd g = MatrixXd::Zero(rows, n + 1);
  const MatrixXd xs = testing::RandomMatrix(n, steps, 9);
  for (int s = 0; s < steps; ++s) {
    block.Step(WithOne(xs.col(s)), 0.1, g.data(), b.data());
  }
  Eigen::SelfAdjointEigenSolver<MatrixXd> eig(block.P());
  EXPECT_GT(eig.eigenvalues().minCoeff(), 0.0);
  EXPECT_LE(eig.eigenvalues().maxCoeff(), 1.0 + 1e-12);
  EXPECT_EQ(block.resets(), 0);
}

// A P that has lost definiteness (x^T P x < 0) is reset to I before the step
// and the reset is counted.
TEST(RlsBlockTest, IndefinitePIsResetToIdentity) {
  const int rows = 1, n = 2;
  RlsBlock block(rows, n, RlsBlockOptions{});
  std::vector<double> state(block.state_size());
  block.PackState(state.data());
  // P's lower triangle by columns: (0,0) (1,0) (2,0) (1,1) (2,1) (2,2).
  state[0] = state[3] = state[5] = -1.0;
  ASSERT_TRUE(block.UnpackState(state.data(), state.size()).ok());

  RlsBlock fresh(rows, n, RlsBlockOptions{});
  MatrixXd b = MatrixXd::Zero(rows, n + 1), b_fresh = b;
  const MatrixXd g = testing::RandomMatrix(rows, n + 1, 10);
  const VectorXd x = WithOne(testing::RandomMatrix(n, 1, 11).col(0));
  block.Step(x, 0.1, g.data(), b.data());
  fresh.Step(x, 0.1, g.data(), b_fresh.data());
  EXPECT_EQ(block.resets(), 1);
  EXPECT_EQ(fresh.resets(), 0);
  EXPECT_EQ(block.P(), fresh.P());
  EXPECT_EQ(b, b_fresh);
}

// A block restored from a packed state continues bit for bit like the one
// that was never interrupted.
TEST(RlsBlockTest, PackedStateResumesBitIdentically) {
  const int rows = 3, n = 6;
  RlsBlockOptions opt;
  opt.momentum = 0.5;
  opt.l1 = 1e-3;
  RlsBlock a(rows, n, opt), b(rows, n, opt);
  MatrixXd theta_a = testing::RandomMatrix(rows, n + 1, 12);
  auto step = [&](RlsBlock& block, MatrixXd& theta, int s) {
    const MatrixXd g = testing::RandomMatrix(rows, n + 1, 400 + s);
    const VectorXd x = WithOne(testing::RandomMatrix(n, 1, 500 + s).col(0));
    block.Step(x, 0.1, g.data(), theta.data());
  };
  for (int s = 0; s < 20; ++s) step(a, theta_a, s);
  std::vector<double> state(a.state_size());
  a.PackState(state.data());
  ASSERT_TRUE(b.UnpackState(state.data(), state.size()).ok());
  MatrixXd theta_b = theta_a;
  for (int s = 20; s < 40; ++s) {
    step(a, theta_a, s);
    step(b, theta_b, s);
  }
  EXPECT_EQ(theta_a, theta_b);
  EXPECT_EQ(a.P(), b.P());
  EXPECT_EQ(a.momentum(), b.momentum());

  EXPECT_FALSE(b.UnpackState(state.data(), state.size() - 1).ok());
  state[1] = std::nan("");
  EXPECT_FALSE(b.UnpackState(state.data(), state.size()).ok());
}

// Split over a pool's threads by rows, a step equals the serial one up to
// rounding, and repeats bit for bit.
TEST(RlsBlockTest, ThreadedStepMatchesTheSerialOne) {
  const int rows = 64, n = 30;
  RlsBlockOptions opt;
  opt.momentum = 0.5;
  opt.l1 = 1e-3;
  ThreadPool pool(2);
  RlsBlock serial(rows, n, opt), threaded(rows, n, opt), again(rows, n, opt);
  MatrixXd b1 = testing::RandomMatrix(rows, n + 1, 13), b2 = b1, b3 = b1;
  for (int s = 0; s < 10; ++s) {
    const MatrixXd g = testing::RandomMatrix(rows, n + 1, 600 + s);
    const VectorXd x = WithOne(testing::RandomMatrix(n, 1, 700 + s).col(0));
    serial.Step(x, 0.1, g.data(), b1.data());
    threaded.Step(x, 0.1, g.data(), b2.data(), &pool);
    again.Step(x, 0.1, g.data(), b3.data(), &pool);
  }
  EXPECT_LT(testing::RelativeError(b2, b1), 1e-12);
  EXPECT_EQ(b2, b3);
}

TEST(RlsBlockTest, OptionsOutOfRangeAreRefusedWithTheirName) {
  RlsBlockOptions ok;
  EXPECT_TRUE(ok.Validate().ok());
  RlsBlockOptions o = ok;
  o.forgetting = 1.5;
  EXPECT_NE(o.Validate().message().find("forgetting"), std::string::npos);
  o = ok;
  o.eta = 0.0;
  EXPECT_NE(o.Validate().message().find("eta"), std::string::npos);
  o = ok;
  o.momentum = 1.0;
  EXPECT_NE(o.Validate().message().find("momentum"), std::string::npos);
  o = ok;
  o.l1 = -1.0;
  EXPECT_NE(o.Validate().message().find("l1"), std::string::npos);
}

}  // namespace
}  // namespace sparrow::core
