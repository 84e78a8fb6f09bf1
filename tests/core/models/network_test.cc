#include "core/models/network.h"

#include <memory>
#include <tuple>
#include <vector>

#include "core/models/layers/dense.h"
#include "core/models/mlp.h"
#include "gtest/gtest.h"
#include "tests/testing/finite_difference.h"

namespace sparrow::core {
namespace {

using Eigen::Map;
using Eigen::MatrixXd;
using Eigen::VectorXd;
using testing::NumericGradient;
using testing::NumericJacobian;
using testing::RandomMatrix;
using testing::RelativeError;

// A network of dense layers: widths[0] inputs, then one layer per further
// width; hidden layers use `hidden`, the last `output`.
Network DenseNetwork(const std::vector<int>& widths, Activation hidden,
                     Activation output, bool bias) {
  std::vector<std::shared_ptr<const Layer>> layers;
  for (size_t i = 1; i < widths.size(); ++i) {
    const bool last = i + 1 == widths.size();
    layers.push_back(std::make_shared<DenseLayer>(
        widths[i - 1], widths[i], last ? output : hidden, bias));
  }
  return Network(std::move(layers));
}

VectorXd RandomParams(const Network& net, uint64_t seed) {
  Rng rng(seed);
  VectorXd theta(net.num_params());
  net.Initialize(1.0, &rng, theta.data());
  // Nonzero biases exercise the bias paths.
  for (const DenseBlock& b : DenseBlocks(net)) {
    if (b.bias_offset < 0) continue;
    for (int k = 0; k < b.out; ++k)
      theta(b.bias_offset + k) = 0.3 * rng.Normal();
  }
  return theta;
}

// The formulas of the Mlp before it ran through Network (same Eigen
// expressions in the same order), kept here as the bit-exact reference.
struct Reference {
  std::vector<MatrixXd> v, z, delta, deriv;
  VectorXd grad;
  MatrixXd d_in;

