// Helpers for the layer tests: evaluating one Layer on a batch and its
// gradients for the loss L = sum(C .* out), a random linear functional of the
// output.
#ifndef SPARROW_TESTS_CORE_MODELS_LAYERS_LAYER_CHECKS_H_
#define SPARROW_TESTS_CORE_MODELS_LAYERS_LAYER_CHECKS_H_

#include <memory>
#include <vector>

#include "Eigen/Core"
#include "core/models/layer.h"
#include "core/models/network.h"
#include "core/util/random.h"

namespace sparrow::testing {

inline Eigen::MatrixXd LayerOutput(const core::Layer& layer,
                                   const Eigen::VectorXd& theta,
                                   const Eigen::MatrixXd& x) {
  core::LayerWorkspace ws;
  layer.ResizeWorkspace(static_cast<int>(x.cols()), &ws);
  Eigen::MatrixXd out(layer.output_shape().size(), x.cols());
  layer.Forward(theta.data(), x, &ws, &out);
  return out;
}

inline double LinearLoss(const core::Layer& layer, const Eigen::VectorXd& theta,
                         const Eigen::MatrixXd& x, const Eigen::MatrixXd& c) {
  return (LayerOutput(layer, theta, x).array() * c.array()).sum();
}

// dL/dtheta and dL/dx of LinearLoss. With strided_d_out, d_out reaches the
// layer as a block of a taller matrix (outer stride != rows).
inline void LinearLossGradients(const core::Layer& layer,
                                const Eigen::VectorXd& theta,
                                const Eigen::MatrixXd& x,
                                const Eigen::MatrixXd& c, bool strided_d_out,
                                Eigen::VectorXd* grad, Eigen::MatrixXd* d_in) {
  core::LayerWorkspace ws;
  layer.ResizeWorkspace(static_cast<int>(x.cols()), &ws);
  Eigen::MatrixXd out(layer.output_shape().size(), x.cols());
  layer.Forward(theta.data(), x, &ws, &out);
  Eigen::MatrixXd tall = Eigen::MatrixXd::Constant(c.rows() + 3, c.cols(), 7);
  tall.topRows(c.rows()) = c;
  if (strided_d_out) {
    layer.Backward(theta.data(), x, out, tall.topRows(c.rows()), &ws, d_in);
  } else {
    layer.Backward(theta.data(), x, out, c, &ws, d_in);
  }
  *grad = Eigen::VectorXd::Zero(layer.num_params());
  layer.Gradient(x, ws, grad->data());
}

inline double NetworkLinearLoss(const core::Network& net,
                                const Eigen::VectorXd& theta,
                                const Eigen::MatrixXd& x,
                                const Eigen::MatrixXd& c) {
  core::Network::Cache cache;
  net.Forward(theta.data(), x, &cache);
  return (cache.output().array() * c.array()).sum();
}

inline Eigen::VectorXd NetworkLinearLossGradient(const core::Network& net,
                                                 const Eigen::VectorXd& theta,
                                                 const Eigen::MatrixXd& x,
                                                 const Eigen::MatrixXd& c) {
  core::Network::Cache cache;
  net.Forward(theta.data(), x, &cache);
  net.Backward(theta.data(), c, &cache, nullptr);
  Eigen::VectorXd grad = Eigen::VectorXd::Zero(net.num_params());
  net.Gradient(cache, grad.data());
  return grad;
}

// Every buffer's address, to check that a second evaluation allocates nothing.
inline std::vector<const double*> BufferAddresses(
    const core::LayerWorkspace& ws) {
  std::vector<const double*> addresses;
  for (const Eigen::MatrixXd& m : ws.buffers) addresses.push_back(m.data());
  return addresses;
}

}  // namespace sparrow::testing

#endif  // SPARROW_TESTS_CORE_MODELS_LAYERS_LAYER_CHECKS_H_
