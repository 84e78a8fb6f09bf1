// One layer of a sequential Network (core/models/network.h): the interface
// every layer kind implements (Dense now; Conv2d, MaxPool2d, Flatten, Rnn and
// Lstm later).
//
// A layer maps a batch of samples (one column each, input_shape().size() rows)
// to a batch of outputs (output_shape().size() rows). It owns no parameters:
// the Network hands it a pointer to its block of one contiguous parameter
// vector (num_params() entries, in the layout the layer documents), so that
// optimizers see a single vector and each layer is a view into it (as mlpack's
// layers alias their weights into the FFN's parameter matrix). It owns no
// per-evaluation state either: whatever Forward must leave for Backward and
// Gradient (pre-activations, activation derivatives, pooling indices, gate
// values) lives in a LayerWorkspace owned by the caller, sized once by
// ResizeWorkspace, so evaluating allocates nothing once sized.
//
// Layers are immutable after construction; all methods are const and safe to
// call from several threads on distinct workspaces.
#ifndef SPARROW_CORE_MODELS_LAYER_H_
#define SPARROW_CORE_MODELS_LAYER_H_

#include <vector>

#include "Eigen/Core"
#include "core/util/random.h"

namespace sparrow::core {

// The shape of one sample as a layer sees it: channels x height x width,
// stored channel-major, then row-major within a channel (Conv2d's feature
// maps), or a flat vector of `channels` values (height = width = 1). A column
// of a batch holds size() values.
struct Shape {
  int channels = 0;
  int height = 1;
  int width = 1;

  static Shape Flat(int n) { return Shape{n, 1, 1}; }
  int size() const { return channels * height * width; }
  bool operator==(const Shape& o) const {
    return channels == o.channels && height == o.height && width == o.width;
  }
  bool operator!=(const Shape& o) const { return !(*this == o); }
};

// How a layer draws its initial parameters (ModelSpec.init). sigma0 scales
// each law.
//  kGlorot: weights N(0, 2 / (fan_in + fan_out)), zero biases.
//  kHe:     weights N(0, 2 / fan_in) (for ReLU layers), zero biases.
//  kTorch:  PyTorch's defaults, so a PyTorch peer starts from the same law:
//           dense and conv weights and biases U(-1/sqrt(fan_in),
//           1/sqrt(fan_in)); recurrent parameters U(-1/sqrt(H), 1/sqrt(H)).
//  kOrthogonal: kGlorot, except that each H x H block of a recurrent layer's
//           recurrent weights (one per LSTM gate) is a random orthogonal
//           matrix (Saxe et al. 2014; for the Elman RNN Keras's default), so
//           h_{t-1} neither shrinks nor grows through V at the start.
enum class InitLaw { kGlorot, kHe, kTorch, kOrthogonal };

// The arithmetic of a dense or conv layer's matrix products
// (ModelSpec.precision). Parameters, activations, gradients and the optimizer
// stay float64 either way.
//  kFloat64: every product in double (the default).
//  kFloat32: the products' operands are rounded to float, the products are
//            summed in float (Eigen's single-precision GEMM, twice the SIMD
//            width of double's) and widened back to double; activations,
//            bias adds and the parameter update stay in double.
enum class Precision { kFloat64, kFloat32 };

// Per-evaluation state of one layer for a batch: buffers whose number, order
// and sizes the layer decides in ResizeWorkspace (Dense: pre-activations,
// activation derivatives, deltas). Integer state such as a max-pool's argmax
// fits a double exactly. Copyable, so caches holding workspaces are values.
struct LayerWorkspace {
  std::vector<Eigen::MatrixXd> buffers;
  // Float copies of the products' operands and results of a layer computing
  // in Precision::kFloat32 (empty otherwise); the layer names their order.
  std::vector<Eigen::MatrixXf> single;
};

// A block of a layer's parameters that a block-preconditioned method (RLS,
// core/optim/rls) treats as one matrix: `rows` x (inputs + bias) column-major
// at `offset` within the layer's parameter block, the bias (if any) its last
// column. Its input rows are the vectors the block multiplies: one per sample
// for a dense layer, one per output position (an im2col row) for a conv
// layer, one per step for a recurrent layer's input (W) and recurrent (V)
// weights and for a per-step dense layer.
struct MatrixBlock {
  int offset = 0;
  int rows = 0;
  int inputs = 0;
  bool bias = true;
  // Input rows each sample contributes (1, the output positions, or T).
  int rows_per_sample = 1;
  // T_l of ALGORITHMS.md §3.3, by which RLS scales its ratio factor k: the
  // steps of a recurrent or per-step layer, 1 otherwise.
  int steps = 1;
};

// Multiply-adds of AddPreconditionedGradient's factorized product over a
// batch of `samples` (each one input row): P [X; 1] then delta (P [X; 1])^T,
// against rows * cols^2 for G P itself.
inline double FactorizedProductCost(const MatrixBlock& b, int samples) {
  const double cols = b.inputs + (b.bias ? 1 : 0);
  return samples * cols * (cols + b.rows);
}

class Layer {
 public:
  virtual ~Layer() = default;

