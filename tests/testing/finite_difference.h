// Central finite differences for derivative checks in tests.
#ifndef SPARROW_TESTS_TESTING_FINITE_DIFFERENCE_H_
#define SPARROW_TESTS_TESTING_FINITE_DIFFERENCE_H_

#include <algorithm>
#include <functional>

#include "Eigen/Core"
#include "core/util/random.h"

namespace sparrow::testing {

// Jacobian of f: R^n -> R^m at x by central differences with a step scaled to
// |x_i|.
inline Eigen::MatrixXd NumericJacobian(
    const std::function<Eigen::VectorXd(const Eigen::VectorXd&)>& f,
    const Eigen::VectorXd& x, double h = 1e-6) {
  const Eigen::VectorXd f0 = f(x);
  Eigen::MatrixXd jac(f0.size(), x.size());
  Eigen::VectorXd xp = x;
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    const double step = h * std::max(1.0, std::abs(x(i)));
    xp(i) = x(i) + step;
    const Eigen::VectorXd fp = f(xp);
    xp(i) = x(i) - step;
    const Eigen::VectorXd fm = f(xp);
    xp(i) = x(i);
    jac.col(i) = (fp - fm) / (2.0 * step);
  }
  return jac;
}

inline Eigen::VectorXd NumericGradient(
    const std::function<double(const Eigen::VectorXd&)>& f,
    const Eigen::VectorXd& x, double h = 1e-6) {
  return NumericJacobian(
             [&](const Eigen::VectorXd& v) {
               return Eigen::VectorXd::Constant(1, f(v));
             },
             x, h)
      .row(0)
      .transpose();
}

// Uniform entries in [-1, 1] from a fixed seed: test data must not depend on
// which tests ran before (Eigen's Random() draws from the shared std::rand
// state).
inline Eigen::MatrixXd RandomMatrix(int rows, int cols, uint64_t seed) {
  core::Rng rng(seed);
  Eigen::MatrixXd m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i)
    m.data()[i] = 2.0 * rng.Uniform() - 1.0;
  return m;
}

// ||a - b|| / max(||b||, floor): the relative error the derivative tests bound.
inline double RelativeError(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b,
                            double floor = 1e-8) {
  return (a - b).norm() / std::max(b.norm(), floor);
}

}  // namespace sparrow::testing

#endif  // SPARROW_TESTS_TESTING_FINITE_DIFFERENCE_H_
