// Fully connected layer z = f(A x + b), and where a dense layer's weights sit
// in a Network's parameter vector.
//
// Parameter block (ALGORITHMS.md §2.1): A (out x in) column-major, then b (out
// entries) when the layer has a bias; so a network of dense layers has the
// layout theta = [vec A_1; b_1; ...; vec A_L; b_L] of the original Mlp.
// Immutable; thread safety as for every Layer.
#ifndef SPARROW_CORE_MODELS_LAYERS_DENSE_H_
#define SPARROW_CORE_MODELS_LAYERS_DENSE_H_

#include <vector>

#include "Eigen/Core"
#include "core/models/activation.h"
#include "core/models/layer.h"

namespace sparrow::core {

class Network;

// A dense layer's weight matrix and bias inside a full parameter vector: what
// SBDL's groups, pruning, B2LD's exact last layer and the per-sample kernels
// of Mlp index with.
struct DenseBlock {
  int in = 0;
  int out = 0;
  int weight_offset = 0;  // A(r, c) is at weight_offset + c * out + r
  int bias_offset = 0;    // -1 without biases
  // Parameters of the layer: its weights, then its biases, contiguous.
  int num_params() const { return out * (in + (bias_offset >= 0 ? 1 : 0)); }
  Activation activation = Activation::kLinear;
};

class DenseLayer : public Layer {
 public:
  // Workspace buffers, each out x B: pre-activations v = A x + b and deltas
  // dL/dv (after Backward).
  enum Buffer { kPreActivation = 0, kDelta = 1 };
  // With Precision::kFloat32, the float buffers (LayerWorkspace::single): A
  // and the input rounded by Forward, the deltas rounded by Backward, and the
  // products' float results (A x; A^T delta; delta x^T, formed in Backward).
  enum Single {
    kWeights32 = 0,
    kInput32 = 1,
    kDelta32 = 2,
    kOutput32 = 3,
    kDInput32 = 4,
    kGradient32 = 5
  };

  DenseLayer(int in, int out, Activation activation, bool bias,
             InitLaw init = InitLaw::kGlorot,
             Precision precision = Precision::kFloat64)
      : in_(in),
        out_(out),
        activation_(activation),
        bias_(bias),
        init_(init),
        precision_(precision) {}

  int in() const { return in_; }
  int out() const { return out_; }
  Activation activation() const { return activation_; }
  bool bias() const { return bias_; }
  Precision precision() const { return precision_; }
  // This layer's DenseBlock when its parameter block starts at `offset`.
  DenseBlock Block(int offset) const;

  Shape input_shape() const override { return Shape::Flat(in_); }
  Shape output_shape() const override { return Shape::Flat(out_); }
  int num_params() const override { return out_ * (in_ + (bias_ ? 1 : 0)); }
  // Weights and biases by the layer's InitLaw (layer.h); the default,
  // Glorot, draws A_ij ~ N(0, sigma0^2 * 2 / (in + out)) and zero biases.
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
  bool AddPreconditionedGradient(const Eigen::MatrixXd& in,
                                 const LayerWorkspace& ws, int block,
                                 const Eigen::MatrixXd& p_lower,
                                 std::vector<Eigen::MatrixXd>* scratch,
                                 Eigen::MatrixXd* gp) const override;

 private:
  int in_, out_;
  Activation activation_;
  bool bias_;
  InitLaw init_;
  Precision precision_;
};

// The DenseBlock of layer `layer` of `net`, which must be a DenseLayer.
DenseBlock DenseBlockOf(const Network& net, int layer);
// The DenseBlocks of the network's dense layers, in order (other layers are
// skipped).
std::vector<DenseBlock> DenseBlocks(const Network& net);
// True when every layer of `net` is a DenseLayer.
bool IsDense(const Network& net);

}  // namespace sparrow::core

#endif  // SPARROW_CORE_MODELS_LAYERS_DENSE_H_
