#include "core/models/layers/rnn.h"

namespace sparrow::core {

using Eigen::MatrixXd;

void RnnLayer::ResizeWorkspace(int cols, LayerWorkspace* ws) const {
  Resize(cols, kBiasSum + 1, ws);
}

void RnnLayer::Forward(const double* params, const MatrixXd& in,
                       LayerWorkspace* ws, MatrixXd* out) const {
  ProjectInputs(params, in, ws);
  for (int t = 0; t < steps(); ++t) {
    AddRecurrence(params, t, ws);
    ApplyActivation(activation_,
                    StepCols(ws->buffers[kPreActivation], t, steps()),
                    StepCols(ws->buffers[kHidden], t, steps()));
    CarryHidden(t, ws);
  }
  WriteOutput(*ws, out);
}

void RnnLayer::Backward(const double* params, const MatrixXd& /*in*/,
                        const MatrixXd& /*out*/,
                        const Eigen::Ref<const MatrixXd>& d_out,
                        LayerWorkspace* ws, MatrixXd* d_in) const {
  // dS_t = f'(S_t) .* dL/dh_t, with f'(S) for all steps first.
  ActivationDerivative(activation_, ws->buffers[kPreActivation],
                       ws->buffers[kHidden], ws->buffers[kDelta]);
  for (int t = steps() - 1; t >= 0; --t) {
    HiddenGradient(params, d_out, t, ws);
    StepCols(ws->buffers[kDelta], t, steps()).array() *=
        ws->buffers[kStepGrad].array();
  }
  if (d_in != nullptr) InputGradient(params, *ws, d_in);
}

}  // namespace sparrow::core
