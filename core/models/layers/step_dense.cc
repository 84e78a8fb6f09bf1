#include "core/models/layers/step_dense.h"

#include "core/models/layers/init.h"

namespace sparrow::core {

using Eigen::Map;
using Eigen::MatrixXd;
using Eigen::VectorXd;

// A batch (T F x B) seen as T B columns of one step each: sample b's step t
// is column b T + t, so the layer is one GEMM over all steps.
void StepDenseLayer::Initialize(double sigma0, Rng* rng, double* params) const {
  InitWeights(init_, sigma0, in_, out_, in_ * out_, rng, params);
  InitBiases(init_, sigma0, in_, out_, rng, params + in_ * out_);
}

void StepDenseLayer::ResizeWorkspace(int cols, LayerWorkspace* ws) const {
  ws->buffers.resize(1);
  ws->buffers[0].resize(steps_ * out_, cols);  // dL/dz, kept for Gradient
}

void StepDenseLayer::Forward(const double* params, const MatrixXd& in,
                             LayerWorkspace*, MatrixXd* out) const {
  const Eigen::Index cols = steps_ * in.cols();
  Map<MatrixXd> z(out->data(), out_, cols);
  z.noalias() = Map<const MatrixXd>(params, out_, in_) *
                Map<const MatrixXd>(in.data(), in_, cols);
  z.colwise() += Map<const VectorXd>(params + in_ * out_, out_);
}

void StepDenseLayer::Backward(const double* params, const MatrixXd& in,
                              const MatrixXd&,
                              const Eigen::Ref<const MatrixXd>& d_out,
                              LayerWorkspace* ws, MatrixXd* d_in) const {
  MatrixXd& delta = ws->buffers[0];
  delta = d_out;
  if (d_in == nullptr) return;
  d_in->resize(in.rows(), in.cols());
  const Eigen::Index cols = steps_ * delta.cols();
  Map<MatrixXd>(d_in->data(), in_, cols).noalias() =
      Map<const MatrixXd>(params, out_, in_).transpose() *
      Map<const MatrixXd>(delta.data(), out_, cols);
}

void StepDenseLayer::Gradient(const MatrixXd& in, const LayerWorkspace& ws,
                              double* grad) const {
  const MatrixXd& delta = ws.buffers[0];
  const Eigen::Index cols = steps_ * delta.cols();
  const Map<const MatrixXd> d(delta.data(), out_, cols);
  Map<MatrixXd>(grad, out_, in_).noalias() +=
      d * Map<const MatrixXd>(in.data(), in_, cols).transpose();
  Map<VectorXd>(grad + in_ * out_, out_) += d.rowwise().sum();
}

std::vector<MatrixBlock> StepDenseLayer::MatrixBlocks() const {
  MatrixBlock b;
  b.rows = out_;
  b.inputs = in_;
  b.rows_per_sample = steps_;
  b.steps = steps_;
  return {b};
}

// Every step's input is a row: the batch's sum folded over the steps.
void StepDenseLayer::AddBlockInputSums(const Eigen::MatrixXd& in,
                                       const LayerWorkspace&,
                                       Eigen::VectorXd* sums) const {
  const Eigen::VectorXd total = in.rowwise().sum();
  for (int t = 0; t < steps_; ++t) sums[0] += total.segment(t * in_, in_);
}

}  // namespace sparrow::core
