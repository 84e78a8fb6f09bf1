// 2-D convolution z = f(K * x + b) over channels x height x width feature
// maps, by im2col and one GEMM per sample.
//
// Parameter block: the kernel as a (filters x C kh kw) column-major matrix
// K~ whose column c kh kw + i kw + j holds every filter's weight at input
// channel c, kernel row i, column j (the receptive field's flatten order of
// ALGORITHMS.md §3.1, c slowest), then the filters' biases. So [K~ b] is one
// filters x (C kh kw + 1) column-major matrix, the transpose of the RLS
// paper's Θ = [K~; b^T]. PyTorch's weight (filters, C, kh, kw) is the
// row-major form of the same matrix.
//
// Output position (u, v), 0-based, reads input rows u stride + i - padding
// and columns v stride + j - padding; positions outside the input read 0.
// Immutable; thread safety as for every Layer.
#ifndef SPARROW_CORE_MODELS_LAYERS_CONV2D_H_
#define SPARROW_CORE_MODELS_LAYERS_CONV2D_H_

#include "Eigen/Core"
#include "core/models/activation.h"
#include "core/models/layer.h"

namespace sparrow::core {

struct ConvGeometry {
  Shape in;
  int filters = 0;
  int kernel = 3;
  int stride = 1;
  int padding = 0;

  int out_height() const {
    return (in.height + 2 * padding - kernel) / stride + 1;
  }
  int out_width() const {
    return (in.width + 2 * padding - kernel) / stride + 1;
  }
  Shape out() const { return Shape{filters, out_height(), out_width()}; }
  // Rows of K~'s transpose: one receptive field, C kh kw values.
  int field() const { return in.channels * kernel * kernel; }
  // Output positions per channel.
  int positions() const { return out_height() * out_width(); }
};

class Conv2dLayer : public Layer {
 public:
  // Workspace buffers: pre-activations and deltas (output size x B); the
  // im2col matrix of one sample and its gradient (positions x field), rebuilt
  // per sample; and the parameter gradient [dK~ db] of the last Backward
  // (filters x field + 1, the parameter block's layout).
  enum Buffer {
    kPreActivation = 0,
    kDelta = 1,
    kColumns = 2,
    kDColumns = 3,
    kGradient = 4
  };
  // With Precision::kFloat32, the float buffers (LayerWorkspace::single): K~
  // rounded by Forward; one sample's im2col matrix, pre-activations, deltas
  // and receptive-field gradients; the batch's kernel gradient dK~, summed
  // in float.
  enum Single {
    kKernel32 = 0,
    kColumns32 = 1,
    kZ32 = 2,
    kDZ32 = 3,
    kDColumns32 = 4,
    kGradient32 = 5
  };

  // The geometry must give a positive output size (CheckConv in the model's
  // translation refuses others with the field's name).
  Conv2dLayer(const ConvGeometry& geometry, Activation activation, InitLaw init,
              Precision precision = Precision::kFloat64)
      : g_(geometry),
        activation_(activation),
        init_(init),
        precision_(precision) {}

  const ConvGeometry& geometry() const { return g_; }
  Activation activation() const { return activation_; }
  Shape input_shape() const override { return g_.in; }
  Shape output_shape() const override { return g_.out(); }
  int num_params() const override { return g_.filters * (g_.field() + 1); }
  void Initialize(double sigma0, Rng* rng, double* params) const override;
  void ResizeWorkspace(int cols, LayerWorkspace* ws) const override;
  void Forward(const double* params, const Eigen::MatrixXd& in,
               LayerWorkspace* ws, Eigen::MatrixXd* out) const override;
  void Backward(const double* params, const Eigen::MatrixXd& in,
                const Eigen::MatrixXd& out,
                const Eigen::Ref<const Eigen::MatrixXd>& d_out,
                LayerWorkspace* ws, Eigen::MatrixXd* d_in) const override;
  void Gradient(const Eigen::MatrixXd& in, const LayerWorkspace& ws,
                double* grad) const override;
  std::vector<MatrixBlock> MatrixBlocks() const override;
  void AddBlockInputSums(const Eigen::MatrixXd& in, const LayerWorkspace& ws,
                         Eigen::VectorXd* sums) const override;

 private:
  // cols (positions x field) = the receptive fields of one sample x, in
  // double or float.
  template <typename Matrix>
  void Im2Col(const double* x, Matrix* cols) const;
  // d_x += the receptive-field gradients d_cols scattered back to the input.
  template <typename Matrix>
  void Col2Im(const Matrix& d_cols, double* d_x) const;
  // Forward's and Backward's per-sample loops in float (Precision::kFloat32).
  void Forward32(const double* params, const Eigen::MatrixXd& in,
                 LayerWorkspace* ws) const;
  void Backward32(const double* params, const Eigen::MatrixXd& in,
                  LayerWorkspace* ws, Eigen::MatrixXd* d_in) const;

  ConvGeometry g_;
  Activation activation_;
  InitLaw init_;
  Precision precision_;
};

}  // namespace sparrow::core

#endif  // SPARROW_CORE_MODELS_LAYERS_CONV2D_H_
