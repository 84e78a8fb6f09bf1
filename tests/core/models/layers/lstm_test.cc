#include "core/models/layers/lstm.h"

#include <cmath>
#include <memory>
#include <vector>

#include "core/models/layers/dense.h"
#include "core/models/network.h"
#include "gtest/gtest.h"
#include "tests/core/models/layers/layer_checks.h"
#include "tests/testing/finite_difference.h"

namespace sparrow::core {
namespace {

using Eigen::Map;
using Eigen::MatrixXd;
using Eigen::VectorXd;
using testing::LayerOutput;
using testing::LinearLoss;
using testing::LinearLossGradients;
using testing::NumericGradient;
using testing::RandomMatrix;
using testing::RelativeError;

constexpr int kSteps = 4, kFeatures = 3, kHidden = 2, kBatch = 3;

// Parameters with nonzero biases (kTorch) and gates away from saturation.
VectorXd RandomParams(const Layer& layer, uint64_t seed) {
  Rng rng(seed);
  VectorXd theta(layer.num_params());
  layer.Initialize(2.0, &rng, theta.data());
  return theta;
}

class LstmLayerTest : public ::testing::TestWithParam<bool> {
 protected:
  LstmLayerTest()
      : layer_(kSteps, kFeatures, kHidden, GetParam(), InitLaw::kTorch),
        theta_(RandomParams(layer_, 1)),
        x_(RandomMatrix(kSteps * kFeatures, kBatch, 2)),
        c_(RandomMatrix(layer_.output_shape().size(), kBatch, 3)) {}

