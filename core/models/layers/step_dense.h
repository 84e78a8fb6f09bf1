// The same dense layer z_t = A h_t + b (linear) applied at every step of a
// sequence: the output layer of a sequence-to-sequence recurrent model.
// Input Shape{1, T, F}, output Shape{1, T, O} (step-major, as the recurrent
// layers'). Parameter block as DenseLayer's: A (O x F) column-major, then b.
// Immutable; thread safety as for every Layer.
#ifndef SPARROW_CORE_MODELS_LAYERS_STEP_DENSE_H_
#define SPARROW_CORE_MODELS_LAYERS_STEP_DENSE_H_

#include "Eigen/Core"
#include "core/models/layer.h"

namespace sparrow::core {

class StepDenseLayer : public Layer {
 public:
  StepDenseLayer(int steps, int in, int out, InitLaw init)
      : steps_(steps), in_(in), out_(out), init_(init) {}

  int in() const { return in_; }
  int out() const { return out_; }
  Shape input_shape() const override { return Shape{1, steps_, in_}; }
  Shape output_shape() const override { return Shape{1, steps_, out_}; }
  int num_params() const override { return out_ * (in_ + 1); }
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
  int steps_, in_, out_;
  InitLaw init_;
};

}  // namespace sparrow::core

#endif  // SPARROW_CORE_MODELS_LAYERS_STEP_DENSE_H_
