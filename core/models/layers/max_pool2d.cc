#include "core/models/layers/max_pool2d.h"

namespace sparrow::core {

using Eigen::MatrixXd;

void MaxPool2dLayer::ResizeWorkspace(int cols, LayerWorkspace* ws) const {
  ws->buffers.resize(1);
  ws->buffers[kArgmax].resize(output_shape().size(), cols);
}

void MaxPool2dLayer::Forward(const double* /*params*/, const MatrixXd& in,
                             LayerWorkspace* ws, MatrixXd* out) const {
  const Shape o = output_shape();
  const int plane = in_.height * in_.width;
  MatrixXd& argmax = ws->buffers[kArgmax];
  for (Eigen::Index b = 0; b < in.cols(); ++b) {
    const double* x = in.col(b).data();
    double* y = out->col(b).data();
    double* arg = argmax.col(b).data();
    for (int c = 0, k = 0; c < o.channels; ++c) {
      for (int u = 0; u < o.height; ++u) {
        for (int v = 0; v < o.width; ++v, ++k) {
          int best = c * plane + u * stride_ * in_.width + v * stride_;
          for (int i = 0; i < size_; ++i) {
            const int row = c * plane + (u * stride_ + i) * in_.width;
            for (int j = 0; j < size_; ++j) {
              const int at = row + v * stride_ + j;
              if (x[at] > x[best]) best = at;
            }
          }
          y[k] = x[best];
          arg[k] = best;
        }
      }
    }
  }
}

void MaxPool2dLayer::Backward(const double* /*params*/, const MatrixXd& in,
                              const MatrixXd& /*out*/,
                              const Eigen::Ref<const MatrixXd>& d_out,
                              LayerWorkspace* ws, MatrixXd* d_in) const {
  if (d_in == nullptr) return;
  const MatrixXd& argmax = ws->buffers[kArgmax];
  d_in->setZero(in.rows(), in.cols());
  for (Eigen::Index b = 0; b < d_out.cols(); ++b) {
    for (Eigen::Index k = 0; k < d_out.rows(); ++k) {
      (*d_in)(static_cast<Eigen::Index>(argmax(k, b)), b) += d_out(k, b);
    }
  }
}

}  // namespace sparrow::core
