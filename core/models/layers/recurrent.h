// What the recurrent layers (RnnLayer, LstmLayer) share: shapes, the parameter
// block, initialization, the batched input projection, the parameter and
// input gradients, and the strided per-step views of the workspace.
//
// Sequences. A sample is one column of T*F doubles, step t's F features at
// rows [t*F, (t+1)*F): input shape Shape{1, T, F}, so a 1x28x28 image is read
// row by row as 28 steps of 28 features. The output is every step's hidden
// state, Shape{1, T, H}, in the same step-major layout (so layers stack), or
// with sequence_output false the last step's only, Shape::Flat(H).
//
// Parameter block (ALGORITHMS.md §3.1), R = H (RNN) or 4H (LSTM) rows:
//   [vec W (R x F, column-major); b (R); vec V (R x H, column-major); v (R)]
// so S_t = W x_t + b + V h_{t-1} + v. This is the paper's
// Theta^{lw} = [W; b^T] and Theta^{lv} = [V; v^T] transposed: an RLS optimizer
// can Map [W b] as one R x (F + 1) and [V v] as one R x (H + 1) column-major
// matrix.
//
// Batching. Every workspace buffer with T*B columns stores sample b's step t
// at column b*T + t: the input (T*F x B) is the same memory as an F x T*B
// matrix in that order, so the input projection of all steps is one GEMM, and
// step t of the whole batch is the strided view of columns t, T + t, ...
// (StepCols), on which the recurrence does one GEMM per step.
//
// Immutable; thread safety as for every Layer.
#ifndef SPARROW_CORE_MODELS_LAYERS_RECURRENT_H_
#define SPARROW_CORE_MODELS_LAYERS_RECURRENT_H_

#include "Eigen/Core"
#include "core/models/layer.h"

namespace sparrow::core {

// Step t of every sample of a rows x T*B buffer: a rows x B view with outer
// stride T*rows.
using StepMap = Eigen::Map<Eigen::MatrixXd, 0, Eigen::OuterStride<>>;
using ConstStepMap = Eigen::Map<const Eigen::MatrixXd, 0, Eigen::OuterStride<>>;

inline StepMap StepCols(Eigen::MatrixXd& m, int t, int steps) {
  const Eigen::Index rows = m.rows();
  return StepMap(m.data() + t * rows, rows, m.cols() / steps,
                 Eigen::OuterStride<>(steps * rows));
}
inline ConstStepMap StepCols(const Eigen::MatrixXd& m, int t, int steps) {
  const Eigen::Index rows = m.rows();
  return ConstStepMap(m.data() + t * rows, rows, m.cols() / steps,
                      Eigen::OuterStride<>(steps * rows));
}

class RecurrentLayer : public Layer {
 public:
  // Workspace buffers. T*B columns are ordered b*T + t (see above).
  //  kPreActivation: R x T*B; the RNN's S_t, the LSTM's activated gates
  //                  [I; G; F; O] after Forward.
  //  kHidden:        H x T*B, h_t.
  //  kPrevHidden:    H x T*B, h_{t-1} (zero at t = 0): with the input, the
  //                  per-step regressors X^{lv}_t and X^{lw}_t of an RLS
  //                  optimizer.
  //  kDelta:         R x T*B, dL/dS_t after Backward.
  //  kStepGrad:      H x B, dL/dh_t during Backward.
  //  kBiasSum:       R x 1, b + v.
  //  LSTM only: kCell (H x T*B, c_t), kCellTanh (H x T*B, tanh(c_t)) and
  //  kCellGrad (H x B, dL/dc_t during Backward).
  enum Buffer {
    kPreActivation = 0,
    kHidden = 1,
    kPrevHidden = 2,
    kDelta = 3,
    kStepGrad = 4,
    kBiasSum = 5,
    kCell = 6,
    kCellTanh = 7,
    kCellGrad = 8,
  };

  int steps() const { return steps_; }
  int features() const { return features_; }
  int hidden() const { return hidden_; }
  // R: H for the RNN, 4H for the LSTM.
  int rows() const { return rows_; }
  bool sequence_output() const { return sequence_output_; }
  InitLaw init() const { return init_; }
  // Offsets of W, b, V and v in the parameter block.
  int w_offset() const { return 0; }
  int b_offset() const { return rows_ * features_; }
  int v_weight_offset() const { return b_offset() + rows_; }
  int v_bias_offset() const { return v_weight_offset() + rows_ * hidden_; }

  Shape input_shape() const override { return Shape{1, steps_, features_}; }
  Shape output_shape() const override {
    return sequence_output_ ? Shape{1, steps_, hidden_} : Shape::Flat(hidden_);
  }
  int num_params() const override {
    return rows_ * (features_ + 1) + rows_ * (hidden_ + 1);
  }
  // Per InitLaw, drawn in layout order: kGlorot W, V ~ N(0, sigma0^2 * 2 /
  // (fan_in + H)), kHe N(0, sigma0^2 * 2 / fan_in) (fan_in = F for W, H for
  // V), zero biases; kTorch every parameter sigma0 * U(-1/sqrt(H),
  // 1/sqrt(H)); kOrthogonal W as kGlorot, each gate's H x H block of V
  // sigma0 times a random orthogonal matrix, zero biases.
  void Initialize(double sigma0, Rng* rng, double* params) const override;
  // dW += dS X^T and dV += dS H_prev^T over all steps (one GEMM each), db and
  // dv the row sums of dS.
  void Gradient(const Eigen::MatrixXd& in, const LayerWorkspace& ws,
                double* grad) const override;
  // Two blocks, [W b] over the step inputs and [V v] over h_{t-1} (zero at
  // t = 0), each with T rows per sample (an LSTM's four gates share them).
  std::vector<MatrixBlock> MatrixBlocks() const override;
  void AddBlockInputSums(const Eigen::MatrixXd& in, const LayerWorkspace& ws,
                         Eigen::VectorXd* sums) const override;

 protected:
  RecurrentLayer(int steps, int features, int hidden, int rows,
                 bool sequence_output, InitLaw init);

  // Sizes the buffers the layer uses ([0, num_buffers) of Buffer).
  void Resize(int cols, int num_buffers, LayerWorkspace* ws) const;
  // kPreActivation = W X + b + v for all steps and samples; zeroes h_{-1}.
  void ProjectInputs(const double* params, const Eigen::MatrixXd& in,
                     LayerWorkspace* ws) const;
  // kPreActivation's step t += V h_{t-1} (nothing at t = 0).
  void AddRecurrence(const double* params, int t, LayerWorkspace* ws) const;
  // Copies h_t (kHidden) to kPrevHidden for step t + 1.
  void CarryHidden(int t, LayerWorkspace* ws) const;
  // out = every step of kHidden, or its last step.
  void WriteOutput(const LayerWorkspace& ws, Eigen::MatrixXd* out) const;
  // kStepGrad = dL/dh_t: the output's gradient at step t plus V^T dS_{t+1}.
  void HiddenGradient(const double* params,
                      const Eigen::Ref<const Eigen::MatrixXd>& d_out, int t,
                      LayerWorkspace* ws) const;
  // d_in = W^T dS for all steps (one GEMM); resizes d_in to the input's size.
  void InputGradient(const double* params, const LayerWorkspace& ws,
                     Eigen::MatrixXd* d_in) const;

 private:
  int steps_, features_, hidden_, rows_;
  bool sequence_output_;
  InitLaw init_;
};

}  // namespace sparrow::core

#endif  // SPARROW_CORE_MODELS_LAYERS_RECURRENT_H_
