// Precision::kFloat32 against kFloat64 for the layers that honour it (Dense,
// Conv2d) and a whole CNN: the same outputs, input gradients and parameter
// gradients to float's rounding, not bit-identical (the float products are
// really taken), and bit-identical from one evaluation to the next.
#include <memory>
#include <vector>

#include "core/models/layers/conv2d.h"
#include "core/models/layers/dense.h"
#include "core/models/layers/max_pool2d.h"
#include "core/models/network.h"
#include "gtest/gtest.h"
#include "tests/testing/finite_difference.h"

namespace sparrow::core {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using testing::RandomMatrix;
using testing::RelativeError;

using Layers = std::vector<std::shared_ptr<const Layer>>;

// A small CNN (conv -> pool -> conv -> flatten -> dense -> dense) whose dense
// and conv layers compute in `precision`.
Network SmallCnn(Precision precision) {
  const Shape in{2, 8, 8};
  auto c1 = std::make_shared<Conv2dLayer>(ConvGeometry{in, 4, 3, 1, 1},
                                          Activation::kRelu, InitLaw::kTorch,
                                          precision);
  auto p1 = std::make_shared<MaxPool2dLayer>(c1->output_shape(), 2, 2);
  auto c2 = std::make_shared<Conv2dLayer>(
      ConvGeometry{p1->output_shape(), 3, 3, 2, 1}, Activation::kTanh,
      InitLaw::kTorch, precision);
  auto flat = std::make_shared<FlattenLayer>(c2->output_shape());
  auto d1 = std::make_shared<DenseLayer>(flat->output_shape().size(), 6,
                                         Activation::kRelu, true,
                                         InitLaw::kTorch, precision);
  auto d2 = std::make_shared<DenseLayer>(6, 3, Activation::kLinear, true,
                                         InitLaw::kTorch, precision);
  return Network(Layers{c1, p1, c2, flat, d1, d2});
}

Network OneDense(Precision precision) {
  return Network(Layers{std::make_shared<DenseLayer>(
      7, 5, Activation::kTanh, true, InitLaw::kGlorot, precision)});
}

Network OneConv(Precision precision) {
  return Network(Layers{std::make_shared<Conv2dLayer>(
      ConvGeometry{Shape{3, 6, 5}, 4, 3, 1, 1}, Activation::kSigmoid,
      InitLaw::kGlorot, precision)});
}

struct Pass {
  MatrixXd output;
  MatrixXd d_in;
  VectorXd grad;
};

// Forward, Backward with dL/d(out) = r, Gradient; on a reused cache when
// given one.
Pass Evaluate(const Network& net, const VectorXd& p, const MatrixXd& x,
              const MatrixXd& r, Network::Cache* cache) {
  Pass pass;
  net.Forward(p.data(), x, cache);
  pass.output = cache->output();
  pass.d_in.resize(x.rows(), x.cols());
  net.Backward(p.data(), r, cache, &pass.d_in);
  pass.grad = VectorXd::Zero(p.size());
  net.Gradient(*cache, pass.grad.data());
  return pass;
}

double Flat(const MatrixXd& a, const MatrixXd& b) {
  return RelativeError(Eigen::Map<const VectorXd>(a.data(), a.size()),
                       Eigen::Map<const VectorXd>(b.data(), b.size()));
}

void ExpectFloatAgreesWithDouble(Network (*make)(Precision), int cols) {
  const Network f64 = make(Precision::kFloat64);
  const Network f32 = make(Precision::kFloat32);
  Rng rng(3);
  VectorXd p(f64.num_params());
  f64.Initialize(1.0, &rng, p.data());
  const MatrixXd x = RandomMatrix(f64.inputs(), cols, 4);
  const MatrixXd r = RandomMatrix(f64.outputs(), cols, 5);
  Network::Cache c64, c32;
  const Pass a = Evaluate(f64, p, x, r, &c64);
  const Pass b = Evaluate(f32, p, x, r, &c32);
  for (const double e : {Flat(a.output, b.output), Flat(a.d_in, b.d_in),
                         RelativeError(a.grad, b.grad)}) {
    EXPECT_LT(e, 1e-5);
    EXPECT_GT(e, 0.0) << "float32 gave the float64 result to the bit";
  }
  // The same evaluation again on the reused workspace: bit-identical.
  const Pass again = Evaluate(f32, p, x, r, &c32);
  EXPECT_EQ(again.output, b.output);
  EXPECT_EQ(again.d_in, b.d_in);
  EXPECT_EQ(again.grad, b.grad);
}

TEST(PrecisionTest, Float32DenseAgreesWithFloat64ToFloatRounding) {
  ExpectFloatAgreesWithDouble(OneDense, 9);
}

TEST(PrecisionTest, Float32ConvAgreesWithFloat64ToFloatRounding) {
  ExpectFloatAgreesWithDouble(OneConv, 4);
}

TEST(PrecisionTest, Float32CnnAgreesWithFloat64ToFloatRounding) {
  ExpectFloatAgreesWithDouble(SmallCnn, 5);
}

}  // namespace
}  // namespace sparrow::core