  virtual Shape input_shape() const = 0;
  virtual Shape output_shape() const = 0;
  // Length of the layer's parameter block (0 for parameter-free layers).
  virtual int num_params() const = 0;

  // Draws the layer's initial parameters into params[0, num_params()); sigma0
  // scales the layer's default initialization.
  virtual void Initialize(double sigma0, Rng* rng, double* params) const = 0;

  // Sizes the workspace for `cols` samples; a no-op when already sized.
  virtual void ResizeWorkspace(int cols, LayerWorkspace* ws) const = 0;

  // out = layer(in; params) for every column of in (input_shape().size() x B);
  // out is already output_shape().size() x B. Leaves in *ws what Backward
  // needs.
  virtual void Forward(const double* params, const Eigen::MatrixXd& in,
                       LayerWorkspace* ws, Eigen::MatrixXd* out) const = 0;

  // Given d_out = dL/d(out) for the batch of the last Forward on ws (with the
  // same in and out), stores in *ws what Gradient needs and, when d_in is not
  // null, writes d_in = dL/d(in) (sized like in).
  virtual void Backward(const double* params, const Eigen::MatrixXd& in,
                        const Eigen::MatrixXd& out,
                        const Eigen::Ref<const Eigen::MatrixXd>& d_out,
                        LayerWorkspace* ws, Eigen::MatrixXd* d_in) const = 0;

  // grad[0, num_params()) += dL/d(params) summed over the batch, after
  // Backward on ws.
  virtual void Gradient(const Eigen::MatrixXd& in, const LayerWorkspace& ws,
                        double* grad) const = 0;

  // The layer's parameter blocks for RLS; empty for a layer without
  // parameters or one RLS cannot precondition.
  virtual std::vector<MatrixBlock> MatrixBlocks() const { return {}; }
  // After Forward on ws with `in`: sums[i] (MatrixBlocks()[i].inputs values)
  // += the sum of block i's input rows over the batch.
  virtual void AddBlockInputSums(const Eigen::MatrixXd& /*in*/,
                                 const LayerWorkspace& /*ws*/,
                                 Eigen::VectorXd* /*sums*/) const {}
  // After Backward on ws with `in`: *gp (rows x cols of MatrixBlocks()[block])
  // += G P, where G is the block's gradient summed over the batch (as
  // Gradient adds it) and P a symmetric cols x cols matrix given by its lower
  // triangle, when the layer forms this from its per-sample factors in fewer
  // operations than G P takes (the caller compares the counts: see
  // FactorizedProductCost); `scratch` holds its temporaries. False, leaving
  // *gp alone, when the layer has no such form.
  virtual bool AddPreconditionedGradient(
      const Eigen::MatrixXd& /*in*/, const LayerWorkspace& /*ws*/,
      int /*block*/, const Eigen::MatrixXd& /*p_lower*/,
      std::vector<Eigen::MatrixXd>* /*scratch*/,
      Eigen::MatrixXd* /*gp*/) const {
    return false;
  }
};

}  // namespace sparrow::core

#endif  // SPARROW_CORE_MODELS_LAYER_H_
