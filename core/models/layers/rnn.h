// Elman recurrent layer (ALGORITHMS.md §3.1, eqs. (7)-(8)):
//   h_t = f(W x_t + b + V h_{t-1} + v),  h_0 = 0 (h_{-1} in 0-based steps),
// f an Activation (tanh by default). Sequences, output, parameter block and
// workspace buffers are RecurrentLayer's (recurrent.h) with R = H; this layer
// uses buffers kPreActivation (S_t) to kBiasSum.
//
// Backward is backpropagation through time over the whole batch, one GEMM
// V^T dS_{t+1} per step. Immutable; thread safety as for every Layer.
#ifndef SPARROW_CORE_MODELS_LAYERS_RNN_H_
#define SPARROW_CORE_MODELS_LAYERS_RNN_H_

#include "Eigen/Core"
#include "core/models/activation.h"
#include "core/models/layers/recurrent.h"

namespace sparrow::core {

class RnnLayer : public RecurrentLayer {
 public:
  // T = steps, F = features per step, H = hidden units; sequence_output
  // selects every step's h_t (Shape{1, T, H}) or the last (Shape::Flat(H)).
  RnnLayer(int steps, int features, int hidden, bool sequence_output,
           InitLaw init, Activation activation = Activation::kTanh)
      : RecurrentLayer(steps, features, hidden, hidden, sequence_output, init),
        activation_(activation) {}

  Activation activation() const { return activation_; }

  void ResizeWorkspace(int cols, LayerWorkspace* ws) const override;
  void Forward(const double* params, const Eigen::MatrixXd& in,
               LayerWorkspace* ws, Eigen::MatrixXd* out) const override;
  void Backward(const double* params, const Eigen::MatrixXd& in,
                const Eigen::MatrixXd& out,
                const Eigen::Ref<const Eigen::MatrixXd>& d_out,
                LayerWorkspace* ws, Eigen::MatrixXd* d_in) const override;

 private:
  Activation activation_;
};

}  // namespace sparrow::core

#endif  // SPARROW_CORE_MODELS_LAYERS_RNN_H_
