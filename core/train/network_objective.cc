#include "core/train/network_objective.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/train/objectives.h"

namespace sparrow::core {
namespace {

double FiniteOrInf(double v) {
  return std::isfinite(v) ? v : std::numeric_limits<double>::infinity();
}

// *to = vectors of from's sizes, zeroed (allocating only when a size changes).
void ZeroLike(const std::vector<Eigen::VectorXd>& from,
              std::vector<Eigen::VectorXd>* to) {
  to->resize(from.size());
  for (size_t i = 0; i < from.size(); ++i) (*to)[i].setZero(from[i].size());
}

}  // namespace

NetworkObjective::NetworkObjective(const Network* net, const Eigen::MatrixXd* x,
                                   const Eigen::MatrixXd* y, Loss loss,
                                   double rho_theta, int batch_size,
                                   bool shuffle, int threads)
    : net_(net),
      x_(x),
      y_(y),
      loss_(loss),
      rho_theta_(rho_theta),
      batch_size_(batch_size),
      shuffle_(shuffle),
      parts_(std::max(threads, 1)),
      pool_(std::max(threads, 1)) {
  const int n = static_cast<int>(x->cols());
  num_batches_ = (batch_size <= 0 || batch_size >= n)
                     ? 1
                     : (n + batch_size - 1) / batch_size;
  order_.resize(n);
  std::iota(order_.begin(), order_.end(), 0);
}

void NetworkObjective::RunPart(const Eigen::VectorXd& w, int begin, int end,
                               bool gradient, bool sums, Part* part) {
  part->loss = 0.0;
  const int cols = end - begin;
  if (cols <= 0) return;
  Slot& s = part->slots[cols];
  s.x.resize(x_->rows(), cols);
  s.y.resize(y_->rows(), cols);
  for (int j = 0; j < cols; ++j) {
    s.x.col(j) = x_->col(order_[begin + j]);
    s.y.col(j) = y_->col(order_[begin + j]);
  }
  net_->Forward(w.data(), s.x, &s.cache);
  part->loss = loss_.Value(s.y, s.cache.output());
  if (sums) net_->AddBlockInputSums(s.cache, &part->sums);
  if (!gradient) return;
  s.d_out.resize(y_->rows(), cols);
  loss_.Gradient(s.y, s.cache.output(), s.d_out);
  net_->Backward(w.data(), s.d_out, &s.cache, nullptr);
  net_->Gradient(s.cache, part->grad.data());
  AddPartProducts(s.cache, part);
}

void NetworkObjective::StartProducts(BlockProducts* products, int samples) {
  const std::vector<NetworkMatrixBlock>& blocks = net_->matrix_blocks();
  factorize_.assign(blocks.size(), nullptr);
  products_ = products;
  if (products == nullptr) return;
  products->gp.resize(blocks.size());
  products->formed.assign(blocks.size(), 0);
  if (rho_theta_ != 0.0) return;
  for (size_t i = 0; i < blocks.size() && i < products->p.size(); ++i) {
    const MatrixBlock& b = blocks[i].block;
    const int cols = b.inputs + (b.bias ? 1 : 0);
    if (products->p[i] == nullptr || b.rows_per_sample != 1 ||
        FactorizedProductCost(b, samples) >=
            static_cast<double>(b.rows) * cols * cols) {
      continue;
    }
    factorize_[i] = products->p[i];
    products->gp[i].setZero(b.rows, cols);
    products->formed[i] = 1;
  }
}

void NetworkObjective::FinishProducts(int samples) {
  for (size_t i = 0; i < factorize_.size(); ++i) {
    if (factorize_[i] != nullptr) products_->gp[i] /= samples;
  }
  factorize_.clear();
  products_ = nullptr;
}

void NetworkObjective::AddPartProducts(const Network::Cache& cache,
                                       Part* part) const {
  for (size_t i = 0; i < factorize_.size(); ++i) {
    if (factorize_[i] == nullptr) continue;
    net_->AddPreconditionedGradient(cache, static_cast<int>(i), *factorize_[i],
                                    &part->scratch, &part->gp[i]);
  }
}

double NetworkObjective::Accumulate(const Eigen::VectorXd& w, int begin,
                                    int end, Eigen::VectorXd* grad,
                                    std::vector<Eigen::VectorXd>* sums) {
  const int threads = static_cast<int>(parts_.size());
  const int n = end - begin;
  const int used = std::max(1, std::min(threads, n));
  pool_.Run(used, [&](int k) {
    Part& part = parts_[k];
    if (grad != nullptr) part.grad.setZero(w.size());
    if (sums != nullptr) ZeroLike(*sums, &part.sums);
    part.gp.resize(factorize_.size());
    for (size_t i = 0; i < factorize_.size(); ++i) {
      if (factorize_[i] == nullptr) continue;
      const MatrixBlock& b = net_->matrix_blocks()[i].block;
      part.gp[i].setZero(b.rows, b.inputs + (b.bias ? 1 : 0));
    }
    RunPart(w, begin + n * k / used, begin + n * (k + 1) / used,
            grad != nullptr, sums != nullptr, &part);
  });
  double value = 0.0;
  for (int k = 0; k < used; ++k) {
    value += parts_[k].loss;
    if (grad != nullptr) *grad += parts_[k].grad;
    for (size_t i = 0; sums != nullptr && i < sums->size(); ++i) {
      (*sums)[i] += parts_[k].sums[i];
    }
    for (size_t i = 0; i < factorize_.size(); ++i) {
      if (factorize_[i] != nullptr) products_->gp[i] += parts_[k].gp[i];
    }
  }
  return value;
}

double NetworkObjective::Evaluate(const Eigen::VectorXd& w,
                                  Eigen::VectorXd* grad) {
  const int n = static_cast<int>(x_->cols());
  if (grad != nullptr) grad->setZero(w.size());
  // A full pass in the data's own order, whatever the epoch's shuffle.
  std::vector<int> shuffled;
  shuffled.swap(order_);
  order_.resize(n);
  std::iota(order_.begin(), order_.end(), 0);
  double value = 0.0;
  for (int begin = 0; begin < n; begin += kChunk) {
    value += Accumulate(w, begin, std::min(n, begin + kChunk), grad);
  }
  order_.swap(shuffled);
  value += 0.5 * rho_theta_ * w.squaredNorm();
  if (grad != nullptr) {
    *grad += rho_theta_ * w;
    *grad /= n;
  }
  return FiniteOrInf(value / n);
}

void NetworkObjective::StartEpoch(const Eigen::VectorXd&, Rng* rng) {
  if (num_batches_ == 1 || !shuffle_) return;
  std::iota(order_.begin(), order_.end(), 0);
  rng->Shuffle(&order_);
}

double NetworkObjective::EvaluateBatch(const Eigen::VectorXd& w, int batch,
                                       Eigen::VectorXd* grad) {
  if (num_batches_ == 1) return Evaluate(w, grad);
  const int n = static_cast<int>(x_->cols());
  const int begin = batch * batch_size_;
  const int end = std::min(n, begin + batch_size_);
  grad->setZero(w.size());
  const double value = Accumulate(w, begin, end, grad);
  return MinibatchEstimate(value, end - begin, n, rho_theta_, w, grad);
}

double NetworkObjective::EvaluateBatchWithMeans(
    const Eigen::VectorXd& w, int batch, Eigen::VectorXd* grad,
    std::vector<Eigen::VectorXd>* means, BlockProducts* products) {
  const std::vector<NetworkMatrixBlock>& blocks = net_->matrix_blocks();
  block_sums_.resize(blocks.size());
  for (size_t i = 0; i < blocks.size(); ++i) {
    block_sums_[i].setZero(blocks[i].block.inputs);
  }
  const int n = static_cast<int>(x_->cols());
  const int begin = num_batches_ == 1 ? 0 : batch * batch_size_;
  const int end = num_batches_ == 1 ? n : std::min(n, begin + batch_size_);
  grad->setZero(w.size());
  StartProducts(products, end - begin);
  double value = 0.0;
  for (int from = begin; from < end; from += kChunk) {
    value +=
        Accumulate(w, from, std::min(end, from + kChunk), grad, &block_sums_);
  }
  FinishProducts(end - begin);
  means->resize(blocks.size());
  for (size_t i = 0; i < blocks.size(); ++i) {
    const MatrixBlock& b = blocks[i].block;
    Eigen::VectorXd& m = (*means)[i];
    m.resize(b.inputs + (b.bias ? 1 : 0));
    m.head(b.inputs) =
        block_sums_[i] / (static_cast<double>(end - begin) * b.rows_per_sample);
    if (b.bias) m(b.inputs) = 1.0;
  }
  return MinibatchEstimate(value, end - begin, n, rho_theta_, w, grad);
}

}  // namespace sparrow::core
