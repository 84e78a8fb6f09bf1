#include "core/models/mlp.h"

#include <tuple>

#include "Eigen/Cholesky"
#include "gtest/gtest.h"
#include "tests/testing/finite_difference.h"

namespace sparrow::core {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using testing::NumericGradient;
using testing::NumericJacobian;
using testing::RelativeError;

constexpr double kTolerance = 1e-6;

// Parameters: hidden activation, output activation, hidden widths, a linear
// term (MlpSpec::linear, with linear outputs only).
class MlpDerivativeTest
    : public ::testing::TestWithParam<
          std::tuple<Activation, Activation, std::vector<int>, bool>> {
 protected:
  void SetUp() override {
    const auto& [hidden_act, out_act, hidden, linear] = GetParam();
    MlpSpec spec{3, hidden, 2, hidden_act, out_act};
    spec.linear = linear;
    mlp_ = Mlp(spec);
    Rng rng(7);
    theta_.resize(mlp_.num_params());
    mlp_.Initialize(1.0, &rng, theta_.data());
    // Nonzero biases exercise the bias paths, a nonzero L the linear term's.
    for (const auto& l : mlp_.layers()) {
      for (int k = 0; k < l.out; ++k)
        theta_(l.bias_offset + k) = 0.3 * rng.Normal();
    }
    if (const Mlp::Layer* l = mlp_.linear()) {
      for (int k = 0; k < l->num_params(); ++k)
        theta_(l->weight_offset + k) = 0.5 * rng.Normal();
    }
    x_ = testing::RandomMatrix(3, 5, 1);
    target_ = testing::RandomMatrix(2, 5, 2);
  }
  MatrixXd Output(const VectorXd& theta, const MatrixXd& x) const {
    Mlp::Cache c;
    mlp_.Forward(theta.data(), x, &c);
    return c.output();
  }
  // A loss with a non-trivial gradient: sum of weighted squares.
  double LossOf(const MatrixXd& out) const {
    return (out - target_).array().square().sum();
  }

  Mlp mlp_;
  VectorXd theta_;
  MatrixXd x_, target_;
};

TEST_P(MlpDerivativeTest, BackwardMatchesFiniteDifferences) {
  Mlp::Cache c;
  mlp_.Forward(theta_.data(), x_, &c);
  const MatrixXd d_out = 2.0 * (c.output() - target_);
  VectorXd grad = VectorXd::Zero(mlp_.num_params());
  MatrixXd d_in;
  mlp_.Backward(theta_.data(), d_out, &c, grad.data(), &d_in);

  const VectorXd fd = NumericGradient(
      [&](const VectorXd& th) { return LossOf(Output(th, x_)); }, theta_);
  EXPECT_LT(RelativeError(grad, fd), kTolerance);

  const VectorXd x_vec = Eigen::Map<const VectorXd>(x_.data(), x_.size());
  const VectorXd fd_in = NumericGradient(
      [&](const VectorXd& xv) {
        return LossOf(
            Output(theta_, Eigen::Map<const MatrixXd>(xv.data(), 3, 5)));
      },
      x_vec);
  EXPECT_LT(RelativeError(Eigen::Map<const VectorXd>(d_in.data(), d_in.size()),
                          fd_in),
            kTolerance);
}

TEST_P(MlpDerivativeTest, ColumnBackwardEqualsBatchBackward) {
  Mlp::Cache c;
  mlp_.Forward(theta_.data(), x_, &c);
  const MatrixXd d_out = 2.0 * (c.output() - target_);
  VectorXd batch = VectorXd::Zero(mlp_.num_params());
  MatrixXd d_in;
  mlp_.Backward(theta_.data(), d_out, &c, batch.data(), &d_in);

  Mlp::Cache cc;
  cc.Resize(mlp_, 5);
  cc.input() = x_;
  VectorXd columns = VectorXd::Zero(mlp_.num_params());
  VectorXd d_in_col(3);
  for (int j = 0; j < 5; ++j) {
    mlp_.ForwardColumn(theta_.data(), j, &cc);
    EXPECT_LT(RelativeError(cc.output().col(j), c.output().col(j)), 1e-14);
    mlp_.BackwardColumn(theta_.data(), j, d_out.col(j).data(), &cc,
                        d_in_col.data());
    EXPECT_LT(RelativeError(d_in_col, d_in.col(j)), 1e-12);
  }
  mlp_.AccumulateGradient(cc, columns.data());
  EXPECT_LT(RelativeError(columns, batch), 1e-12);
}

TEST_P(MlpDerivativeTest, JacobiansMatchFiniteDifferences) {
  Mlp::Cache c;
  mlp_.Forward(theta_.data(), x_, &c);
  for (int j = 0; j < 5; ++j) {
    RowMatrixXd d_theta(2, mlp_.num_params()), d_in(2, 3);
    mlp_.Jacobian(theta_.data(), j, &c, d_theta, d_in);
    const MatrixXd fd_theta = NumericJacobian(
        [&](const VectorXd& th) -> VectorXd { return Output(th, x_.col(j)); },
        theta_);
    EXPECT_LT(RelativeError(d_theta, fd_theta), kTolerance) << "sample " << j;
    const MatrixXd fd_in = NumericJacobian(
        [&](const VectorXd& xv) -> VectorXd { return Output(theta_, xv); },
        x_.col(j));
    EXPECT_LT(RelativeError(d_in, fd_in), kTolerance) << "sample " << j;
  }
}

TEST_P(MlpDerivativeTest, DiagGgnEqualsSumOfSquaredJacobians) {
  Mlp::Cache c;
  mlp_.Forward(theta_.data(), x_, &c);
  const MatrixXd sqrt_curv = testing::RandomMatrix(2, 5, 3).cwiseAbs();
  VectorXd diag = VectorXd::Zero(mlp_.num_params());
  mlp_.AccumulateDiagGgn(theta_.data(), sqrt_curv, &c, diag.data());
  // Reference from finite-difference Jacobians: sum_t sum_o (s_ot *
  // dout_o/dtheta)^2.
  VectorXd expected = VectorXd::Zero(mlp_.num_params());
  for (int j = 0; j < 5; ++j) {
    const MatrixXd fd = NumericJacobian(
        [&](const VectorXd& th) -> VectorXd { return Output(th, x_.col(j)); },
        theta_);
    for (int o = 0; o < 2; ++o) {
      expected +=
          (sqrt_curv(o, j) * fd.row(o)).array().square().matrix().transpose();
    }
  }
  EXPECT_LT(RelativeError(diag, expected), kTolerance);
}

TEST_P(MlpDerivativeTest, OutputVarianceEqualsVarianceWeightedJacobians) {
  Mlp::Cache c;
  mlp_.Forward(theta_.data(), x_, &c);
  const VectorXd var =
      testing::RandomMatrix(mlp_.num_params(), 1, 4).cwiseAbs();
  MatrixXd out;
  mlp_.OutputVariance(theta_.data(), var.data(), &c, &out);
  ASSERT_EQ(out.rows(), 2);
  ASSERT_EQ(out.cols(), 5);
  for (int j = 0; j < 5; ++j) {
    const MatrixXd fd = NumericJacobian(
        [&](const VectorXd& th) -> VectorXd { return Output(th, x_.col(j)); },
        theta_);
    const VectorXd expected = fd.array().square().matrix() * var;
    EXPECT_LT(RelativeError(out.col(j), expected), kTolerance)
        << "sample " << j;
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllActivations, MlpDerivativeTest,
    ::testing::Combine(
        ::testing::Values(Activation::kLinear, Activation::kTanh,
                          Activation::kSigmoid, Activation::kRelu,
                          Activation::kLeakyRelu),
        ::testing::Values(Activation::kLinear, Activation::kSigmoid),
        // 12 and 9 units: wider than the fixed-width Jacobian kernels.
        ::testing::Values(std::vector<int>{}, std::vector<int>{4},
                          std::vector<int>{5, 3, 4}, std::vector<int>{12, 9}),
        ::testing::Values(false)));

INSTANTIATE_TEST_SUITE_P(
    LinearTerm, MlpDerivativeTest,
    ::testing::Combine(
        ::testing::Values(Activation::kTanh, Activation::kRelu),
        ::testing::Values(Activation::kLinear),  // needed by a linear term
        ::testing::Values(std::vector<int>{}, std::vector<int>{5, 3, 4}),
        ::testing::Values(true)));

TEST(MlpTest, LayoutAndParameterCount) {
  // Bemporad's damper fy: [x;u] (5) -> 4 -> 1 has 29 parameters.
  Mlp fy(MlpSpec{5, {4}, 1, Activation::kTanh, Activation::kLinear});
  EXPECT_EQ(fy.num_params(), 29);
  ASSERT_EQ(fy.layers().size(), 2u);
  EXPECT_EQ(fy.layers()[0].weight_offset, 0);
  EXPECT_EQ(fy.layers()[0].bias_offset, 20);
  EXPECT_EQ(fy.layers()[1].weight_offset, 24);
  EXPECT_EQ(fy.layers()[1].bias_offset, 28);
}

TEST(MlpTest, GlorotInitializationHasZeroBiasesAndScaledWeights) {
  Mlp mlp(MlpSpec{200, {300}, 100, Activation::kTanh, Activation::kLinear});
  Rng rng(3);
  VectorXd theta(mlp.num_params());
  mlp.Initialize(0.15, &rng, theta.data());
  const auto& l0 = mlp.layers()[0];
  const VectorXd w = theta.segment(l0.weight_offset, l0.in * l0.out);
  const double expected_std = 0.15 * std::sqrt(2.0 / 500.0);
  const double std = std::sqrt(w.squaredNorm() / w.size());
  EXPECT_NEAR(std / expected_std, 1.0, 0.02);
  EXPECT_EQ(theta.segment(l0.bias_offset, l0.out).cwiseAbs().maxCoeff(), 0.0);
}

TEST(MlpTest, SameSeedSameParameters) {
  Mlp mlp(MlpSpec{4, {8, 8}, 2, Activation::kTanh, Activation::kLinear});
  VectorXd a(mlp.num_params()), b(mlp.num_params()), c(mlp.num_params());
  Rng r1(11), r2(11), r3(12);
  mlp.Initialize(1.0, &r1, a.data());
  mlp.Initialize(1.0, &r2, b.data());
  mlp.Initialize(1.0, &r3, c.data());
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(MlpTest, ValidationNamesTheBadLayer) {
  const absl::Status s = ValidateMlpSpec(
      MlpSpec{3, {4, -2}, 1, Activation::kTanh, Activation::kLinear},
      "model.mlp");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("model.mlp.hidden[1] is -2"), std::string::npos)
      << s;
}

TEST(MlpLinearTermTest, LayoutInitializationAndValidation) {
  MlpSpec spec{3, {4}, 2, Activation::kTanh, Activation::kLinear};
  const int network = Mlp(spec).num_params();
  spec.linear = true;
  const Mlp mlp(spec);
  ASSERT_NE(mlp.linear(), nullptr);
  EXPECT_EQ(mlp.num_params(), network + 3 * 2);
  EXPECT_EQ(CountMlpParameters(spec), mlp.num_params());
  EXPECT_EQ(mlp.linear()->weight_offset, network);
  EXPECT_EQ(mlp.network().num_params(), network);
  VectorXd theta = VectorXd::Constant(mlp.num_params(), 7.0);
  Rng rng(1);
  mlp.Initialize(1.0, &rng, theta.data());
  EXPECT_EQ(theta.tail(6).cwiseAbs().maxCoeff(), 0.0);

  spec.output_activation = Activation::kSigmoid;
  const absl::Status sigmoid = ValidateMlpSpec(spec, "model.narx_mlp");
  EXPECT_NE(sigmoid.message().find("needs a linear output layer"),
            std::string::npos)
      << sigmoid;
  spec.output_activation = Activation::kLinear;
  spec.precision = Precision::kFloat32;
  EXPECT_EQ(ValidateMlpSpec(spec, "model.narx_mlp").code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(MlpLinearTermTest, FitStartsAtTheLeastSquaresLinearModel) {
  MlpSpec spec{3, {5, 4}, 2, Activation::kTanh, Activation::kLinear};
  spec.linear = true;
  const Mlp mlp(spec);
  const MatrixXd x = testing::RandomMatrix(3, 40, 5);
  const MatrixXd l_true = testing::RandomMatrix(2, 3, 6);
  const VectorXd b_true = testing::RandomMatrix(2, 1, 7);
  const MatrixXd noise = 1e-3 * testing::RandomMatrix(2, 40, 8);
  const MatrixXd y = (l_true * x).colwise() + b_true + noise;
  VectorXd theta(mlp.num_params());
  Rng rng(2);
  mlp.Initialize(1.0, &rng, theta.data());
  const VectorXd lower = theta.head(mlp.layers()[1].weight_offset);
  ASSERT_TRUE(FitLinearTerm(mlp, x, y, theta.data()).ok());

  // The normal equations' solution, independently.
  MatrixXd a(40, 4);
  a << x.transpose(), VectorXd::Ones(40);
  const MatrixXd coef =
      (a.transpose() * a).ldlt().solve(a.transpose() * y.transpose());
  const Mlp::Layer& top = mlp.layers().back();
  EXPECT_LT(RelativeError(Eigen::Map<const MatrixXd>(
                              theta.data() + mlp.linear()->weight_offset, 2, 3),
                          coef.topRows(3).transpose()),
            1e-10);
  EXPECT_LT(
      RelativeError(theta.segment(top.bias_offset, 2), coef.row(3).transpose()),
      1e-10);
  EXPECT_EQ(
      theta.segment(top.weight_offset, top.in * top.out).cwiseAbs().maxCoeff(),
      0.0);
  EXPECT_EQ(theta.head(lower.size()), lower);  // lower layers untouched
  Mlp::Cache c;
  mlp.Forward(theta.data(), x, &c);
  const MatrixXd linear_fit = (a * coef).transpose();
  EXPECT_LT((c.output() - linear_fit).cwiseAbs().maxCoeff(), 1e-12);
}

TEST(MlpLinearTermTest, FitRefusesANetworkWithoutLinearTerm) {
  const Mlp mlp(MlpSpec{2, {}, 1, Activation::kTanh, Activation::kLinear});
  VectorXd theta(mlp.num_params());
  EXPECT_EQ(FitLinearTerm(mlp, MatrixXd::Ones(2, 3), MatrixXd::Ones(1, 3),
                          theta.data())
                .code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sparrow::core

namespace sparrow::core {
namespace {

// Bias-free networks (Palagi & Seccia's BLD): parameter count, gradient and
// the partial forward / backward passes of the block methods.
class BiasFreeMlpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MlpSpec spec{4, {6, 5, 3}, 2, Activation::kSigmoid, Activation::kLinear};
    spec.bias = false;
    mlp_ = Mlp(spec);
    Rng rng(11);
    theta_.resize(mlp_.num_params());
    mlp_.Initialize(1.0, &rng, theta_.data());
    x_ = testing::RandomMatrix(4, 7, 3);
    target_ = testing::RandomMatrix(2, 7, 4);
  }
  double Loss(const Eigen::VectorXd& theta) const {
    Mlp::Cache c;
    mlp_.Forward(theta.data(), x_, &c);
    return (c.output() - target_).array().square().sum();
  }

  Mlp mlp_;
  Eigen::VectorXd theta_;
  Eigen::MatrixXd x_, target_;
};

TEST_F(BiasFreeMlpTest, HasOnlyWeights) {
  // Palagi & Seccia Table 1: Mv [1x50] has 13 * 50 + 50 = 700 weights.
  MlpSpec mv{13, {50}, 1, Activation::kSigmoid, Activation::kLinear};
  mv.bias = false;
  EXPECT_EQ(Mlp(mv).num_params(), 700);
  EXPECT_EQ(mlp_.num_params(), 4 * 6 + 6 * 5 + 5 * 3 + 3 * 2);
  for (const auto& l : mlp_.layers()) {
    EXPECT_EQ(l.bias_offset, -1);
    EXPECT_EQ(l.num_params(), l.in * l.out);
  }
}

TEST_F(BiasFreeMlpTest, BackwardMatchesFiniteDifferences) {
  Mlp::Cache c;
  mlp_.Forward(theta_.data(), x_, &c);
  const Eigen::MatrixXd d_out = 2.0 * (c.output() - target_);
  Eigen::VectorXd grad = Eigen::VectorXd::Zero(mlp_.num_params());
  mlp_.Backward(theta_.data(), d_out, &c, grad.data(), nullptr);
  const Eigen::VectorXd fd = testing::NumericGradient(
      [&](const Eigen::VectorXd& th) { return Loss(th); }, theta_);
  EXPECT_LT(testing::RelativeError(grad, fd), 1e-6);
}

TEST_F(BiasFreeMlpTest, PartialPassesEqualFullPasses) {
  Mlp::Cache full;
  mlp_.Forward(theta_.data(), x_, &full);
  const Eigen::MatrixXd d_out = 2.0 * (full.output() - target_);
  Eigen::VectorXd grad = Eigen::VectorXd::Zero(mlp_.num_params());
  mlp_.Backward(theta_.data(), d_out, &full, grad.data(), nullptr);
  for (int layer = 0; layer < static_cast<int>(mlp_.layers().size()); ++layer) {
    const Mlp::Layer& l = mlp_.layers()[layer];
    // Change this layer's weights; the layers below keep their cache.
    Eigen::VectorXd moved = theta_;
    moved.segment(l.weight_offset, l.num_params()).array() += 0.05;
    Mlp::Cache partial;
    mlp_.Forward(theta_.data(), x_, &partial);
    mlp_.ForwardFrom(moved.data(), layer, &partial);
    Mlp::Cache reference;
    mlp_.Forward(moved.data(), x_, &reference);
    EXPECT_LT((partial.output() - reference.output()).cwiseAbs().maxCoeff(),
              1e-14)
        << "layer " << layer;

    Eigen::VectorXd block = Eigen::VectorXd::Zero(mlp_.num_params());
    mlp_.BackwardToLayer(theta_.data(), d_out, layer, &full, block.data());
    EXPECT_LT((block.segment(l.weight_offset, l.num_params()) -
               grad.segment(l.weight_offset, l.num_params()))
                  .cwiseAbs()
                  .maxCoeff(),
              1e-12)
        << "layer " << layer;
    // Nothing outside the block is touched.
    EXPECT_EQ(block.head(l.weight_offset).cwiseAbs().sum(), 0.0);
    EXPECT_EQ(block.tail(mlp_.num_params() - l.weight_offset - l.num_params())
                  .cwiseAbs()
                  .sum(),
              0.0);
  }
}

}  // namespace
}  // namespace sparrow::core
