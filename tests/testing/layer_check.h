// Finite-difference checks of a Layer or a Network: the loss is a fixed
// random linear functional of the output, L = sum(R .* out), so dL/d(out) = R.
#ifndef SPARROW_TESTS_TESTING_LAYER_CHECK_H_
#define SPARROW_TESTS_TESTING_LAYER_CHECK_H_

#include "Eigen/Core"
#include "core/models/layer.h"
#include "core/models/network.h"
#include "tests/testing/finite_difference.h"

namespace sparrow::testing {

struct GradientErrors {
  double params = 0.0;  // relative error of dL/dparams
  double input = 0.0;   // relative error of dL/d(input)
};

// Analytic against central differences for `net` at params on the batch x.
inline GradientErrors CheckNetworkGradients(const core::Network& net,
                                            const Eigen::VectorXd& params,
                                            const Eigen::MatrixXd& x,
                                            uint64_t seed) {
  const Eigen::MatrixXd r =
      RandomMatrix(net.outputs(), static_cast<int>(x.cols()), seed);
  core::Network::Cache cache;
  const auto loss = [&](const Eigen::VectorXd& p, const Eigen::MatrixXd& in) {
    net.Forward(p.data(), in, &cache);
    return r.cwiseProduct(cache.output()).sum();
  };
  net.Forward(params.data(), x, &cache);
  Eigen::MatrixXd d_in(x.rows(), x.cols());
  net.Backward(params.data(), r, &cache, &d_in);
  Eigen::VectorXd grad = Eigen::VectorXd::Zero(params.size());
  net.Gradient(cache, grad.data());
  const Eigen::VectorXd fd_params = NumericGradient(
      [&](const Eigen::VectorXd& p) { return loss(p, x); }, params);
  const Eigen::VectorXd x_flat =
      Eigen::Map<const Eigen::VectorXd>(x.data(), x.size());
  const Eigen::VectorXd fd_in = NumericGradient(
      [&](const Eigen::VectorXd& v) {
        return loss(params, Eigen::Map<const Eigen::MatrixXd>(
                                v.data(), x.rows(), x.cols()));
      },
      x_flat);
  GradientErrors e;
  e.params = RelativeError(grad, fd_params);
  e.input = RelativeError(
      Eigen::Map<const Eigen::VectorXd>(d_in.data(), d_in.size()), fd_in);
  return e;
}

}  // namespace sparrow::testing

#endif  // SPARROW_TESTS_TESTING_LAYER_CHECK_H_
