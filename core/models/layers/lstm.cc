#include "core/models/layers/lstm.h"

namespace sparrow::core {

using Eigen::MatrixXd;

namespace {

// x = sigmoid(x) and y = tanh(x), elementwise on views (blocks or maps).
template <typename Xpr>
void SigmoidInPlace(Xpr x) {
  x.array() = 1.0 / (1.0 + (-x.array()).exp());
}
template <typename In, typename Out>
void TanhInto(const In& x, Out y) {
  y.array() = 2.0 / (1.0 + (-2.0 * x.array()).exp()) - 1.0;
}

}  // namespace

void LstmLayer::ResizeWorkspace(int cols, LayerWorkspace* ws) const {
  Resize(cols, kCellGrad + 1, ws);
}

void LstmLayer::Forward(const double* params, const MatrixXd& in,
                        LayerWorkspace* ws, MatrixXd* out) const {
  ProjectInputs(params, in, ws);
  for (int t = 0; t < steps(); ++t) {
    AddRecurrence(params, t, ws);
    ForwardStep(t, ws);
    CarryHidden(t, ws);
  }
  WriteOutput(*ws, out);
}

void LstmLayer::ForwardStep(int t, LayerWorkspace* ws) const {
  const int h = hidden(), T = steps();
  StepMap g = StepCols(ws->buffers[kPreActivation], t, T);
  SigmoidInPlace(g.topRows(h));                      // I
  TanhInto(g.middleRows(h, h), g.middleRows(h, h));  // G
  SigmoidInPlace(g.bottomRows(2 * h));               // F and O
  const auto i = g.topRows(h).array();
  const auto gg = g.middleRows(h, h).array();
  const auto f = g.middleRows(2 * h, h).array();
  const auto o = g.bottomRows(h).array();
  StepMap c = StepCols(ws->buffers[kCell], t, T);
  if (t == 0) {
    c.array() = i * gg;
  } else {
    c.array() = i * gg + f * StepCols(ws->buffers[kCell], t - 1, T).array();
  }
  StepMap tc = StepCols(ws->buffers[kCellTanh], t, T);
  TanhInto(c, tc);
  StepCols(ws->buffers[kHidden], t, T).array() = o * tc.array();
}

void LstmLayer::Backward(const double* params, const MatrixXd& /*in*/,
                         const MatrixXd& /*out*/,
                         const Eigen::Ref<const MatrixXd>& d_out,
                         LayerWorkspace* ws, MatrixXd* d_in) const {
  for (int t = steps() - 1; t >= 0; --t) {
    HiddenGradient(params, d_out, t, ws);
    BackwardStep(t, ws);
  }
  if (d_in != nullptr) InputGradient(params, *ws, d_in);
}

void LstmLayer::BackwardStep(int t, LayerWorkspace* ws) const {
  const int h = hidden(), T = steps();
  const StepMap g = StepCols(ws->buffers[kPreActivation], t, T);
  const auto i = g.topRows(h).array();
  const auto gg = g.middleRows(h, h).array();
  const auto f = g.middleRows(2 * h, h).array();
  const auto o = g.bottomRows(h).array();
  const auto tc = StepCols(ws->buffers[kCellTanh], t, T).array();
  const auto dh = ws->buffers[kStepGrad].array();
  // dc holds dL/dc_{t+1} o F_{t+1} from the step after (nothing at T - 1).
  auto dc = ws->buffers[kCellGrad].array();
  if (t + 1 == T) {
    dc = dh * o * (1.0 - tc.square());
  } else {
    dc += dh * o * (1.0 - tc.square());
  }
  StepMap d = StepCols(ws->buffers[kDelta], t, T);
  d.topRows(h).array() = dc * gg * i * (1.0 - i);
  d.middleRows(h, h).array() = dc * i * (1.0 - gg.square());
  if (t == 0) {
    d.middleRows(2 * h, h).setZero();  // c_{-1} = 0
  } else {
    d.middleRows(2 * h, h).array() =
        dc * StepCols(ws->buffers[kCell], t - 1, T).array() * f * (1.0 - f);
  }
  d.bottomRows(h).array() = dh * tc * o * (1.0 - o);
  dc *= f;
}

}  // namespace sparrow::core
