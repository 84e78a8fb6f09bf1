#include "core/models/layers/conv2d.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/models/layers/init.h"

namespace sparrow::core {

using Eigen::Map;
using Eigen::MatrixXd;
using Eigen::MatrixXf;
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
  if (precision_ != Precision::kFloat32) return;
  ws->single.resize(6);
  ws->single[kKernel32].resize(g_.filters, g_.field());
  ws->single[kColumns32].resize(g_.positions(), g_.field());
  ws->single[kZ32].resize(g_.positions(), g_.filters);
  ws->single[kDZ32].resize(g_.positions(), g_.filters);
  ws->single[kDColumns32].resize(g_.positions(), g_.field());
  ws->single[kGradient32].resize(g_.filters, g_.field());
}

// Column (c, i, j) of `cols` holds input channel c shifted by kernel offset
// (i, j) at every output position: zeros where the field leaves the input.
template <typename Matrix>
void Conv2dLayer::Im2Col(const double* x, Matrix* cols) const {
  using T = typename Matrix::Scalar;
  const int ho = g_.out_height(), wo = g_.out_width();
  const int h = g_.in.height, w = g_.in.width, k = g_.kernel;
  for (int c = 0; c < g_.in.channels; ++c) {
    const double* plane = x + c * h * w;
    for (int i = 0; i < k; ++i) {
      for (int j = 0; j < k; ++j) {
        T* col = cols->col((c * k + i) * k + j).data();
        for (int u = 0; u < ho; ++u) {
          const int iy = u * g_.stride + i - g_.padding;
          T* row = col + u * wo;
          if (iy < 0 || iy >= h) {
            std::fill(row, row + wo, T{0});
            continue;
          }
          const double* src = plane + iy * w;
          for (int v = 0; v < wo; ++v) {
            const int ix = v * g_.stride + j - g_.padding;
            row[v] = (ix >= 0 && ix < w) ? static_cast<T>(src[ix]) : T{0};
          }
        }
      }
    }
  }
}

template <typename Matrix>
void Conv2dLayer::Col2Im(const Matrix& d_cols, double* d_x) const {
  using T = typename Matrix::Scalar;
  const int ho = g_.out_height(), wo = g_.out_width();
  const int h = g_.in.height, w = g_.in.width, k = g_.kernel;
  for (int c = 0; c < g_.in.channels; ++c) {
    double* plane = d_x + c * h * w;
    for (int i = 0; i < k; ++i) {
      for (int j = 0; j < k; ++j) {
        const T* col = d_cols.col((c * k + i) * k + j).data();
        for (int u = 0; u < ho; ++u) {
          const int iy = u * g_.stride + i - g_.padding;
          if (iy < 0 || iy >= h) continue;
          double* dst = plane + iy * w;
          const T* row = col + u * wo;
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
  if (precision_ == Precision::kFloat32) {
    Forward32(params, in, ws);
  } else {
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
  }
  ApplyActivation(activation_, ws->buffers[kPreActivation], *out);
}

void Conv2dLayer::Forward32(const double* params, const MatrixXd& in,
                            LayerWorkspace* ws) const {
  const int p = g_.positions(), f = g_.field(), k = g_.filters;
  const Map<const VectorXd> bias(params + k * f, k);
  MatrixXd& v = ws->buffers[kPreActivation];
  std::vector<MatrixXf>& s = ws->single;
  s[kKernel32] = Map<const MatrixXd>(params, k, f).cast<float>();
  for (Eigen::Index b = 0; b < in.cols(); ++b) {
    Im2Col(in.col(b).data(), &s[kColumns32]);
    s[kZ32].noalias() = s[kColumns32] * s[kKernel32].transpose();
    Map<MatrixXd> z(v.col(b).data(), p, k);
    z = s[kZ32].cast<double>();
    z.rowwise() += bias.transpose();
  }
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
  if (precision_ == Precision::kFloat32) {
    Backward32(params, in, ws, d_in);
    return;
  }
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

// As Backward, in float; the kernel gradient is summed over the batch in
// float (as a float32 framework does), the bias gradient in double.
void Conv2dLayer::Backward32(const double* /*params*/, const MatrixXd& in,
                             LayerWorkspace* ws, MatrixXd* d_in) const {
  const int p = g_.positions(), f = g_.field(), k = g_.filters;
  const MatrixXd& delta = ws->buffers[kDelta];
  MatrixXd& grad = ws->buffers[kGradient];
  std::vector<MatrixXf>& s = ws->single;
  s[kGradient32].setZero();
  grad.col(f).setZero();
  if (d_in != nullptr) d_in->setZero(in.rows(), in.cols());
  for (Eigen::Index b = 0; b < delta.cols(); ++b) {
    const Map<const MatrixXd> d_z(delta.col(b).data(), p, k);
    s[kDZ32] = d_z.cast<float>();
    Im2Col(in.col(b).data(), &s[kColumns32]);
    s[kGradient32].noalias() += s[kDZ32].transpose() * s[kColumns32];
    grad.col(f) += d_z.colwise().sum().transpose();
    if (d_in == nullptr) continue;
    // K~ was rounded by the Forward this Backward follows (same params).
    s[kDColumns32].noalias() = s[kDZ32] * s[kKernel32];
    Col2Im(s[kDColumns32], d_in->col(b).data());
  }
  grad.leftCols(f) = s[kGradient32].cast<double>();
}

void Conv2dLayer::Gradient(const MatrixXd& /*in*/, const LayerWorkspace& ws,
                           double* grad) const {
  const MatrixXd& g = ws.buffers[kGradient];
  Map<VectorXd>(grad, g.size()) += Map<const VectorXd>(g.data(), g.size());
}

std::vector<MatrixBlock> Conv2dLayer::MatrixBlocks() const {
  MatrixBlock b;
  b.rows = g_.filters;
  b.inputs = g_.field();
  b.rows_per_sample = g_.positions();
  return {b};
}

// The im2col rows' sum is linear in the input, so it is the sum image's:
// field entry (c, i, j) adds the summed input at every output position's
// (u stride + i - padding, v stride + j - padding) inside the image.
void Conv2dLayer::AddBlockInputSums(const Eigen::MatrixXd& in,
                                    const LayerWorkspace&,
                                    Eigen::VectorXd* sums) const {
  const Eigen::VectorXd total = in.rowwise().sum();
  const int h = g_.in.height, w = g_.in.width, k = g_.kernel;
  for (int c = 0; c < g_.in.channels; ++c) {
    for (int i = 0; i < k; ++i) {
      for (int j = 0; j < k; ++j) {
        double s = 0.0;
        for (int u = 0; u < g_.out_height(); ++u) {
          const int r = u * g_.stride + i - g_.padding;
          if (r < 0 || r >= h) continue;
          for (int v = 0; v < g_.out_width(); ++v) {
            const int q = v * g_.stride + j - g_.padding;
            if (q >= 0 && q < w) s += total((c * h + r) * w + q);
          }
        }
        sums[0]((c * k + i) * k + j) += s;
      }
    }
  }
}

}  // namespace sparrow::core
