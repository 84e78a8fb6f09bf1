#include "core/models/layers/recurrent.h"

#include <cmath>

#include "core/models/layers/init.h"

namespace sparrow::core {

using Eigen::Map;
using Eigen::MatrixXd;
using Eigen::VectorXd;

RecurrentLayer::RecurrentLayer(int steps, int features, int hidden, int rows,
                               bool sequence_output, InitLaw init)
    : steps_(steps),
      features_(features),
      hidden_(hidden),
      rows_(rows),
      sequence_output_(sequence_output),
      init_(init) {}

void RecurrentLayer::Initialize(double sigma0, Rng* rng, double* params) const {
  const int r = rows_, h = hidden_;
  // PyTorch bounds every recurrent parameter, W's too, by 1/sqrt(H).
  const int w_fan_in = init_ == InitLaw::kTorch ? h : features_;
  InitWeights(init_, sigma0, w_fan_in, h, r * features_, rng, params);
  InitBiases(init_, sigma0, h, r, rng, params + b_offset());
  if (init_ == InitLaw::kOrthogonal) {
    // One orthogonal H x H block per gate (r / h of them) of the r x H V.
    for (int g = 0; g < r / h; ++g) {
      InitOrthogonal(sigma0, h, r, rng, params + v_weight_offset() + g * h);
    }
  } else {
    InitWeights(init_, sigma0, h, h, r * h, rng, params + v_weight_offset());
  }
  InitBiases(init_, sigma0, h, r, rng, params + v_bias_offset());
}

void RecurrentLayer::Resize(int cols, int num_buffers,
                            LayerWorkspace* ws) const {
  const int n = steps_ * cols;
  // Rows and columns of each Buffer, in enum order.
  const int size[][2] = {{rows_, n},   {hidden_, n},    {hidden_, n},
                         {rows_, n},   {hidden_, cols}, {rows_, 1},
                         {hidden_, n}, {hidden_, n},    {hidden_, cols}};
  ws->buffers.resize(num_buffers);
  for (int k = 0; k < num_buffers; ++k) {
    ws->buffers[k].resize(size[k][0], size[k][1]);
  }
}

void RecurrentLayer::ProjectInputs(const double* params, const MatrixXd& in,
                                   LayerWorkspace* ws) const {
  const int n = static_cast<int>(in.cols()) * steps_;
  MatrixXd& bias = ws->buffers[kBiasSum];
  bias = Map<const VectorXd>(params + b_offset(), rows_) +
         Map<const VectorXd>(params + v_bias_offset(), rows_);
  // Biases first, then the product added: one pass over S fewer than the
  // product (which zeroes its destination) followed by the bias add.
  MatrixXd& s = ws->buffers[kPreActivation];
  s.colwise() = bias.col(0);
  s.noalias() += Map<const MatrixXd>(params, rows_, features_) *
                 Map<const MatrixXd>(in.data(), features_, n);
  StepCols(ws->buffers[kPrevHidden], 0, steps_).setZero();
}

void RecurrentLayer::AddRecurrence(const double* params, int t,
                                   LayerWorkspace* ws) const {
  if (t == 0) return;
  StepCols(ws->buffers[kPreActivation], t, steps_).noalias() +=
      Map<const MatrixXd>(params + v_weight_offset(), rows_, hidden_) *
      StepCols(ws->buffers[kPrevHidden], t, steps_);
}

void RecurrentLayer::CarryHidden(int t, LayerWorkspace* ws) const {
  if (t + 1 == steps_) return;
  StepCols(ws->buffers[kPrevHidden], t + 1, steps_) =
      StepCols(ws->buffers[kHidden], t, steps_);
}

void RecurrentLayer::WriteOutput(const LayerWorkspace& ws,
                                 MatrixXd* out) const {
  const MatrixXd& h = ws.buffers[kHidden];
  if (sequence_output_) {
    // Step-major columns of T*H are the memory of h (H x T*B).
    Map<MatrixXd>(out->data(), hidden_, h.cols()) = h;
  } else {
    *out = StepCols(h, steps_ - 1, steps_);
  }
}

void RecurrentLayer::HiddenGradient(const double* params,
                                    const Eigen::Ref<const MatrixXd>& d_out,
                                    int t, LayerWorkspace* ws) const {
  MatrixXd& dh = ws->buffers[kStepGrad];
  const int cols = static_cast<int>(dh.cols());
  // dL/d(out) at step t: the step's rows of every column of d_out.
  const bool has_out = sequence_output_ || t + 1 == steps_;
  const ConstStepMap d_out_t(
      d_out.data() + (sequence_output_ ? t * hidden_ : 0), hidden_, cols,
      Eigen::OuterStride<>(d_out.outerStride()));
  if (t + 1 == steps_) {
    dh = d_out_t;
    return;
  }
  dh.noalias() = Map<const MatrixXd>(params + v_weight_offset(), rows_, hidden_)
                     .transpose() *
                 StepCols(ws->buffers[kDelta], t + 1, steps_);
  if (has_out) dh += d_out_t;
}

void RecurrentLayer::InputGradient(const double* params,
                                   const LayerWorkspace& ws,
                                   MatrixXd* d_in) const {
  const MatrixXd& delta = ws.buffers[kDelta];
  d_in->resize(steps_ * features_, delta.cols() / steps_);
  Map<MatrixXd>(d_in->data(), features_, delta.cols()).noalias() =
      Map<const MatrixXd>(params, rows_, features_).transpose() * delta;
}

void RecurrentLayer::Gradient(const MatrixXd& in, const LayerWorkspace& ws,
                              double* grad) const {
  const MatrixXd& delta = ws.buffers[kDelta];
  const Eigen::Index n = delta.cols();
  Map<MatrixXd>(grad, rows_, features_).noalias() +=
      delta * Map<const MatrixXd>(in.data(), features_, n).transpose();
  Map<MatrixXd>(grad + v_weight_offset(), rows_, hidden_).noalias() +=
      delta * ws.buffers[kPrevHidden].transpose();
  // Row sums column by column: contiguous and vectorized, where Eigen's
  // rowwise().sum() of a column-major matrix strides across it.
  Map<VectorXd> db(grad + b_offset(), rows_);
  Map<VectorXd> dv(grad + v_bias_offset(), rows_);
  for (Eigen::Index j = 0; j < n; ++j) {
    db += delta.col(j);
    dv += delta.col(j);
  }
}

std::vector<MatrixBlock> RecurrentLayer::MatrixBlocks() const {
  MatrixBlock w;
  w.offset = w_offset();
  w.rows = rows_;
  w.inputs = features_;
  w.rows_per_sample = steps_;
  w.steps = steps_;
  MatrixBlock v = w;
  v.offset = v_weight_offset();
  v.inputs = hidden_;
  return {w, v};
}

void RecurrentLayer::AddBlockInputSums(const Eigen::MatrixXd& in,
                                       const LayerWorkspace& ws,
                                       Eigen::VectorXd* sums) const {
  const Eigen::VectorXd total = in.rowwise().sum();
  for (int t = 0; t < steps_; ++t) {
    sums[0] += total.segment(t * features_, features_);
  }
  sums[1].noalias() += ws.buffers[kPrevHidden].rowwise().sum();
}

}  // namespace sparrow::core
