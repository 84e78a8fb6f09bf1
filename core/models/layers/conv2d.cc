#include "core/models/layers/conv2d.h"

#include <cmath>

#include "core/models/layers/init.h"

namespace sparrow::core {

using Eigen::Map;
using Eigen::MatrixXd;
using Eigen::VectorXd;

void Conv2dLayer::Initialize(double sigma0, Rng* rng, double* params) const {
  const int field = g_.field();
  const int fan_out = g_.filters * g_.kernel * g_.kernel;
  InitWeights(init_, sigma0, field, fan_out, g_.filters * field, rng, params);
  InitBiases(init_, sigma0, field, g_.filters, rng,
             params + g_.filters * field);
}

void Conv2dLayer::ResizeWorkspace(int cols, LayerWorkspace* ws) const {
  ws->buffers.resize(5);
  const int out = g_.out().size();
  ws->buffers[kPreActivation].resize(out, cols);
  ws->buffers[kDelta].resize(out, cols);
  ws->buffers[kColumns].resize(g_.positions(), g_.field());
  ws->buffers[kDColumns].resize(g_.positions(), g_.field());
  ws->buffers[kGradient].resize(g_.filters, g_.field() + 1);
}

// Column (c, i, j) of `cols` holds input channel c shifted by kernel offset
// (i, j) at every output position: zeros where the field leaves the input.
void Conv2dLayer::Im2Col(const double* x, MatrixXd* cols) const {
  const int ho = g_.out_height(), wo = g_.out_width();
  const int h = g_.in.height, w = g_.in.width, k = g_.kernel;
  for (int c = 0; c < g_.in.channels; ++c) {
    const double* plane = x + c * h * w;
    for (int i = 0; i < k; ++i) {
      for (int j = 0; j < k; ++j) {
        double* col = cols->col((c * k + i) * k + j).data();
        for (int u = 0; u < ho; ++u) {
          const int iy = u * g_.stride + i - g_.padding;
          double* row = col + u * wo;
          if (iy < 0 || iy >= h) {
            std::fill(row, row + wo, 0.0);
            continue;
          }
          const double* src = plane + iy * w;
          for (int v = 0; v < wo; ++v) {
            const int ix = v * g_.stride + j - g_.padding;
            row[v] = (ix >= 0 && ix < w) ? src[ix] : 0.0;
          }
        }
      }
    }
  }
}

void Conv2dLayer::Col2Im(const MatrixXd& d_cols, double* d_x) const {
  const int ho = g_.out_height(), wo = g_.out_width();
  const int h = g_.in.height, w = g_.in.width, k = g_.kernel;
  for (int c = 0; c < g_.in.channels; ++c) {
    double* plane = d_x + c * h * w;
    for (int i = 0; i < k; ++i) {
      for (int j = 0; j < k; ++j) {
        const double* col = d_cols.col((c * k + i) * k + j).data();
        for (int u = 0; u < ho; ++u) {
          const int iy = u * g_.stride + i - g_.padding;
          if (iy < 0 || iy >= h) continue;
          double* dst = plane + iy * w;
          const double* row = col + u * wo;
          for (int v = 0; v < wo; ++v) {
            const int ix = v * g_.stride + j - g_.padding;
            if (ix >= 0 && ix < w) dst[ix] += row[v];
          }
        }
      }
    }
  }
}

// Per sample: Z (positions x filters, column-major = channel-major output) =
// cols * K~^T + 1 b^T.
void Conv2dLayer::Forward(const double* params, const MatrixXd& in,
                          LayerWorkspace* ws, MatrixXd* out) const {
  const int p = g_.positions(), f = g_.field(), k = g_.filters;
  const Map<const MatrixXd> kernel(params, k, f);
  const Map<const VectorXd> bias(params + k * f, k);
  MatrixXd& v = ws->buffers[kPreActivation];
  MatrixXd& cols = ws->buffers[kColumns];
  for (Eigen::Index b = 0; b < in.cols(); ++b) {
    Im2Col(in.col(b).data(), &cols);
    Map<MatrixXd> z(v.col(b).data(), p, k);
    z.noalias() = cols * kernel.transpose();
    z.rowwise() += bias.transpose();
  }
  ApplyActivation(activation_, v, *out);
}

// The kernel gradient is summed here, while the im2col scratch can be
// rebuilt (Gradient's workspace is const): keeping every sample's im2col from
// Forward would take positions x field doubles per sample (1.8 MB for a
// 32-channel 3x3 layer on 28x28 maps), where rebuilding costs one pass.
void Conv2dLayer::Backward(const double* params, const MatrixXd& in,
                           const MatrixXd& out,
                           const Eigen::Ref<const MatrixXd>& d_out,
                           LayerWorkspace* ws, MatrixXd* d_in) const {
  MatrixXd& delta = ws->buffers[kDelta];
  ActivationDerivative(activation_, ws->buffers[kPreActivation], out, delta);
  delta.array() *= d_out.array();
  const int p = g_.positions(), f = g_.field(), k = g_.filters;
  const Map<const MatrixXd> kernel(params, k, f);
  MatrixXd& cols = ws->buffers[kColumns];
  MatrixXd& d_cols = ws->buffers[kDColumns];
  MatrixXd& grad = ws->buffers[kGradient];
  grad.setZero();
  if (d_in != nullptr) d_in->setZero(in.rows(), in.cols());
  for (Eigen::Index b = 0; b < delta.cols(); ++b) {
    const Map<const MatrixXd> d_z(delta.col(b).data(), p, k);
    Im2Col(in.col(b).data(), &cols);
    grad.leftCols(f).noalias() += d_z.transpose() * cols;
    grad.col(f) += d_z.colwise().sum().transpose();
    if (d_in == nullptr) continue;
    d_cols.noalias() = d_z * kernel;
    Col2Im(d_cols, d_in->col(b).data());
  }
}

void Conv2dLayer::Gradient(const MatrixXd& /*in*/, const LayerWorkspace& ws,
                           double* grad) const {
  const MatrixXd& g = ws.buffers[kGradient];
  Map<VectorXd>(grad, g.size()) += Map<const VectorXd>(g.data(), g.size());
}

}  // namespace sparrow::core
