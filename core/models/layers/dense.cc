#include "core/models/layers/dense.h"

#include <cassert>
#include <cmath>

#include "core/models/layers/init.h"
#include "core/models/network.h"

namespace sparrow::core {

using Eigen::Map;
using Eigen::MatrixXd;
using Eigen::VectorXd;

DenseBlock DenseLayer::Block(int offset) const {
  DenseBlock b;
  b.in = in_;
  b.out = out_;
  b.weight_offset = offset;
  b.bias_offset = bias_ ? offset + in_ * out_ : -1;
  b.activation = activation_;
  return b;
}

void DenseLayer::Initialize(double sigma0, Rng* rng, double* params) const {
  InitWeights(init_, sigma0, in_, out_, in_ * out_, rng, params);
  if (bias_) InitBiases(init_, sigma0, in_, out_, rng, params + in_ * out_);
}

void DenseLayer::ResizeWorkspace(int cols, LayerWorkspace* ws) const {
  ws->buffers.resize(2);
  for (MatrixXd& b : ws->buffers) b.resize(out_, cols);
}

// The products and the bias add are the original Mlp's expressions on the same
// operand types, so results agree with it to the bit.
void DenseLayer::Forward(const double* params, const MatrixXd& in,
                         LayerWorkspace* ws, MatrixXd* out) const {
  MatrixXd& v = ws->buffers[kPreActivation];
  v.noalias() = Map<const MatrixXd>(params, out_, in_) * in;
  if (bias_) v.colwise() += Map<const VectorXd>(params + in_ * out_, out_);
  ApplyActivation(activation_, v, *out);
}

void DenseLayer::Backward(const double* params, const MatrixXd& /*in*/,
                          const MatrixXd& out,
                          const Eigen::Ref<const MatrixXd>& d_out,
                          LayerWorkspace* ws, MatrixXd* d_in) const {
  // delta = f'(v) .* d_out, built in place: the same products as the Mlp's
  // d_out .* f'(v) (multiplication commutes exactly), one buffer fewer.
  MatrixXd& delta = ws->buffers[kDelta];
  ActivationDerivative(activation_, ws->buffers[kPreActivation], out, delta);
  if (d_out.outerStride() == d_out.rows()) {
    // Contiguous (every caller but a strided block): through a Map the
    // product is one linear vectorized loop instead of one per column.
    delta.array() *=
        Map<const MatrixXd>(d_out.data(), d_out.rows(), d_out.cols()).array();
  } else {
    delta.array() *= d_out.array();
  }
  if (d_in != nullptr) {
    d_in->noalias() =
        Map<const MatrixXd>(params, out_, in_).transpose() * delta;
  }
}

void DenseLayer::Gradient(const MatrixXd& in, const LayerWorkspace& ws,
                          double* grad) const {
  const MatrixXd& delta = ws.buffers[kDelta];
  Map<MatrixXd>(grad, out_, in_).noalias() += delta * in.transpose();
  if (bias_) Map<VectorXd>(grad + in_ * out_, out_) += delta.rowwise().sum();
}

DenseBlock DenseBlockOf(const Network& net, int layer) {
  const auto* dense = dynamic_cast<const DenseLayer*>(&net.layer(layer));
  assert(dense != nullptr && "DenseBlockOf: not a dense layer");
  return dense->Block(net.block(layer).offset);
}

std::vector<DenseBlock> DenseBlocks(const Network& net) {
  std::vector<DenseBlock> blocks;
  for (int i = 0; i < net.num_layers(); ++i) {
    if (const auto* d = dynamic_cast<const DenseLayer*>(&net.layer(i))) {
      blocks.push_back(d->Block(net.block(i).offset));
    }
  }
  return blocks;
}

bool IsDense(const Network& net) {
  return static_cast<int>(DenseBlocks(net).size()) == net.num_layers();
}

}  // namespace sparrow::core
