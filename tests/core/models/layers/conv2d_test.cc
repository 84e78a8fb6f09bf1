#include "core/models/layers/conv2d.h"

#include <memory>
#include <vector>

#include "core/models/layers/dense.h"
#include "core/models/layers/max_pool2d.h"
#include "core/models/layers/step_dense.h"
#include "core/models/network.h"
#include "gtest/gtest.h"
#include "tests/testing/layer_check.h"

namespace sparrow::core {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using testing::CheckNetworkGradients;
using testing::RandomMatrix;

VectorXd RandomParams(const Network& net, uint64_t seed) {
  return RandomMatrix(net.num_params(), 1, seed);
}

Network One(std::shared_ptr<const Layer> layer) {
  return Network({std::move(layer)});
}

TEST(Conv2dTest, MatchesADirectConvolution) {
  const ConvGeometry g{Shape{2, 5, 4}, 3, 3, 2, 1};
  const Conv2dLayer conv(g, Activation::kLinear, InitLaw::kGlorot);
  ASSERT_EQ(conv.output_shape(), (Shape{3, 3, 2}));
  const Network net = One(std::make_shared<Conv2dLayer>(conv));
  const VectorXd p = RandomParams(net, 1);
  const MatrixXd x = RandomMatrix(g.in.size(), 2, 2);
  Network::Cache cache;
  net.Forward(p.data(), x, &cache);
  const int f = g.field();
  for (int b = 0; b < 2; ++b) {
    for (int k = 0; k < 3; ++k) {
      for (int u = 0; u < 3; ++u) {
        for (int v = 0; v < 2; ++v) {
          double z = p(3 * f + k);
          for (int c = 0; c < 2; ++c) {
            for (int i = 0; i < 3; ++i) {
              for (int j = 0; j < 3; ++j) {
                const int iy = u * 2 + i - 1, ix = v * 2 + j - 1;
                if (iy < 0 || iy >= 5 || ix < 0 || ix >= 4) continue;
                z += p(((c * 3 + i) * 3 + j) * 3 + k) *
                     x(c * 20 + iy * 4 + ix, b);
              }
            }
          }
          EXPECT_NEAR(cache.output()(k * 6 + u * 2 + v, b), z, 1e-12);
        }
      }
    }
  }
}

TEST(Conv2dTest, GradientsMatchFiniteDifferences) {
  for (const ConvGeometry& g : {ConvGeometry{Shape{2, 5, 5}, 3, 3, 1, 1},
                                ConvGeometry{Shape{1, 6, 5}, 2, 2, 2, 0},
                                ConvGeometry{Shape{3, 4, 4}, 2, 3, 1, 0}}) {
    const Network net = One(
        std::make_shared<Conv2dLayer>(g, Activation::kTanh, InitLaw::kGlorot));
    const auto e = CheckNetworkGradients(net, RandomParams(net, 3),
                                         RandomMatrix(g.in.size(), 3, 4), 5);
    EXPECT_LT(e.params, 1e-7);
    EXPECT_LT(e.input, 1e-7);
  }
}

TEST(MaxPool2dTest, PicksTheWindowMaximumAndRoutesItsGradient) {
  const MaxPool2dLayer pool(Shape{1, 4, 4}, 2, 2);
  ASSERT_EQ(pool.output_shape(), (Shape{1, 2, 2}));
  MatrixXd x(16, 1);
  for (int i = 0; i < 16; ++i) x(i, 0) = (i * 7) % 16;
  const Network net = One(std::make_shared<MaxPool2dLayer>(pool));
  Network::Cache cache;
  net.Forward(nullptr, x, &cache);
  // Windows {0,1,4,5}, {2,3,6,7}, {8,9,12,13}, {10,11,14,15}.
  EXPECT_EQ(cache.output()(0, 0), 12);  // x(4) = 28 % 16
  EXPECT_EQ(cache.output()(1, 0), 14);  // x(2)
  EXPECT_EQ(cache.output()(2, 0), 15);  // x(9) = 63 % 16
  EXPECT_EQ(cache.output()(3, 0), 13);  // x(11) = 77 % 16
  const auto e = CheckNetworkGradients(net, VectorXd(), x, 6);
  EXPECT_LT(e.input, 1e-8);
}

// conv -> pool -> conv -> pool -> flatten -> dense -> dense: the whole small
// CNN against finite differences.
TEST(CnnTest, WholeNetworkGradientsMatchFiniteDifferences) {
  const Shape in{2, 8, 8};
  auto c1 = std::make_shared<Conv2dLayer>(ConvGeometry{in, 3, 3, 1, 1},
                                          Activation::kTanh, InitLaw::kTorch);
  auto p1 = std::make_shared<MaxPool2dLayer>(c1->output_shape(), 2, 2);
  auto c2 = std::make_shared<Conv2dLayer>(
      ConvGeometry{p1->output_shape(), 4, 3, 1, 1}, Activation::kSigmoid,
      InitLaw::kHe);
  auto p2 = std::make_shared<MaxPool2dLayer>(c2->output_shape(), 2, 2);
  auto flat = std::make_shared<FlattenLayer>(p2->output_shape());
  ASSERT_EQ(flat->output_shape().size(), 16);
  auto d1 = std::make_shared<DenseLayer>(16, 5, Activation::kTanh, true);
  auto d2 = std::make_shared<DenseLayer>(5, 3, Activation::kLinear, true);
  const Network net({c1, p1, c2, p2, flat, d1, d2});
  Rng rng(7);
  VectorXd p(net.num_params());
  net.Initialize(1.0, &rng, p.data());
  const auto e =
      CheckNetworkGradients(net, p, RandomMatrix(in.size(), 3, 8), 9);
  EXPECT_LT(e.params, 1e-6);
  EXPECT_LT(e.input, 1e-6);
}

TEST(Conv2dTest, TorchInitIsUniformWithinOneOverSqrtFanIn) {
  const Conv2dLayer conv(ConvGeometry{Shape{4, 6, 6}, 8, 3, 1, 1},
                         Activation::kRelu, InitLaw::kTorch);
  Rng rng(1);
  VectorXd p(conv.num_params());
  conv.Initialize(1.0, &rng, p.data());
  const double bound = 1.0 / 6.0;  // 1 / sqrt(4 * 3 * 3)
  EXPECT_LE(p.cwiseAbs().maxCoeff(), bound);
  EXPECT_GT(p.cwiseAbs().maxCoeff(), 0.9 * bound);
  EXPECT_NEAR(p.mean(), 0.0, 0.02);
}

TEST(StepDenseTest, GradientsMatchFiniteDifferences) {
  const Network net =
      One(std::make_shared<StepDenseLayer>(4, 3, 2, InitLaw::kGlorot));
  const auto e = CheckNetworkGradients(net, RandomParams(net, 10),
                                       RandomMatrix(12, 3, 11), 12);
  EXPECT_LT(e.params, 1e-8);
  EXPECT_LT(e.input, 1e-8);
}

}  // namespace
}  // namespace sparrow::core
