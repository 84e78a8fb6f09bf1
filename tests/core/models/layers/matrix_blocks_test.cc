// The layers' RLS blocks (Layer::MatrixBlocks) and their input row sums
// (Layer::AddBlockInputSums) against explicitly formed input rows; a dense
// layer's factorized G P (Layer::AddPreconditionedGradient).
#include <memory>
#include <vector>

#include "core/models/layers/conv2d.h"
#include "core/models/layers/dense.h"
#include "core/models/layers/lstm.h"
#include "core/models/layers/rnn.h"
#include "core/models/layers/step_dense.h"
#include "core/models/network.h"
#include "gtest/gtest.h"
#include "tests/testing/finite_difference.h"

namespace sparrow::core {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using testing::RandomMatrix;

// The network's block input sums after a forward pass on x.
std::vector<VectorXd> Sums(const Network& net, const MatrixXd& x) {
  const VectorXd p = RandomMatrix(net.num_params(), 1, 7);
  Network::Cache cache;
  net.Forward(p.data(), x, &cache);
  std::vector<VectorXd> sums;
  for (const NetworkMatrixBlock& b : net.matrix_blocks()) {
    sums.push_back(VectorXd::Zero(b.block.inputs));
  }
  net.AddBlockInputSums(cache, &sums);
  return sums;
}

TEST(MatrixBlocksTest, DenseLayersSumTheirInputColumns) {
  auto d1 = std::make_shared<DenseLayer>(4, 3, Activation::kTanh, true);
  auto d2 = std::make_shared<DenseLayer>(3, 2, Activation::kLinear, false);
  const Network net({d1, d2});
  ASSERT_EQ(net.matrix_blocks().size(), 2u);
  EXPECT_EQ(net.matrix_blocks()[1].block.offset, 3 * 5);
  EXPECT_EQ(net.matrix_blocks()[1].layer, 1);
  EXPECT_FALSE(net.matrix_blocks()[1].block.bias);
  const MatrixXd x = RandomMatrix(4, 6, 1);
  const VectorXd p = RandomMatrix(net.num_params(), 1, 7);
  Network::Cache cache;
  net.Forward(p.data(), x, &cache);
  const std::vector<VectorXd> sums = Sums(net, x);
  EXPECT_LT((sums[0] - x.rowwise().sum()).norm(), 1e-12);
  EXPECT_LT((sums[1] - cache.activation[1].rowwise().sum()).norm(), 1e-12);
}

// Layer::AddPreconditionedGradient of a dense layer, with and without bias,
// float64 and float32 products: the layer's gradient (as Gradient adds it)
// times a symmetric P given by its lower triangle.
TEST(MatrixBlocksTest, DensePreconditionedGradientIsTheGradientTimesP) {
  for (const bool bias : {true, false}) {
    for (const Precision precision :
         {Precision::kFloat64, Precision::kFloat32}) {
      const DenseLayer d(5, 4, Activation::kTanh, bias, InitLaw::kGlorot,
                         precision);
      const Network net({std::make_shared<DenseLayer>(d)});
      const int cols = 5 + (bias ? 1 : 0);
      const MatrixXd x = RandomMatrix(5, 7, 1);
      const VectorXd w = RandomMatrix(net.num_params(), 1, 2);
      Network::Cache cache;
      net.Forward(w.data(), x, &cache);
      net.Backward(w.data(), RandomMatrix(4, 7, 3), &cache, nullptr);
      VectorXd grad = VectorXd::Zero(net.num_params());
      net.Gradient(cache, grad.data());
      const MatrixXd a = RandomMatrix(cols, cols, 4);
      const MatrixXd p = a * a.transpose();
      MatrixXd lower = p.triangularView<Eigen::Lower>();
      lower.triangularView<Eigen::StrictlyUpper>().setConstant(1e300);
      std::vector<MatrixXd> scratch;
      MatrixXd gp = MatrixXd::Ones(4, cols);
      ASSERT_TRUE(
          net.AddPreconditionedGradient(cache, 0, lower, &scratch, &gp));
      const MatrixXd expected =
          MatrixXd::Ones(4, cols) +
          Eigen::Map<const MatrixXd>(grad.data(), 4, cols) * p;
      // float32: the gradient's product is float's, the factorized one
      // double's.
      EXPECT_LT(testing::RelativeError(gp, expected),
                precision == Precision::kFloat32 ? 1e-6 : 1e-12)
          << "bias " << bias;
    }
  }
}

// The sum of the explicit im2col rows (receptive fields, zero outside the
// image) over every output position and sample.
TEST(MatrixBlocksTest, ConvSumsItsReceptiveFields) {
  const ConvGeometry g{Shape{2, 5, 6}, 3, 3, 2, 1};
  const Network net(
      {std::make_shared<Conv2dLayer>(g, Activation::kRelu, InitLaw::kGlorot)});
  const MatrixXd x = RandomMatrix(g.in.size(), 3, 2);
  VectorXd expected = VectorXd::Zero(g.field());
  for (int b = 0; b < 3; ++b) {
    for (int u = 0; u < g.out_height(); ++u) {
      for (int v = 0; v < g.out_width(); ++v) {
        for (int c = 0; c < 2; ++c) {
          for (int i = 0; i < 3; ++i) {
            for (int j = 0; j < 3; ++j) {
              const int r = u * 2 + i - 1, q = v * 2 + j - 1;
              if (r < 0 || r >= 5 || q < 0 || q >= 6) continue;
              expected((c * 3 + i) * 3 + j) += x((c * 5 + r) * 6 + q, b);
            }
          }
        }
      }
    }
  }
  const MatrixBlock b = net.matrix_blocks()[0].block;
  EXPECT_EQ(b.rows, 3);
  EXPECT_EQ(b.rows_per_sample, g.positions());
  EXPECT_EQ(b.steps, 1);
  EXPECT_LT((Sums(net, x)[0] - expected).norm(), 1e-12);
}

// W's input rows are the steps' inputs; V's are h_{t-1}, zero at t = 0.
template <typename Recurrent>
void CheckRecurrent(int rows_per_hidden) {
  const int T = 4, F = 3, H = 5, B = 2;
  const Network net(
      {std::make_shared<Recurrent>(T, F, H, true, InitLaw::kGlorot)});
  const std::vector<NetworkMatrixBlock>& blocks = net.matrix_blocks();
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0].block.rows, rows_per_hidden * H);
  EXPECT_EQ(blocks[0].block.inputs, F);
  EXPECT_EQ(blocks[1].block.inputs, H);
  EXPECT_EQ(blocks[1].block.offset, rows_per_hidden * H * (F + 1));
  EXPECT_EQ(blocks[1].block.steps, T);
  const MatrixXd x = RandomMatrix(T * F, B, 3);
  const VectorXd p = RandomMatrix(net.num_params(), 1, 7);
  Network::Cache cache;
  net.Forward(p.data(), x, &cache);
  VectorXd w_sum = VectorXd::Zero(F), v_sum = VectorXd::Zero(H);
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < T; ++t) {
      w_sum += x.col(b).segment(t * F, F);
      if (t > 0) v_sum += cache.output().col(b).segment((t - 1) * H, H);
    }
  }
  const std::vector<VectorXd> sums = Sums(net, x);
  EXPECT_LT((sums[0] - w_sum).norm(), 1e-12);
  EXPECT_LT((sums[1] - v_sum).norm(), 1e-12);
}

TEST(MatrixBlocksTest, RnnSumsStepInputsAndPreviousStates) {
  CheckRecurrent<RnnLayer>(1);
}
TEST(MatrixBlocksTest, LstmGatesShareTheTwoBlocks) {
  CheckRecurrent<LstmLayer>(4);
}

TEST(MatrixBlocksTest, StepDenseSumsEveryStep) {
  const int T = 3, F = 4;
  const Network net(
      {std::make_shared<StepDenseLayer>(T, F, 2, InitLaw::kGlorot)});
  const MatrixXd x = RandomMatrix(T * F, 2, 4);
  VectorXd expected = VectorXd::Zero(F);
  for (int t = 0; t < T; ++t) {
    expected += x.block(t * F, 0, F, 2).rowwise().sum();
  }
  EXPECT_EQ(net.matrix_blocks()[0].block.rows_per_sample, T);
  EXPECT_LT((Sums(net, x)[0] - expected).norm(), 1e-12);
}

}  // namespace
}  // namespace sparrow::core