  LstmLayer layer_;
  VectorXd theta_;
  MatrixXd x_, c_;
};

TEST_P(LstmLayerTest, ShapesFollowTheSequenceConvention) {
  EXPECT_EQ(layer_.input_shape(), (Shape{1, kSteps, kFeatures}));
  EXPECT_EQ(layer_.output_shape(),
            GetParam() ? (Shape{1, kSteps, kHidden}) : Shape::Flat(kHidden));
  EXPECT_EQ(layer_.num_params(),
            4 * kHidden * (kFeatures + 1) + 4 * kHidden * (kHidden + 1));
}

TEST_P(LstmLayerTest, ParameterGradientMatchesFiniteDifferences) {
  VectorXd grad;
  MatrixXd d_in;
  LinearLossGradients(layer_, theta_, x_, c_, false, &grad, &d_in);
  const VectorXd fd = NumericGradient(
      [&](const VectorXd& th) { return LinearLoss(layer_, th, x_, c_); },
      theta_);
  EXPECT_LT(RelativeError(grad, fd), 1e-6);
}

TEST_P(LstmLayerTest, InputGradientMatchesFiniteDifferences) {
  VectorXd grad;
  MatrixXd d_in;
  LinearLossGradients(layer_, theta_, x_, c_, true, &grad, &d_in);
  const VectorXd fd = NumericGradient(
      [&](const VectorXd& xv) {
        return LinearLoss(layer_, theta_,
                          Map<const MatrixXd>(xv.data(), x_.rows(), kBatch),
                          c_);
      },
      Map<const VectorXd>(x_.data(), x_.size()));
  ASSERT_EQ(d_in.rows(), x_.rows());
  ASSERT_EQ(d_in.cols(), kBatch);
  EXPECT_LT(RelativeError(Map<const VectorXd>(d_in.data(), d_in.size()), fd),
            1e-6);
}

TEST_P(LstmLayerTest, StridedAndContiguousOutputGradientsAgree) {
  VectorXd grad1, grad2;
  MatrixXd d_in1, d_in2;
  LinearLossGradients(layer_, theta_, x_, c_, false, &grad1, &d_in1);
  LinearLossGradients(layer_, theta_, x_, c_, true, &grad2, nullptr);
  EXPECT_EQ(grad1, grad2);
}

TEST_P(LstmLayerTest, SameSeedGivesBitIdenticalParametersAndOutputs) {
  const VectorXd theta2 = RandomParams(layer_, 1);
  EXPECT_EQ(theta_, theta2);
  EXPECT_EQ(LayerOutput(layer_, theta_, x_), LayerOutput(layer_, theta2, x_));
}

TEST_P(LstmLayerTest, ReusedWorkspaceGivesIdenticalResultsWithoutAllocating) {
  LayerWorkspace ws;
  layer_.ResizeWorkspace(kBatch, &ws);
  MatrixXd out1(layer_.output_shape().size(), kBatch), out2 = out1;
  MatrixXd d_in1, d_in2;
  VectorXd grad1 = VectorXd::Zero(layer_.num_params()), grad2 = grad1;
  layer_.Forward(theta_.data(), x_, &ws, &out1);
  layer_.Backward(theta_.data(), x_, out1, c_, &ws, &d_in1);
  layer_.Gradient(x_, ws, grad1.data());
  const auto addresses = testing::BufferAddresses(ws);
  const double* d_in_address = d_in1.data();
  layer_.ResizeWorkspace(kBatch, &ws);
  layer_.Forward(theta_.data(), x_, &ws, &out2);
  layer_.Backward(theta_.data(), x_, out2, c_, &ws, &d_in1);
  layer_.Gradient(x_, ws, grad2.data());
  EXPECT_EQ(out1, out2);
  EXPECT_EQ(grad1, grad2);
  EXPECT_EQ(addresses, testing::BufferAddresses(ws));
  EXPECT_EQ(d_in_address, d_in1.data());
}

// The buffers an RLS optimizer reads: kPrevHidden's step t is h_{t-1}
// (zero at t = 0), kHidden's step t is h_t, column b*T + t.
TEST_P(LstmLayerTest, WorkspaceHoldsEveryStepsPreviousHiddenState) {
  LayerWorkspace ws;
  layer_.ResizeWorkspace(kBatch, &ws);
  MatrixXd out(layer_.output_shape().size(), kBatch);
  layer_.Forward(theta_.data(), x_, &ws, &out);
  const MatrixXd& h = ws.buffers[RecurrentLayer::kHidden];
  const MatrixXd& prev = ws.buffers[RecurrentLayer::kPrevHidden];
  ASSERT_EQ(prev.rows(), kHidden);
  ASSERT_EQ(prev.cols(), kSteps * kBatch);
  for (int b = 0; b < kBatch; ++b) {
    EXPECT_TRUE(prev.col(b * kSteps).isZero(0));
    for (int t = 1; t < kSteps; ++t) {
      EXPECT_EQ(prev.col(b * kSteps + t), h.col(b * kSteps + t - 1));
    }
    EXPECT_EQ(StepCols(h, kSteps - 1, kSteps).col(b),
              h.col(b * kSteps + kSteps - 1));
  }
  const MatrixXd expected =
      GetParam() ? Map<const MatrixXd>(h.data(), kSteps * kHidden, kBatch)
                 : MatrixXd(StepCols(h, kSteps - 1, kSteps));
  EXPECT_EQ(out, expected);
}

TEST_P(LstmLayerTest, BatchEqualsColumnByColumn) {
  const MatrixXd batch = LayerOutput(layer_, theta_, x_);
  for (int j = 0; j < kBatch; ++j) {
    const MatrixXd one = LayerOutput(layer_, theta_, x_.col(j));
    EXPECT_LT((batch.col(j) - one).cwiseAbs().maxCoeff(), 1e-12);
  }
}

TEST_P(LstmLayerTest, GradientAccumulates) {
  LayerWorkspace ws;
  layer_.ResizeWorkspace(kBatch, &ws);
  MatrixXd out(layer_.output_shape().size(), kBatch);
  layer_.Forward(theta_.data(), x_, &ws, &out);
  layer_.Backward(theta_.data(), x_, out, c_, &ws, nullptr);
  VectorXd once = VectorXd::Zero(layer_.num_params());
  layer_.Gradient(x_, ws, once.data());
  VectorXd twice = once;
  layer_.Gradient(x_, ws, twice.data());
  EXPECT_LT(RelativeError(twice, 2.0 * once), 1e-15);
}

INSTANTIATE_TEST_SUITE_P(SequenceOutput, LstmLayerTest, ::testing::Bool());

// T = 2, F = H = 1, every gate with its own weights: python's
// math.tanh / math.exp of the same recursion give c_t and h_t below.
TEST(LstmLayerTest, MatchesHandComputedSteps) {
  const LstmLayer seq(2, 1, 1, true, InitLaw::kGlorot);
  ASSERT_EQ(seq.num_params(), 16);
  VectorXd theta(16);
  theta << 0.1, 0.2, 0.3, 0.4,   // W: I, G, F, O
      0.01, -0.02, 0.03, -0.04,  // b
      0.5, -0.6, 0.7, -0.8,      // V
      0.05, 0.06, -0.07, 0.08;   // v
  MatrixXd x(2, 1);
  x << 0.5, -1.0;
  const MatrixXd h = LayerOutput(seq, theta, x);
  EXPECT_NEAR(h(0), 0.040991220534179654, 1e-15);
  EXPECT_NEAR(h(1), -0.023894158317085492, 1e-15);
  // The first step alone: sigmoid(0.11) tanh(0.14) etc., with h_0 = c_0 = 0.
  const double i = 1 / (1 + std::exp(-0.11)), g = std::tanh(0.14),
               o = 1 / (1 + std::exp(-0.24));
  EXPECT_NEAR(h(0), o * std::tanh(i * g), 1e-15);
  const LstmLayer last(2, 1, 1, false, InitLaw::kGlorot);
  EXPECT_EQ(LayerOutput(last, theta, x)(0), h(1));
}

TEST(LstmLayerTest, InitLawsDrawTheirDistributions) {
  const int h = 8;
  const LstmLayer glorot(5, 3, h, false, InitLaw::kGlorot);
  const LstmLayer torch(5, 3, h, false, InitLaw::kTorch);
  Rng rng(4);
  VectorXd theta(glorot.num_params());
  glorot.Initialize(1.0, &rng, theta.data());
  EXPECT_TRUE(theta.segment(glorot.b_offset(), 4 * h).isZero(0));
  EXPECT_TRUE(theta.segment(glorot.v_bias_offset(), 4 * h).isZero(0));
  EXPECT_FALSE(theta.segment(glorot.v_weight_offset(), 4 * h * h).isZero(0));
  torch.Initialize(0.5, &rng, theta.data());
  EXPECT_LE(theta.cwiseAbs().maxCoeff(), 0.5 / std::sqrt(h));
  EXPECT_GT(theta.cwiseAbs().maxCoeff(), 0.4 / std::sqrt(h));
  EXPECT_FALSE(theta.segment(torch.v_bias_offset(), 4 * h).isZero(0));
}

// Lstm (every step) -> Lstm (last step) -> Dense(H -> 3, linear).
TEST(LstmNetworkTest, ParameterGradientMatchesFiniteDifferences) {
  const Network net({
      std::make_shared<LstmLayer>(kSteps, kFeatures, 3, true, InitLaw::kTorch),
      std::make_shared<LstmLayer>(kSteps, 3, kHidden, false, InitLaw::kTorch),
      std::make_shared<DenseLayer>(kHidden, 3, Activation::kLinear, true),
  });
  Rng rng(5);
  VectorXd theta(net.num_params());
  net.Initialize(2.0, &rng, theta.data());
  const MatrixXd x = RandomMatrix(kSteps * kFeatures, kBatch, 6);
  const MatrixXd c = RandomMatrix(3, kBatch, 7);
  const VectorXd grad = testing::NetworkLinearLossGradient(net, theta, x, c);
  const VectorXd fd = NumericGradient(
      [&](const VectorXd& th) {
        return testing::NetworkLinearLoss(net, th, x, c);
      },
      theta);
  EXPECT_LT(RelativeError(grad, fd), 1e-6);
}

}  // namespace
}  // namespace sparrow::core
