#include "core/models/layers/dense.h"

#include <cassert>
#include <cmath>

#include "core/models/layers/init.h"
#include "core/models/network.h"

namespace sparrow::core {

using Eigen::Map;
using Eigen::MatrixXd;
using Eigen::MatrixXf;
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
  if (precision_ != Precision::kFloat32) return;
  ws->single.resize(6);
  ws->single[kWeights32].resize(out_, in_);
  ws->single[kInput32].resize(in_, cols);
  ws->single[kDelta32].resize(out_, cols);
  ws->single[kOutput32].resize(out_, cols);
  ws->single[kDInput32].resize(in_, cols);
  ws->single[kGradient32].resize(out_, in_);
}

// The products and the bias add are the original Mlp's expressions on the same
// operand types, so results agree with it to the bit.
void DenseLayer::Forward(const double* params, const MatrixXd& in,
                         LayerWorkspace* ws, MatrixXd* out) const {
  MatrixXd& v = ws->buffers[kPreActivation];
  if (precision_ == Precision::kFloat32) {
    std::vector<MatrixXf>& f = ws->single;
    f[kWeights32] = Map<const MatrixXd>(params, out_, in_).cast<float>();
    f[kInput32] = in.cast<float>();
    f[kOutput32].noalias() = f[kWeights32] * f[kInput32];
    v = f[kOutput32].cast<double>();
  } else {
    v.noalias() = Map<const MatrixXd>(params, out_, in_) * in;
  }
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
  if (precision_ == Precision::kFloat32) {
    // A and the input were rounded by the Forward this Backward follows
    // (same params and input). The weight gradient's float product is formed
    // here, where the workspace is writable, as Conv2d does.
    std::vector<MatrixXf>& f = ws->single;
    f[kDelta32] = delta.cast<float>();
    f[kGradient32].noalias() = f[kDelta32] * f[kInput32].transpose();
    if (d_in == nullptr) return;
    f[kDInput32].noalias() = f[kWeights32].transpose() * f[kDelta32];
    *d_in = f[kDInput32].cast<double>();
  } else if (d_in != nullptr) {
    d_in->noalias() =
        Map<const MatrixXd>(params, out_, in_).transpose() * delta;
  }
}

void DenseLayer::Gradient(const MatrixXd& in, const LayerWorkspace& ws,
                          double* grad) const {
  const MatrixXd& delta = ws.buffers[kDelta];
  if (precision_ == Precision::kFloat32) {
    Map<MatrixXd>(grad, out_, in_) += ws.single[kGradient32].cast<double>();
  } else {
    Map<MatrixXd>(grad, out_, in_).noalias() += delta * in.transpose();
  }
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

std::vector<MatrixBlock> DenseLayer::MatrixBlocks() const {
  MatrixBlock b;
  b.rows = out_;
  b.inputs = in_;
  b.bias = bias_;
  return {b};
}

void DenseLayer::AddBlockInputSums(const Eigen::MatrixXd& in,
                                   const LayerWorkspace&,
                                   Eigen::VectorXd* sums) const {
  sums[0].noalias() += in.rowwise().sum();
}

// G P = delta [X; 1]^T P = delta (P [X; 1])^T since P is symmetric: for a
// batch of B samples, B cols (cols + out) multiply-adds instead of out cols^2
// (the FNN's 784-512 layer at B = 64: 2.4 times fewer). In double whatever
// the layer's precision: RLS keeps P and its products in double.
bool DenseLayer::AddPreconditionedGradient(const MatrixXd& in,
                                           const LayerWorkspace& ws,
                                           int /*block*/,
                                           const MatrixXd& p_lower,
                                           std::vector<MatrixXd>* scratch,
                                           MatrixXd* gp) const {
  const Eigen::Index cols = in_ + (bias_ ? 1 : 0);
  scratch->resize(2);
  MatrixXd& x = (*scratch)[0];
  MatrixXd& px = (*scratch)[1];
  x.resize(cols, in.cols());
  x.topRows(in_) = in;
  if (bias_) x.row(in_).setOnes();
  px.noalias() = p_lower.selfadjointView<Eigen::Lower>() * x;
  gp->noalias() += ws.buffers[kDelta] * px.transpose();
  return true;
}

}  // namespace sparrow::core
