#include "core/models/network.h"

#include <cassert>
#include <utility>

namespace sparrow::core {

Network::Network(std::vector<std::shared_ptr<const Layer>> layers)
    : layers_(std::move(layers)) {
  for (size_t i = 0; i < layers_.size(); ++i) {
    assert(i == 0 ||
           layers_[i]->input_shape() == layers_[i - 1]->output_shape());
    blocks_.push_back({num_params_, layers_[i]->num_params()});
    first_matrix_block_.push_back(static_cast<int>(matrix_blocks_.size()));
    for (MatrixBlock b : layers_[i]->MatrixBlocks()) {
      b.offset += num_params_;
      matrix_blocks_.push_back({b, static_cast<int>(i)});
    }
    num_params_ += layers_[i]->num_params();
  }
}

void Network::AddBlockInputSums(const Cache& cache,
                                std::vector<Eigen::VectorXd>* sums) const {
  for (size_t i = 0; i < layers_.size(); ++i) {
    const size_t first = first_matrix_block_[i];
    const size_t end = i + 1 < layers_.size() ? first_matrix_block_[i + 1]
                                              : matrix_blocks_.size();
    if (first == end) continue;
    layers_[i]->AddBlockInputSums(cache.activation[i], cache.work[i],
                                  sums->data() + first);
  }
}

bool Network::AddPreconditionedGradient(const Cache& cache, int block,
                                        const Eigen::MatrixXd& p_lower,
                                        std::vector<Eigen::MatrixXd>* scratch,
                                        Eigen::MatrixXd* gp) const {
  const int layer = matrix_blocks_[block].layer;
  return layers_[layer]->AddPreconditionedGradient(
      cache.activation[layer], cache.work[layer],
      block - first_matrix_block_[layer], p_lower, scratch, gp);
}

void Network::Cache::Resize(const Network& net, int cols) {
  const size_t n = net.layers_.size();
  if (activation.size() == n + 1 && this->cols() == cols) return;
  activation.resize(n + 1);
  work.resize(n);
  activation[0].resize(net.inputs(), cols);
  for (size_t i = 0; i < n; ++i) {
    activation[i + 1].resize(net.layers_[i]->output_shape().size(), cols);
    net.layers_[i]->ResizeWorkspace(cols, &work[i]);
  }
  // d_activation is sized by the first backward pass: forward-only users
  // (predictions, simulations) never pay for it.
  d_activation.clear();
}

void Network::Initialize(double sigma0, Rng* rng, double* params) const {
  for (size_t i = 0; i < layers_.size(); ++i)
    layers_[i]->Initialize(sigma0, rng, params + blocks_[i].offset);
}

void Network::Forward(const double* params,
                      const Eigen::Ref<const Eigen::MatrixXd>& in,
                      Cache* cache) const {
  cache->Resize(*this, static_cast<int>(in.cols()));
  cache->activation[0] = in;
  ForwardLayers(params, 0, num_layers(), cache);
}

void Network::ForwardLayers(const double* params, int begin, int end,
                            Cache* cache) const {
  for (int i = begin; i < end; ++i) {
    layers_[i]->Forward(params + blocks_[i].offset, cache->activation[i],
                        &cache->work[i], &cache->activation[i + 1]);
  }
}

void Network::BackwardLayers(const double* params,
                             const Eigen::Ref<const Eigen::MatrixXd>& d_out,
                             int layer, Cache* cache,
                             Eigen::MatrixXd* d_in) const {
  const int n = num_layers();
  if (cache->d_activation.size() != static_cast<size_t>(n)) {
    cache->d_activation.resize(n);
  }
  for (int i = n - 1; i >= layer; --i) {
    // Layer i writes dL/d(its input) into d_activation[i], which layer i - 1
    // reads as its d_out; the bottom layer of the pass writes d_in.
    Eigen::MatrixXd* d_below = i > layer ? &cache->d_activation[i] : d_in;
    const Layer& l = *layers_[i];
    const double* p = params + blocks_[i].offset;
    if (i == n - 1) {
      l.Backward(p, cache->activation[i], cache->activation[i + 1], d_out,
                 &cache->work[i], d_below);
    } else {
      l.Backward(p, cache->activation[i], cache->activation[i + 1],
                 cache->d_activation[i + 1], &cache->work[i], d_below);
    }
  }
}

void Network::Backward(const double* params,
                       const Eigen::Ref<const Eigen::MatrixXd>& d_out,
                       Cache* cache, Eigen::MatrixXd* d_in) const {
  BackwardLayers(params, d_out, 0, cache, d_in);
}

void Network::BackwardToLayer(const double* params,
                              const Eigen::Ref<const Eigen::MatrixXd>& d_out,
                              int layer, Cache* cache) const {
  BackwardLayers(params, d_out, layer, cache, nullptr);
}

void Network::Gradient(const Cache& cache, double* grad) const {
  for (int i = 0; i < num_layers(); ++i) LayerGradient(i, cache, grad);
}

void Network::LayerGradient(int layer, const Cache& cache, double* grad) const {
  layers_[layer]->Gradient(cache.activation[layer], cache.work[layer],
                           grad + blocks_[layer].offset);
}

}  // namespace sparrow::core
