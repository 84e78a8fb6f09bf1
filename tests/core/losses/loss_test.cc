#include "core/losses/loss.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"
#include "tests/testing/finite_difference.h"

namespace sparrow::core {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using testing::NumericGradient;
using testing::NumericJacobian;
using testing::RelativeError;

struct LossCase {
  Loss loss;
  int outputs;
};

class LossDerivativeTest : public ::testing::TestWithParam<LossCase> {
 protected:
  // Targets and predictions valid for the loss: probabilities for BCE, one-hot
  // for softmax.
  void MakeData(MatrixXd* y, MatrixXd* yhat) const {
    const LossCase& c = GetParam();
    *yhat = testing::RandomMatrix(c.outputs, 6, 1);
    *y = testing::RandomMatrix(c.outputs, 6, 2);
    if (c.loss.kind == LossKind::kBinaryCrossEntropy) {
      *yhat = (0.5 + 0.45 * yhat->array()).matrix();
      *y = (y->array() > 0).cast<double>().matrix();
    } else if (c.loss.kind == LossKind::kSoftmaxCrossEntropy) {
      y->setZero();
      for (int j = 0; j < 6; ++j) (*y)(j % c.outputs, j) = 1.0;
      *yhat *= 3.0;
    }
  }
};

TEST_P(LossDerivativeTest, GradientMatchesFiniteDifferences) {
  const Loss& loss = GetParam().loss;
  MatrixXd y, yhat;
  MakeData(&y, &yhat);
  MatrixXd g(y.rows(), y.cols());
  loss.Gradient(y, yhat, g);
  const VectorXd flat = Eigen::Map<const VectorXd>(yhat.data(), yhat.size());
  const VectorXd fd = NumericGradient(
      [&](const VectorXd& v) {
        return loss.Value(
            y, Eigen::Map<const MatrixXd>(v.data(), y.rows(), y.cols()));
      },
      flat);
  EXPECT_LT(RelativeError(Eigen::Map<const VectorXd>(g.data(), g.size()), fd),
            1e-7);
}

TEST_P(LossDerivativeTest, CurvatureAndHessianMatchFiniteDifferences) {
  const Loss& loss = GetParam().loss;
  MatrixXd y, yhat;
  MakeData(&y, &yhat);
  MatrixXd curv(y.rows(), y.cols());
  loss.Curvature(y, yhat, curv);
  for (int j = 0; j < y.cols(); ++j) {
    const MatrixXd fd = NumericJacobian(
        [&](const VectorXd& v) -> VectorXd {
          MatrixXd g(y.rows(), 1);
          loss.Gradient(y.col(j), v, g);
          return g.col(0);
        },
        yhat.col(j));
    const MatrixXd h = loss.SampleHessian(y.col(j), yhat.col(j));
    EXPECT_LT(RelativeError(h, fd), 1e-6) << "sample " << j;
    EXPECT_LT(RelativeError(curv.col(j), fd.diagonal()), 1e-6)
        << "sample " << j;
    EXPECT_GT(curv.col(j).minCoeff(), 0.0);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Losses, LossDerivativeTest,
    ::testing::Values(LossCase{Loss{LossKind::kMse, 0.0}, 2},
                      LossCase{Loss{LossKind::kBinaryCrossEntropy, 0.0}, 1},
                      LossCase{Loss{LossKind::kBinaryCrossEntropy, 1e-4}, 2},
                      LossCase{Loss{LossKind::kSoftmaxCrossEntropy, 0.0}, 3}),
    [](const auto& info) {
      return std::string(LossName(info.param.loss.kind)) +
             (info.param.loss.epsilon > 0 ? "_modified" : "");
    });

TEST(LossTest, ModifiedCrossEntropyIsThePapersFormula) {
  // Bemporad Sec. 5.5: l = -y log(eps + p) - (1 - y) log(1 + eps - p).
  const Loss loss{LossKind::kBinaryCrossEntropy, 1e-4};
  MatrixXd y(1, 2), p(1, 2);
  y << 1, 0;
  p << 0.3, 0.3;
  EXPECT_NEAR(loss.Value(y, p),
              -std::log(1e-4 + 0.3) - std::log(1 + 1e-4 - 0.3), 1e-15);
  // Saturated predictions stay finite: eps bounds the loss and its derivatives.
  p << 0.0, 1.0;
  MatrixXd g(1, 2), c(1, 2);
  loss.Gradient(y, p, g);
  loss.Curvature(y, p, c);
  EXPECT_TRUE(std::isfinite(loss.Value(y, p)));
  EXPECT_TRUE(g.allFinite() && c.allFinite());
  EXPECT_NEAR(c(0, 0), 1e8, 1e-4 * 1e8);
}

TEST(LossTest, PlainCrossEntropyNeverReturnsInfinity) {
  const Loss loss{LossKind::kBinaryCrossEntropy, 0.0};
  MatrixXd y(1, 1), p(1, 1);
  y << 1;
  p << 0.0;
  EXPECT_TRUE(std::isfinite(loss.Value(y, p)));
}

TEST(LossTest, SoftmaxIsShiftInvariantAndStable) {
  const Loss loss{LossKind::kSoftmaxCrossEntropy, 0.0};
  MatrixXd y(3, 1), z(3, 1);
  y << 0, 1, 0;
  z << 1000, 1001, 999;
  const double v = loss.Value(y, z);
  EXPECT_TRUE(std::isfinite(v));
  EXPECT_NEAR(v, loss.Value(y, (z.array() - 1000).matrix()), 1e-12);
}

TEST(LossTest, LowerBoundPerElementBoundsEveryPrediction) {
  MatrixXd y = (testing::RandomMatrix(2, 200, 3).array() > 0).cast<double>();
  y(0, 0) = 0.3;  // a soft target is still a probability
  const MatrixXd yhat =
      0.5 + 0.5 * testing::RandomMatrix(2, 200, 4).array().cwiseMin(1.0);
  for (const Loss& loss :
       {Loss{LossKind::kMse, 0.0}, Loss{LossKind::kBinaryCrossEntropy, 0.0},
        Loss{LossKind::kBinaryCrossEntropy, 1e-4}}) {
    const double bound = loss.LowerBoundPerElement(y);
    ASSERT_TRUE(std::isfinite(bound));
    // Per element, including predictions at 0 and 1 exactly.
    for (Eigen::Index j = 0; j < y.cols(); ++j) {
      for (Eigen::Index i = 0; i < y.rows(); ++i) {
        for (double p : {yhat(i, j), 0.0, 1.0}) {
          MatrixXd yi(1, 1), pi(1, 1);
          yi(0, 0) = y(i, j);
          pi(0, 0) = p;
          EXPECT_GE(loss.Value(yi, pi), bound) << y(i, j) << " " << p;
        }
      }
    }
  }
  EXPECT_EQ(Loss({LossKind::kBinaryCrossEntropy, 1e-4}).LowerBoundPerElement(y),
            -std::log1p(1e-4));
  // Targets outside [0, 1] leave the cross-entropy unbounded below.
  y(1, 1) = 1.5;
  EXPECT_EQ(Loss({LossKind::kBinaryCrossEntropy, 1e-4}).LowerBoundPerElement(y),
            -std::numeric_limits<double>::infinity());
  EXPECT_EQ(Loss({LossKind::kMse, 0.0}).LowerBoundPerElement(y), 0.0);
}

TEST(LossTest, ParseAndValidate) {
  EXPECT_EQ(*ParseLoss("mse"), LossKind::kMse);
  EXPECT_FALSE(ParseLoss("hinge").ok());
  EXPECT_FALSE((Loss{LossKind::kBinaryCrossEntropy, -1.0}).Validate().ok());
}

}  // namespace
}  // namespace sparrow::core
