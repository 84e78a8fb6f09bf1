// Max pooling over size x size windows of channels x height x width maps
// (no padding; a window must fit: out = (in - size) / stride + 1 per side).
// No parameters. The workspace keeps each output's argmax (an input index,
// exact in a double) for the backward pass; ties go to the first maximum in
// row-major window order. Immutable; thread safety as for every Layer.
#ifndef SPARROW_CORE_MODELS_LAYERS_MAX_POOL2D_H_
#define SPARROW_CORE_MODELS_LAYERS_MAX_POOL2D_H_

#include "Eigen/Core"
#include "core/models/layer.h"

namespace sparrow::core {

class MaxPool2dLayer : public Layer {
 public:
  enum Buffer { kArgmax = 0 };

  MaxPool2dLayer(Shape in, int size, int stride)
      : in_(in), size_(size), stride_(stride) {}

  int size() const { return size_; }
  int stride() const { return stride_; }
  Shape input_shape() const override { return in_; }
  Shape output_shape() const override {
    return Shape{in_.channels, (in_.height - size_) / stride_ + 1,
                 (in_.width - size_) / stride_ + 1};
  }
  int num_params() const override { return 0; }
  void Initialize(double, Rng*, double*) const override {}
  void ResizeWorkspace(int cols, LayerWorkspace* ws) const override;
  void Forward(const double* params, const Eigen::MatrixXd& in,
               LayerWorkspace* ws, Eigen::MatrixXd* out) const override;
  void Backward(const double* params, const Eigen::MatrixXd& in,
                const Eigen::MatrixXd& out,
                const Eigen::Ref<const Eigen::MatrixXd>& d_out,
                LayerWorkspace* ws, Eigen::MatrixXd* d_in) const override;
  void Gradient(const Eigen::MatrixXd&, const LayerWorkspace&,
                double*) const override {}

 private:
  Shape in_;
  int size_, stride_;
};

// Channels x height x width maps as one flat vector: the values do not move
// (a column is already channel-major), only the shape changes.
class FlattenLayer : public Layer {
 public:
  explicit FlattenLayer(Shape in) : in_(in) {}

  Shape input_shape() const override { return in_; }
  Shape output_shape() const override { return Shape::Flat(in_.size()); }
  int num_params() const override { return 0; }
  void Initialize(double, Rng*, double*) const override {}
  void ResizeWorkspace(int, LayerWorkspace* ws) const override {
    ws->buffers.clear();
  }
  void Forward(const double*, const Eigen::MatrixXd& in, LayerWorkspace*,
               Eigen::MatrixXd* out) const override {
    *out = in;
  }
  void Backward(const double*, const Eigen::MatrixXd&, const Eigen::MatrixXd&,
                const Eigen::Ref<const Eigen::MatrixXd>& d_out, LayerWorkspace*,
                Eigen::MatrixXd* d_in) const override {
    if (d_in != nullptr) *d_in = d_out;
  }
  void Gradient(const Eigen::MatrixXd&, const LayerWorkspace&,
                double*) const override {}

 private:
  Shape in_;
};

}  // namespace sparrow::core

#endif  // SPARROW_CORE_MODELS_LAYERS_MAX_POOL2D_H_
