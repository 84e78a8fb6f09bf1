#include "core/models/layers/rnn.h"

#include <cmath>
#include <memory>
#include <tuple>
#include <vector>

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

// Parameters with nonzero biases (kTorch).
VectorXd RandomParams(const Layer& layer, uint64_t seed) {
  Rng rng(seed);
  VectorXd theta(layer.num_params());
  layer.Initialize(2.0, &rng, theta.data());
  return theta;
}

// (sequence_output, activation)
class RnnLayerTest
    : public ::testing::TestWithParam<std::tuple<bool, Activation>> {
 protected:
  RnnLayerTest()
      : layer_(kSteps, kFeatures, kHidden, std::get<0>(GetParam()),
               InitLaw::kTorch, std::get<1>(GetParam())),
        theta_(RandomParams(layer_, 1)),
        x_(RandomMatrix(kSteps * kFeatures, kBatch, 2)),
        c_(RandomMatrix(layer_.output_shape().size(), kBatch, 3)) {}

  RnnLayer layer_;
  VectorXd theta_;
  MatrixXd x_, c_;
};

TEST_P(RnnLayerTest, ParameterGradientMatchesFiniteDifferences) {
  VectorXd grad;
  MatrixXd d_in;
  LinearLossGradients(layer_, theta_, x_, c_, false, &grad, &d_in);
  const VectorXd fd = NumericGradient(
      [&](const VectorXd& th) { return LinearLoss(layer_, th, x_, c_); },
      theta_);
  EXPECT_LT(RelativeError(grad, fd), 1e-6);
}

TEST_P(RnnLayerTest, InputGradientMatchesFiniteDifferences) {
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

TEST_P(RnnLayerTest, SameSeedGivesBitIdenticalParametersAndOutputs) {
  const VectorXd theta2 = RandomParams(layer_, 1);
  EXPECT_EQ(theta_, theta2);
  EXPECT_EQ(LayerOutput(layer_, theta_, x_), LayerOutput(layer_, theta2, x_));
}

TEST_P(RnnLayerTest, ReusedWorkspaceGivesIdenticalResultsWithoutAllocating) {
  LayerWorkspace ws;
  layer_.ResizeWorkspace(kBatch, &ws);
  MatrixXd out1(layer_.output_shape().size(), kBatch), out2 = out1;
  MatrixXd d_in;
  VectorXd grad1 = VectorXd::Zero(layer_.num_params()), grad2 = grad1;
  layer_.Forward(theta_.data(), x_, &ws, &out1);
  layer_.Backward(theta_.data(), x_, out1, c_, &ws, &d_in);
  layer_.Gradient(x_, ws, grad1.data());
  const auto addresses = testing::BufferAddresses(ws);
  layer_.ResizeWorkspace(kBatch, &ws);
  layer_.Forward(theta_.data(), x_, &ws, &out2);
  layer_.Backward(theta_.data(), x_, out2, c_, &ws, &d_in);
  layer_.Gradient(x_, ws, grad2.data());
  EXPECT_EQ(out1, out2);
  EXPECT_EQ(grad1, grad2);
  EXPECT_EQ(addresses, testing::BufferAddresses(ws));
}

TEST_P(RnnLayerTest, BatchEqualsColumnByColumn) {
  const MatrixXd batch = LayerOutput(layer_, theta_, x_);
  for (int j = 0; j < kBatch; ++j) {
    const MatrixXd one = LayerOutput(layer_, theta_, x_.col(j));
    EXPECT_LT((batch.col(j) - one).cwiseAbs().maxCoeff(), 1e-12);
  }
}

INSTANTIATE_TEST_SUITE_P(
    SequenceOutputAndActivation, RnnLayerTest,
    ::testing::Combine(::testing::Bool(),
                       ::testing::Values(Activation::kTanh,
                                         Activation::kSigmoid)));

TEST(RnnLayerTest, MatchesHandComputedSteps) {
  const RnnLayer layer(2, 1, 1, true, InitLaw::kGlorot);
  VectorXd theta(4);
  theta << 0.3, 0.1, -0.7, 0.05;  // W, b, V, v
  MatrixXd x(2, 1);
  x << 0.5, -1.0;
  const MatrixXd h = LayerOutput(layer, theta, x);
  const double h1 = std::tanh(0.3 * 0.5 + 0.1 + 0.05);
  const double h2 = std::tanh(0.3 * -1.0 + 0.1 - 0.7 * h1 + 0.05);
  EXPECT_NEAR(h(0), h1, 1e-15);
  EXPECT_NEAR(h(1), h2, 1e-15);
}

// Rnn (every step) -> Rnn (last step).
TEST(RnnNetworkTest, ParameterGradientMatchesFiniteDifferences) {
  const Network net({
      std::make_shared<RnnLayer>(kSteps, kFeatures, 3, true, InitLaw::kTorch),
      std::make_shared<RnnLayer>(kSteps, 3, kHidden, false, InitLaw::kTorch),
  });
  Rng rng(5);
  VectorXd theta(net.num_params());
  net.Initialize(2.0, &rng, theta.data());
  const MatrixXd x = RandomMatrix(kSteps * kFeatures, kBatch, 6);
  const MatrixXd c = RandomMatrix(kHidden, kBatch, 7);
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
