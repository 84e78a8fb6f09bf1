// Long short-term memory layer (ALGORITHMS.md §3.1, eqs. (9)-(18)):
//   S = W x_t + b + V h_{t-1} + v, gate row-blocks in the paper's order
//   [I; G; F; O] (NOT PyTorch's i, f, g, o: permute when importing weights),
//   I = sigmoid, G = tanh, F = sigmoid, O = sigmoid (of their blocks of S),
//   c_t = I o G + F o c_{t-1},  h_t = O o tanh(c_t),  h_0 = c_0 = 0.
// Sequences, output, parameter block and workspace buffers are
// RecurrentLayer's (recurrent.h) with R = 4H; this layer uses all of Buffer,
// kPreActivation holding the activated gates [I; G; F; O] after Forward.
//
// The gates use sigmoid(x) = 1 / (1 + exp(-x)) and tanh(x) = 2 sigmoid(2x) - 1
// on Eigen arrays, which vectorize (Eigen's exp does, its tanh for doubles
// does not); they differ from activation.h's Sigmoid and Tanh by rounding
// only (absolute error ~1e-16). Backward is backpropagation through time over
// the whole batch, one GEMM V^T dS_{t+1} per step. Immutable; thread safety
// as for every Layer.
#ifndef SPARROW_CORE_MODELS_LAYERS_LSTM_H_
#define SPARROW_CORE_MODELS_LAYERS_LSTM_H_

#include "Eigen/Core"
#include "core/models/layers/recurrent.h"

namespace sparrow::core {

class LstmLayer : public RecurrentLayer {
 public:
  // T = steps, F = features per step, H = hidden units; sequence_output
  // selects every step's h_t (Shape{1, T, H}) or the last (Shape::Flat(H)).
  LstmLayer(int steps, int features, int hidden, bool sequence_output,
            InitLaw init)
      : RecurrentLayer(steps, features, hidden, 4 * hidden, sequence_output,
                       init) {}

  void ResizeWorkspace(int cols, LayerWorkspace* ws) const override;
  void Forward(const double* params, const Eigen::MatrixXd& in,
               LayerWorkspace* ws, Eigen::MatrixXd* out) const override;
  void Backward(const double* params, const Eigen::MatrixXd& in,
                const Eigen::MatrixXd& out,
                const Eigen::Ref<const Eigen::MatrixXd>& d_out,
                LayerWorkspace* ws, Eigen::MatrixXd* d_in) const override;

 private:
  // Gates, cell and hidden state of step t from its pre-activations.
  void ForwardStep(int t, LayerWorkspace* ws) const;
  // dS_t into kDelta from dL/dh_t (kStepGrad) and the carried dL/dc_t.
  void BackwardStep(int t, LayerWorkspace* ws) const;
};

}  // namespace sparrow::core

#endif  // SPARROW_CORE_MODELS_LAYERS_LSTM_H_
