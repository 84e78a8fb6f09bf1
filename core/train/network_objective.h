// A layered Network (cnn / rnn / lstm models) on the columns of x (inputs x
// N) with targets y (outputs x N), trained by minibatches on several threads:
//   V(w) = (1/N) [ sum_k l(y_k, yhat_k) + rho_theta/2 |w|^2 ],
// a minibatch's value and gradient estimating it as TableObjective's do.
//
// Each minibatch (or each chunk of a full pass) is split into `threads`
// contiguous parts; thread k gathers its samples, runs the forward and
// backward pass on its own cache, and the parts' losses and gradients are
// summed in part order. So results depend on the seed and the thread count
// only, and once every batch width has been seen nothing is allocated.
//
// Not thread-safe itself (one run owns it); the network is shared read-only.
#ifndef SPARROW_CORE_TRAIN_NETWORK_OBJECTIVE_H_
#define SPARROW_CORE_TRAIN_NETWORK_OBJECTIVE_H_

#include <map>
#include <vector>

#include "Eigen/Core"
#include "core/losses/loss.h"
#include "core/models/network.h"
#include "core/optim/problem.h"
#include "core/optim/rls/rls.h"
#include "core/util/thread_pool.h"

namespace sparrow::core {

class NetworkObjective : public BlockObjective {
 public:
  // batch_size 0 = full batch (evaluated in chunks of kChunk samples).
  NetworkObjective(const Network* net, const Eigen::MatrixXd* x,
                   const Eigen::MatrixXd* y, Loss loss, double rho_theta,
                   int batch_size, bool shuffle, int threads);

  static constexpr int kChunk = 256;

  int num_params() const override { return net_->num_params(); }
  int num_batches() const override { return num_batches_; }
  double Evaluate(const Eigen::VectorXd& w, Eigen::VectorXd* grad) override;
  void StartEpoch(const Eigen::VectorXd& w, Rng* rng) override;
  double EvaluateBatch(const Eigen::VectorXd& w, int batch,
                       Eigen::VectorXd* grad) override;
  // RLS: the network's parameter blocks and their mean input rows (summed
  // per thread part, in part order like the gradient).
  const std::vector<NetworkMatrixBlock>& matrix_blocks() const override {
    return net_->matrix_blocks();
  }
  // products: gp[i] is formed for a dense block whose factorized product
  // costs less than G P (and only without rho_theta, which G P would need).
  double EvaluateBatchWithMeans(const Eigen::VectorXd& w, int batch,
                                Eigen::VectorXd* grad,
                                std::vector<Eigen::VectorXd>* means,
                                BlockProducts* products) override;

 private:
  // One thread's buffers for one part width.
  struct Slot {
    Network::Cache cache;
    Eigen::MatrixXd x, y, d_out;
  };
  struct Part {
    std::map<int, Slot> slots;
    Eigen::VectorXd grad;
    std::vector<Eigen::VectorXd> sums;  // block input sums (RLS)
    std::vector<Eigen::MatrixXd> gp;    // G P of the blocks in factorize_
    std::vector<Eigen::MatrixXd> scratch;
    double loss = 0.0;
  };

  // Loss sum over the samples order_[begin, end), adding the gradient sum to
  // *grad when it is not null and the blocks' input sums to *sums when that
  // is not null.
  double Accumulate(const Eigen::VectorXd& w, int begin, int end,
                    Eigen::VectorXd* grad,
                    std::vector<Eigen::VectorXd>* sums = nullptr);
  void RunPart(const Eigen::VectorXd& w, int begin, int end, bool gradient,
               bool sums, Part* part);
  // EvaluateBatchWithMeans' products over a batch of `samples`: which
  // blocks' G P the parts form (factorize_, zeroed products->gp); a part's
  // share of them (after its Backward); their mean over the batch.
  void StartProducts(BlockProducts* products, int samples);
  void AddPartProducts(const Network::Cache& cache, Part* part) const;
  void FinishProducts(int samples);

  const Network* net_;
  const Eigen::MatrixXd* x_;
  const Eigen::MatrixXd* y_;
  Loss loss_;
  double rho_theta_;
  int batch_size_;
  bool shuffle_;
  int num_batches_;
  std::vector<int> order_;
  std::vector<Part> parts_;
  std::vector<Eigen::VectorXd> block_sums_;  // EvaluateBatchWithMeans'
  // EvaluateBatchWithMeans' P of each block whose G P the parts form, or
  // null; empty outside it.
  std::vector<const Eigen::MatrixXd*> factorize_;
  BlockProducts* products_ = nullptr;
  ThreadPool pool_;
};

}  // namespace sparrow::core

#endif  // SPARROW_CORE_TRAIN_NETWORK_OBJECTIVE_H_
