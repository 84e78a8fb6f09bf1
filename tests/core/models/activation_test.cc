#include "core/models/activation.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace sparrow::core {
namespace {

// Distance in units in the last place of `expected`.
double Ulps(double expected, double actual) {
  const double ulp =
      std::nextafter(std::fabs(expected), std::numeric_limits<double>::max()) -
      std::fabs(expected);
  return std::fabs(expected - actual) / ulp;
}

TEST(TanhTest, WithinTwoUlpsOfTheLibraryTanh) {
  double worst = 0.0;
  double worst_at = 0.0;
  auto check = [&](double x) {
    const double u = Ulps(std::tanh(x), Tanh(x));
    if (u > worst) {
      worst = u;
      worst_at = x;
    }
  };
  // Dense grid across both branches and the switch at |x| = 0.625.
  for (double x = -25.0; x < 25.0; x += 3.1e-5) check(x);
  for (double x = 0.62; x < 0.63; x += 1e-9) check(x);
  // Tiny arguments, where tanh(x) ~ x.
  for (double x = 1e-300; x < 1.0; x *= 1.05) {
    check(x);
    check(-x);
  }
  EXPECT_LE(worst, 2.0) << "at x = " << worst_at;
}

TEST(TanhTest, SpecialValues) {
  EXPECT_EQ(Tanh(0.0), 0.0);
  EXPECT_TRUE(std::signbit(Tanh(-0.0)));
  EXPECT_EQ(Tanh(std::numeric_limits<double>::infinity()), 1.0);
  EXPECT_EQ(Tanh(-std::numeric_limits<double>::infinity()), -1.0);
  EXPECT_EQ(Tanh(800.0), 1.0);  // exp(1600) overflows to +Inf
  EXPECT_TRUE(std::isnan(Tanh(std::numeric_limits<double>::quiet_NaN())));
}

TEST(ActivationTest, SigmoidIsTheLogisticFunction) {
  Eigen::VectorXd v(5);
  v << -40.0, -1.5, 0.0, 0.3, 12.0;
  Eigen::VectorXd z(5);
  ApplyActivation(Activation::kSigmoid, v, z);
  for (int i = 0; i < 5; ++i) {
    EXPECT_NEAR(z(i), 1.0 / (1.0 + std::exp(-v(i))), 1e-15) << v(i);
  }
}

}  // namespace
}  // namespace sparrow::core
