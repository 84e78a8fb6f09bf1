// A sequential network of layers over one contiguous parameter vector.
//
// Layer i reads the output of layer i - 1 (layer 0 the network's input) and
// owns the parameter block [block(i).offset, block(i).offset + block(i).size)
// of the vector; blocks follow each other in layer order, so a network of
// Dense layers has the layout theta = [vec A_1; b_1; ...; vec A_L; b_L].
// Samples are columns: a batch is input_shape().size() x B.
//
// A Network is immutable after construction and cheap to copy (layers are
// shared, immutable); it is safe to share between threads. All per-evaluation
// state lives in a Network::Cache owned by the caller: once a cache has its
// batch size, Forward, Backward and Gradient allocate nothing.
#ifndef SPARROW_CORE_MODELS_NETWORK_H_
#define SPARROW_CORE_MODELS_NETWORK_H_

#include <memory>
#include <vector>

#include "Eigen/Core"
#include "core/models/layer.h"
#include "core/util/random.h"

namespace sparrow::core {

// A layer's block of the parameter vector.
struct LayerBlock {
  int offset = 0;
  int size = 0;
};

// A layer's MatrixBlock (layer.h) with `block.offset` in the whole parameter
// vector, and the layer it belongs to.
struct NetworkMatrixBlock {
  MatrixBlock block;
  int layer = 0;
};

class Network {
 public:
  // Activations and workspaces for a batch: activation[0] is the input,
  // activation[i + 1] the output of layer i (so activation[i] is layer i's
  // input); work[i] is layer i's workspace; d_activation[i] (0 < i < L) holds
  // dL/d activation[i] during a backward pass.
  struct Cache {
    std::vector<Eigen::MatrixXd> activation;
    std::vector<Eigen::MatrixXd> d_activation;
    std::vector<LayerWorkspace> work;

    // Sizes the activations and workspaces for `cols` samples; a no-op when
    // the size is unchanged.
    void Resize(const Network& net, int cols);
    int cols() const {
      return activation.empty() ? 0 : static_cast<int>(activation[0].cols());
    }
    Eigen::MatrixXd& input() { return activation.front(); }
    const Eigen::MatrixXd& output() const { return activation.back(); }
  };

  Network() = default;
  // Each layer's input shape must equal the previous layer's output shape.
  explicit Network(std::vector<std::shared_ptr<const Layer>> layers);

  int num_layers() const { return static_cast<int>(layers_.size()); }
  const Layer& layer(int i) const { return *layers_[i]; }
  LayerBlock block(int i) const { return blocks_[i]; }
  int num_params() const { return num_params_; }
  Shape input_shape() const { return layers_.front()->input_shape(); }
  Shape output_shape() const { return layers_.back()->output_shape(); }
  int inputs() const { return input_shape().size(); }
  int outputs() const { return output_shape().size(); }

  // Every layer's default initialization, in layer order, from one stream.
  void Initialize(double sigma0, Rng* rng, double* params) const;

  // Forward pass over all columns of `in`; the output is cache->output().
  void Forward(const double* params,
               const Eigen::Ref<const Eigen::MatrixXd>& in, Cache* cache) const;
  // Runs layers [begin, end) from cache->activation[begin], which must be
  // current: the partial passes of block methods, whose lower layers are
  // fixed. The cache must be sized.
  void ForwardLayers(const double* params, int begin, int end,
                     Cache* cache) const;

  // Backward pass for d_out = dL/d(output) after a Forward on the same cache:
  // leaves every layer ready for Gradient and, when d_in is not null, writes
  // d_in = dL/d(input).
  void Backward(const double* params,
                const Eigen::Ref<const Eigen::MatrixXd>& d_out, Cache* cache,
                Eigen::MatrixXd* d_in) const;
  // Partial backward pass: layers L-1 down to `layer` only (no input
  // gradient), for the block methods' LayerGradient.
  void BackwardToLayer(const double* params,
                       const Eigen::Ref<const Eigen::MatrixXd>& d_out,
                       int layer, Cache* cache) const;
  // grad += dL/dparams (num_params entries) after Backward.
  void Gradient(const Cache& cache, double* grad) const;
  // grad += dL/dparams of layer `layer` only, at its offset in a full-length
  // grad, after Backward or BackwardToLayer(layer).
  void LayerGradient(int layer, const Cache& cache, double* grad) const;

  // Every layer's MatrixBlocks, in layer order.
  const std::vector<NetworkMatrixBlock>& matrix_blocks() const {
    return matrix_blocks_;
  }
  // After Forward on cache: (*sums)[i] (matrix_blocks()[i].block.inputs
  // values) += the sum of block i's input rows over the batch.
  void AddBlockInputSums(const Cache& cache,
                         std::vector<Eigen::VectorXd>* sums) const;
  // After Backward on cache: Layer::AddPreconditionedGradient for
  // matrix_blocks()[block] (false when its layer has no factorized form).
  bool AddPreconditionedGradient(const Cache& cache, int block,
                                 const Eigen::MatrixXd& p_lower,
                                 std::vector<Eigen::MatrixXd>* scratch,
                                 Eigen::MatrixXd* gp) const;

 private:
  // Backward through layers L-1..layer; layer `layer` writes dL/d(its input)
  // to d_in when d_in is not null.
  void BackwardLayers(const double* params,
                      const Eigen::Ref<const Eigen::MatrixXd>& d_out, int layer,
                      Cache* cache, Eigen::MatrixXd* d_in) const;

  std::vector<std::shared_ptr<const Layer>> layers_;
  std::vector<LayerBlock> blocks_;
  int num_params_ = 0;
  std::vector<NetworkMatrixBlock> matrix_blocks_;
  std::vector<int> first_matrix_block_;  // per layer, into matrix_blocks_
};

}  // namespace sparrow::core

#endif  // SPARROW_CORE_MODELS_NETWORK_H_
