// Recursive-least-squares training of layered networks (Zhang et al.;
// ALGORITHMS.md §3, Algorithms 1 and 2 with the +M and +R variants).
//
// Per minibatch: one forward and backward pass at Theta_{s-1} gives the whole
// gradient and every parameter block's mean input row; the gradient is
// optionally clipped (global L2 norm); then every preconditioned block takes
// its RlsBlock step (core/optim/rls/rls_block.h) with P_{s-1} and updates P,
// and the parameters RLS does not precondition (the hybrid mode's output
// layer, or any parameter outside a block) take an Adam step. One Step() is
// one epoch.
#ifndef SPARROW_CORE_OPTIM_RLS_RLS_H_
#define SPARROW_CORE_OPTIM_RLS_RLS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "Eigen/Core"
#include "absl/status/status.h"
#include "core/models/network.h"
#include "core/optim/problem.h"
#include "core/optim/rls/rls_block.h"
#include "core/optim/stop_rules.h"

namespace sparrow::core {

// Preconditioned gradients G_i P_i that an objective may form from the
// minibatch's per-sample factors, cheaper than the product of the finished
// gradient with P_i (Layer::AddPreconditionedGradient).
struct BlockProducts {
  // In: P_i of matrix block i (its lower triangle), or null for none.
  std::vector<const Eigen::MatrixXd*> p;
  // Out: G_i P_i, with G_i block i of the returned gradient, where formed[i].
  std::vector<Eigen::MatrixXd> gp;
  std::vector<char> formed;
};

// An objective over a layered network whose minibatches also report each
// parameter block's mean input row.
class BlockObjective : public Objective {
 public:
  virtual const std::vector<NetworkMatrixBlock>& matrix_blocks() const = 0;
  // EvaluateBatch, and (*means)[i] = the mean of block i's input rows over
  // the minibatch, with a trailing 1 when the block has a bias (sized here).
  // With `products` (may be null): formed[i] says whether gp[i] was formed;
  // the caller forms the others from the gradient.
  virtual double EvaluateBatchWithMeans(const Eigen::VectorXd& w, int batch,
                                        Eigen::VectorXd* grad,
                                        std::vector<Eigen::VectorXd>* means,
                                        BlockProducts* products) = 0;
};

struct RlsOptions {
  static constexpr const char kName[] = "rls";
  // The paper's k is 0.1; a larger k only shortens every step (h grows
  // with k).
  static constexpr double kMaxRatioFactor = 1e4;
  // lambda in (0, 1].
  double forgetting = 1.0;
  // k in (0, kMaxRatioFactor], the ratio factor of the average
  // approximation.
  double ratio = 0.1;
  // eta > 0 per preconditioned block in network order (a recurrent layer has
  // two: W then V), or one value for all.
  std::vector<double> eta = {1.0};
  // alpha in [0, 1): +M. gamma >= 0: +R (the bias column is not penalized).
  double momentum = 0.0;
  double l1 = 0.0;
  // Clip the minibatch gradient's global L2 norm to this; 0 = no clipping.
  double clip_norm = 0.0;
  // Train the output layer (the last with parameters) by Adam instead: the
  // hybrid mode. Adam also trains any parameter outside a block; it uses
  // learning_rate and PyTorch's default betas and epsilon.
  // Unset: false (the trainer sets it from the loss).
  std::optional<bool> adam_output_layer;
  double learning_rate = 1e-3;
  // Multiplies the objective's gradient before the steps: 0.5 turns the mean
  // of sum (yhat - y)^2 into the paper's (1 / 2M) ||Z - Z*||^2.
  double gradient_scale = 1.0;
  // A preconditioned block's P may take at most this many bytes.
  int64_t max_p_bytes = int64_t{1} << 30;
  // Threads that split each block's products by rows (the minibatch's
  // threads, idle while the blocks step).
  int threads = 1;
  StopRules stop;
  uint64_t seed = 0;  // minibatch order
  // Resume: a state reported in IterationRecord::optimizer_state.
  Eigen::VectorXd initial_state;

  absl::Status Validate() const;
};

// OK, or InvalidArgument naming the first block (layer, W or V) whose P
// ((inputs + 1)^2 doubles) exceeds options.max_p_bytes, or a count of eta
// values that fits neither one nor the preconditioned blocks.
absl::Status CheckRlsBlocks(const std::vector<NetworkMatrixBlock>& blocks,
                            const RlsOptions& options);

class RlsOptimizer {
 public:
  // The blocks must pass CheckRlsBlocks.
  RlsOptimizer(const RlsOptions& options,
               const std::vector<NetworkMatrixBlock>& blocks, int num_params);

  // One epoch over all minibatches; the mean minibatch loss, +Inf when a
  // loss or gradient was not finite (w then holds the last finite iterate's
  // successors up to that batch; the caller restores its own copy).
  double Step(BlockObjective& objective, Eigen::VectorXd* w);

  // [t, Adam m, Adam v, every block's RlsBlock state] as one vector, and
  // back (false, leaving the state as it was, when it does not fit).
  void PackState(Eigen::VectorXd* out) const;
  bool UnpackState(const Eigen::VectorXd& in);

  // Per preconditioned block: the last step's h and trace(P); and the resets
  // of P so far over all blocks. Progress extras.
  std::vector<std::pair<std::string, double>> Extras() const;
  int64_t updates() const { return t_; }

 private:
  struct Preconditioned {
    int index;  // into the objective's matrix_blocks()
    int offset;
    double k;  // ratio times the block's steps
    RlsBlock block;
  };
  // Scales and clips grad_; returns the factor it multiplied grad_ by.
  double ClipAndScale();
  void AdamUpdate(Eigen::VectorXd* w);

  RlsOptions options_;
  std::vector<Preconditioned> blocks_;
  std::vector<std::string> names_;
  // Parameters outside every preconditioned block, as [begin, end) ranges.
  std::vector<std::pair<int, int>> rest_;
  Eigen::VectorXd m_, v_;  // Adam's moments over the concatenated rest_
  int64_t t_ = 0;          // minibatch updates
  Eigen::VectorXd grad_;
  std::vector<Eigen::VectorXd> means_;
  BlockProducts products_;
  std::unique_ptr<ThreadPool> pool_;
};

// Runs until a stopping rule holds. On divergence w is the last finite
// iterate.
Summary MinimizeRls(const RlsOptions& options, BlockObjective& objective,
                    Eigen::VectorXd* w, IterationCallback* callback);

}  // namespace sparrow::core

#endif  // SPARROW_CORE_OPTIM_RLS_RLS_H_