  Reference(const std::vector<DenseBlock>& layers, const VectorXd& theta,
            const MatrixXd& x, const MatrixXd& d_out) {
    const int n = static_cast<int>(layers.size());
    v.resize(n + 1);
    z.resize(n + 1);
    delta.resize(n + 1);
    deriv.resize(n + 1);
    z[0] = x;
    auto weights = [&](const DenseBlock& l) {
      return Map<const MatrixXd>(theta.data() + l.weight_offset, l.out, l.in);
    };
    for (int i = 0; i < n; ++i) {
      const DenseBlock& l = layers[i];
      v[i + 1].resize(l.out, x.cols());
      z[i + 1].resize(l.out, x.cols());
      v[i + 1].noalias() = weights(l) * z[i];
      if (l.bias_offset >= 0) {
        v[i + 1].colwise() +=
            Map<const VectorXd>(theta.data() + l.bias_offset, l.out);
      }
      ApplyActivation(l.activation, v[i + 1], z[i + 1]);
    }
    for (int i = n; i >= 1; --i) {
      const DenseBlock& l = layers[i - 1];
      deriv[i].resize(l.out, x.cols());
      ActivationDerivative(l.activation, v[i], z[i], deriv[i]);
      if (i == n) {
        delta[i] = d_out.cwiseProduct(deriv[i]);
      } else {
        delta[i].noalias() = weights(layers[i]).transpose() * delta[i + 1];
        delta[i].array() *= deriv[i].array();
      }
    }
    grad.setZero(theta.size());
    for (int i = 0; i < n; ++i) {
      const DenseBlock& l = layers[i];
      Map<MatrixXd>(grad.data() + l.weight_offset, l.out, l.in).noalias() +=
          delta[i + 1] * z[i].transpose();
      if (l.bias_offset >= 0) {
        Map<VectorXd>(grad.data() + l.bias_offset, l.out) +=
            delta[i + 1].rowwise().sum();
      }
    }
    d_in.noalias() = weights(layers[0]).transpose() * delta[1];
  }
};

// Parameters: hidden activation, output activation, bias, batch size.
class DenseNetworkTest : public ::testing::TestWithParam<
                             std::tuple<Activation, Activation, bool, int>> {
 protected:
  void SetUp() override {
    const auto& [hidden, output, bias, batch] = GetParam();
    net_ = DenseNetwork({3, 5, 4, 2}, hidden, output, bias);
    theta_ = RandomParams(net_, 7);
    x_ = RandomMatrix(3, batch, 1);
    target_ = RandomMatrix(2, batch, 2);
  }
  MatrixXd Output(const VectorXd& theta, const MatrixXd& x) const {
    Network::Cache c;
    net_.Forward(theta.data(), x, &c);
    return c.output();
  }
  double Loss(const VectorXd& theta, const MatrixXd& x) const {
    return (Output(theta, x) - target_).array().square().sum();
  }

  Network net_;
  VectorXd theta_;
  MatrixXd x_, target_;
};

TEST_P(DenseNetworkTest, GradientMatchesFiniteDifferences) {
  Network::Cache c;
  net_.Forward(theta_.data(), x_, &c);
  const MatrixXd d_out = 2.0 * (c.output() - target_);
  net_.Backward(theta_.data(), d_out, &c, nullptr);
  VectorXd grad = VectorXd::Zero(net_.num_params());
  net_.Gradient(c, grad.data());
  const VectorXd fd =
      NumericGradient([&](const VectorXd& th) { return Loss(th, x_); }, theta_);
  EXPECT_LT(RelativeError(grad, fd), 1e-6);
}

TEST_P(DenseNetworkTest, InputGradientMatchesFiniteDifferences) {
  Network::Cache c;
  net_.Forward(theta_.data(), x_, &c);
  const MatrixXd d_out = 2.0 * (c.output() - target_);
  MatrixXd d_in;
  net_.Backward(theta_.data(), d_out, &c, &d_in);
  const VectorXd x_vec = Map<const VectorXd>(x_.data(), x_.size());
  const VectorXd fd = NumericGradient(
      [&](const VectorXd& xv) {
        return Loss(theta_, Map<const MatrixXd>(xv.data(), 3, x_.cols()));
      },
      x_vec);
  ASSERT_EQ(d_in.rows(), 3);
  ASSERT_EQ(d_in.cols(), x_.cols());
  EXPECT_LT(RelativeError(Map<const VectorXd>(d_in.data(), d_in.size()), fd),
            1e-6);
}

TEST_P(DenseNetworkTest, ForwardMatchesFiniteDifferenceJacobianOfOneLayer) {
  // The last layer alone, as a function of its own block: its Forward is
  // linear in the weights before the activation, so the finite-difference
  // Jacobian of the output checks the layout of the block.
  const DenseBlock last = DenseBlockOf(net_, net_.num_layers() - 1);
  Network::Cache c;
  net_.Forward(theta_.data(), x_, &c);
  const MatrixXd d_out = MatrixXd::Ones(2, x_.cols());
  net_.Backward(theta_.data(), d_out, &c, nullptr);
  VectorXd grad = VectorXd::Zero(net_.num_params());
  net_.LayerGradient(net_.num_layers() - 1, c, grad.data());
  const VectorXd block = theta_.segment(last.weight_offset, last.num_params());
  const MatrixXd jac = NumericJacobian(
      [&](const VectorXd& b) {
        VectorXd th = theta_;
        th.segment(last.weight_offset, last.num_params()) = b;
        return VectorXd::Constant(1, Output(th, x_).sum());
      },
      block);
  EXPECT_LT(RelativeError(grad.segment(last.weight_offset, last.num_params()),
                          jac.row(0).transpose()),
            1e-6);
}

TEST_P(DenseNetworkTest, BitwiseEqualToTheMlpFormulas) {
  Network::Cache c;
  net_.Forward(theta_.data(), x_, &c);
  const MatrixXd d_out = 2.0 * (c.output() - target_);
  MatrixXd d_in;
  net_.Backward(theta_.data(), d_out, &c, &d_in);
  VectorXd grad = VectorXd::Zero(net_.num_params());
  net_.Gradient(c, grad.data());
  const Reference ref(DenseBlocks(net_), theta_, x_, d_out);
  EXPECT_EQ(c.output(), ref.z.back());
  EXPECT_EQ(grad, ref.grad);
  EXPECT_EQ(d_in, ref.d_in);
  for (int i = 0; i < net_.num_layers(); ++i) {
    EXPECT_EQ(c.activation[i], ref.z[i]) << "layer " << i;
  }
}

TEST_P(DenseNetworkTest, MlpFacadeIsBitwiseEqual) {
  const auto& [hidden, output, bias, batch] = GetParam();
  MlpSpec spec{3, {5, 4}, 2, hidden, output};
  spec.bias = bias;
  const Mlp mlp(spec);
  ASSERT_EQ(mlp.num_params(), net_.num_params());
  Mlp::Cache mc;
  mlp.Forward(theta_.data(), x_, &mc);
  Network::Cache nc;
  net_.Forward(theta_.data(), x_, &nc);
  EXPECT_EQ(mc.output(), nc.output());
  const MatrixXd d_out = 2.0 * (nc.output() - target_);
  VectorXd mg = VectorXd::Zero(net_.num_params());
  MatrixXd md_in;
  mlp.Backward(theta_.data(), d_out, &mc, mg.data(), &md_in);
  VectorXd ng = VectorXd::Zero(net_.num_params());
  MatrixXd nd_in;
  net_.Backward(theta_.data(), d_out, &nc, &nd_in);
  net_.Gradient(nc, ng.data());
  EXPECT_EQ(mg, ng);
  EXPECT_EQ(md_in, nd_in);
  // Same initialization stream as well.
  Rng a(3), b(3);
  VectorXd ta(mlp.num_params()), tb(net_.num_params());
  mlp.Initialize(0.7, &a, ta.data());
  net_.Initialize(0.7, &b, tb.data());
  EXPECT_EQ(ta, tb);
}

TEST_P(DenseNetworkTest, PartialPassesEqualFullPasses) {
  Network::Cache full;
  net_.Forward(theta_.data(), x_, &full);
  const MatrixXd d_out = 2.0 * (full.output() - target_);
  net_.Backward(theta_.data(), d_out, &full, nullptr);
  VectorXd grad = VectorXd::Zero(net_.num_params());
  net_.Gradient(full, grad.data());
  for (int layer = 0; layer < net_.num_layers(); ++layer) {
    const LayerBlock blk = net_.block(layer);
    VectorXd moved = theta_;
    moved.segment(blk.offset, blk.size).array() += 0.05;
    Network::Cache partial;
    net_.Forward(theta_.data(), x_, &partial);
    net_.ForwardLayers(moved.data(), layer, net_.num_layers(), &partial);
    EXPECT_EQ(partial.output(), Output(moved, x_)) << "layer " << layer;

    Network::Cache again;
    net_.Forward(theta_.data(), x_, &again);
    net_.BackwardToLayer(theta_.data(), d_out, layer, &again);
    VectorXd block = VectorXd::Zero(net_.num_params());
    net_.LayerGradient(layer, again, block.data());
    EXPECT_EQ(block.segment(blk.offset, blk.size),
              grad.segment(blk.offset, blk.size))
        << "layer " << layer;
    EXPECT_EQ(block.head(blk.offset).cwiseAbs().sum(), 0.0);
    EXPECT_EQ(
        block.tail(net_.num_params() - blk.offset - blk.size).cwiseAbs().sum(),
        0.0);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Activations, DenseNetworkTest,
    ::testing::Combine(
        ::testing::Values(Activation::kTanh, Activation::kSigmoid,
                          Activation::kLeakyRelu),
        ::testing::Values(Activation::kLinear, Activation::kSigmoid),
        ::testing::Bool(), ::testing::Values(1, 5)));

TEST(NetworkTest, BlocksAreContiguousViewsInLayerOrder) {
  const Network net =
      DenseNetwork({4, 6, 3}, Activation::kTanh, Activation::kLinear, true);
  ASSERT_EQ(net.num_layers(), 2);
  EXPECT_EQ(net.block(0).offset, 0);
  EXPECT_EQ(net.block(0).size, 6 * 4 + 6);
  EXPECT_EQ(net.block(1).offset, 30);
  EXPECT_EQ(net.block(1).size, 3 * 6 + 3);
  EXPECT_EQ(net.num_params(), 51);
  EXPECT_EQ(net.input_shape(), Shape::Flat(4));
  EXPECT_EQ(net.output_shape(), Shape::Flat(3));
  const std::vector<DenseBlock> dense = DenseBlocks(net);
  ASSERT_EQ(dense.size(), 2u);
  EXPECT_TRUE(IsDense(net));
  EXPECT_EQ(dense[1].weight_offset, 30);
  EXPECT_EQ(dense[1].bias_offset, 30 + 18);
  EXPECT_EQ(dense[1].in, 6);
  EXPECT_EQ(dense[1].out, 3);
  const Network no_bias =
      DenseNetwork({4, 6, 3}, Activation::kTanh, Activation::kLinear, false);
  EXPECT_EQ(DenseBlockOf(no_bias, 1).bias_offset, -1);
  EXPECT_EQ(no_bias.num_params(), 4 * 6 + 6 * 3);
}

TEST(NetworkTest, WritingALayersBlockChangesTheOutput) {
  const Network net =
      DenseNetwork({3, 4, 2}, Activation::kTanh, Activation::kLinear, true);
  VectorXd theta = RandomParams(net, 5);
  const MatrixXd x = RandomMatrix(3, 4, 6);
  Network::Cache c;
  net.Forward(theta.data(), x, &c);
  const MatrixXd before = c.output();
  // The second layer's bias is the last `outputs` entries of its block: adding
  // 1 there shifts every output by exactly 1 (linear output layer).
  const DenseBlock last = DenseBlockOf(net, 1);
  theta.segment(last.bias_offset, last.out).array() += 1.0;
  net.Forward(theta.data(), x, &c);
  EXPECT_LT(
      (c.output() - (before.array() + 1.0).matrix()).cwiseAbs().maxCoeff(),
      1e-12);
  // Zeroing the first layer's block makes its outputs tanh(0) = 0, so the
  // output is the last bias.
  theta.segment(net.block(0).offset, net.block(0).size).setZero();
  net.Forward(theta.data(), x, &c);
  for (int j = 0; j < x.cols(); ++j) {
    EXPECT_EQ(c.output().col(j), theta.segment(last.bias_offset, last.out));
  }
}

TEST(NetworkTest, SecondEvaluationOfTheSameSizeReusesEveryBuffer) {
  const Network net =
      DenseNetwork({3, 5, 2}, Activation::kSigmoid, Activation::kLinear, true);
  const VectorXd theta = RandomParams(net, 9);
  const MatrixXd x = RandomMatrix(3, 6, 10);
  const MatrixXd d_out = RandomMatrix(2, 6, 11);
  Network::Cache c;
  VectorXd grad = VectorXd::Zero(net.num_params());
  net.Forward(theta.data(), x, &c);
  net.Backward(theta.data(), d_out, &c, nullptr);
  net.Gradient(c, grad.data());
  // A reallocation would move some buffer: compare every address.
  std::vector<const double*> before;
  auto collect = [&](std::vector<const double*>* out) {
    out->clear();
    for (const MatrixXd& m : c.activation) out->push_back(m.data());
    for (const MatrixXd& m : c.d_activation) out->push_back(m.data());
    for (const LayerWorkspace& w : c.work) {
      for (const MatrixXd& m : w.buffers) out->push_back(m.data());
    }
  };
  collect(&before);
  net.Forward(theta.data(), 0.5 * x, &c);
  net.Backward(theta.data(), d_out, &c, nullptr);
  net.Gradient(c, grad.data());
  std::vector<const double*> after;
  collect(&after);
  EXPECT_EQ(before, after);
}

}  // namespace
}  // namespace sparrow::core
