// Sparse Bayesian deep learning (Zhou, Ibrahim & Pan; ALGORITHMS.md §1):
// reweighted group-sparse training of a network with automatic pruning and a
// per-weight posterior-variance proxy.
//
// Algorithm 1, for t = 1..T_max:
//   1. W <- approximately argmin
//        V(W) + (2 sigma^2 / N) sum_l lambda_l sum_g omega_g |W_g|_2,
//      warm-started from the previous W: proximal Adam epochs, or proximal
//      diagonal-Newton steps on the diagonal GGN (§1.3);
//   2. per group g: upsilon_g = |W_g| / max(omega_g, eps),
//      alpha_k = H_kk / (1 + upsilon_g H_kk)  (the stable form of 1/upsilon -
//      C_kk/upsilon^2), omega_g = sqrt(sum_{k in g} alpha_k), with H the
//      diagonal generalized Gauss-Newton of E = SSE / (2 sigma^2) (§1.5);
//   3. groups with upsilon_g < kappa_variance or |W_g| < kappa_weight are
//      pruned: set to zero for good, their gradient masked from then on.
// Stops after T_max outer iterations, or earlier when the support has not
// changed and the validation metric has not improved for `stall_iterations`.
//
// V is the training objective of every Sparrow optimizer (mean loss over N
// samples plus the L2 term). The factor 2 sigma^2 / N makes lambda relative to
// the paper's Bayesian objective SSE / (2 sigma^2) + sum omega |W| (eq. 39):
// lambda = 1 is the pure type-II maximum-likelihood prior, smaller values
// prune less. Only weights carry the sparsity prior; biases are never pruned.
#ifndef SPARROW_CORE_OPTIM_SBDL_SBDL_H_
#define SPARROW_CORE_OPTIM_SBDL_SBDL_H_

#include <cstdint>
#include <limits>
#include <vector>

#include "Eigen/Core"
#include "absl/status/status.h"
#include "core/models/layers/dense.h"
#include "core/optim/problem.h"
#include "core/optim/stop_rules.h"

namespace sparrow::core {

// Group structure of the prior (Table 1 of the paper, in its orientation).
enum class SbdlGroups {
  kElement,  // one weight per group: unstructured sparsity
  kRow,      // all outgoing weights of an input neuron; in layer 1 a lag
  kColumn,   // all incoming weights of a neuron (neuron removal); the output
             // layer, which has no neuron to remove, is grouped by element
  kTile,     // rectangular tiles of tile_inputs x tile_neurons ("shape-wise")
};

struct SbdlOptions {
  static constexpr const char kName[] = "sbdl";  // in specs and messages
  SbdlGroups groups = SbdlGroups::kElement;
  int tile_inputs = 2;   // kTile: tile height (inputs), >= 1
  int tile_neurons = 2;  // kTile: tile width (neurons), >= 1
  // lambda_l per weight layer (>= 0; 0 = layer not regularized), relative to
  // the Bayesian weight; a single value applies to every layer.
  std::vector<double> lambda = {1.0};
  // Pruning thresholds kappa_upsilon and kappa_w (>= 0).
  double kappa_variance = 1e-6;
  double kappa_weight = 1e-3;
  // sigma^2 of the likelihood in normalized output units; 0 = re-estimated as
  // the mean squared training residual: exactly at every hyperparameter
  // update, and from the loss each inner epoch reports in between.
  double noise_variance = 0.0;
  // Inner solver of step 1, warm-started; its state (Adam moments, Newton
  // damping) carries over between outer iterations.
  enum class Inner { kProximalAdam, kProximalNewton };
  Inner inner = Inner::kProximalAdam;
  int inner_epochs = 100;  // epochs (Adam) or steps (Newton) per outer iter
  double learning_rate = 1e-3;  // proximal Adam
  // Proximal diagonal Newton: initial damping mu added to the diagonal GGN of
  // V; multiplied by 10 on a step that does not decrease the regularized
  // objective, divided by 3 on one that does.
  double newton_damping = 1e-3;
  // false: the fixed-weight baselines (plain L1 / group Lasso, omega = 1, no
  // hyperparameter updates; pruning only removes groups the prox zeroed).
  bool reweight = true;
  // Stop when the support and the validation metric have not improved for
  // this many outer iterations (0 = run all T_max).
  int stall_iterations = 3;
  // Iterations are outer iterations (T_max, 10), each one progress record;
  // tolerance and report_every are not used (stall_iterations is SBDL's
  // convergence test).
  StopRules stop = {10};
  uint64_t seed = 0;  // minibatch order
  // Resume: a state reported in IterationRecord::optimizer_state (empty or
  // not matching = start afresh from the iterate), and what the trainer's
  // validation tracking knew at the checkpoint: whether a metric was finite
  // so far, whether the checkpoint's iterate improved it, and the best one.
  struct Resume {
    Eigen::VectorXd state;
    bool has_metric = false;
    bool improved = false;
    double best_metric = std::numeric_limits<double>::infinity();
  };
  Resume resume;

  // `num_layers` is the number of weight matrices lambda must match.
  absl::Status Validate(int num_layers) const;
};

// What SBDL needs beyond value and gradient.
class SbdlObjective : public Objective {
 public:
  // Number of training samples N (the data term of V is a mean over them).
  virtual int num_samples() const = 0;
  // s(k) = sum over samples and outputs of (d output / d w_k)^2: the diagonal
  // GGN of SSE / 2 (full batch).
  virtual void OutputJacobianSquares(const Eigen::VectorXd& w,
                                     Eigen::VectorXd* s) = 0;
  // d^2 V / d w_k^2 of the GGN model: loss curvature times s(k), plus the L2
  // term.
  virtual void DiagonalGgn(const Eigen::VectorXd& w, Eigen::VectorXd* h) = 0;
  // Mean squared residual per output (the maximum-likelihood sigma^2).
  virtual double MeanSquaredResidual(const Eigen::VectorXd& w) = 0;
  // The same, recovered from a value of V at w (or a minibatch estimate of
  // it) without evaluating the model again: (loss - L2 term) / outputs.
  virtual double MeanSquaredResidualFromLoss(
      double loss, const Eigen::VectorXd& w) const = 0;
};

struct SbdlResult {
  // 1 = active, 0 = pruned; biases are always 1.
  Eigen::VectorXd mask;
  // Posterior-variance proxy C_kk = upsilon_k / (1 + upsilon_k H_kk) per
  // parameter (normalized units); biases, which carry no prior, get the flat-
  // prior limit 1 / H_kk; 0 for pruned weights and where H_kk = 0.
  Eigen::VectorXd variance;
  Eigen::VectorXd upsilon, omega;  // per parameter (the group's value)
  double noise_variance = 0.0;     // sigma^2 used for the last update
  int outer_iterations = 0;        // completed
  int pruned_groups = 0;
  int total_groups = 0;
};

// The weight matrices carrying the prior are the network's dense layers
// (DenseBlocks): A (out neurons x in inputs) column-major at weight_offset. The
// paper writes W = A^T (inputs x neurons), so its row-wise groups are our
// columns.

// Partition of the weights into groups (indices into the parameter vector)
// and the weight layer of each group.
struct SbdlGroupLayout {
  std::vector<std::vector<int>> groups;
  std::vector<int> layer;
};
// `linear`, when not null, is a linear term beside the network (Mlp::linear:
// a block over the network's inputs). Its weights join layer 1's groups with
// row groups (an input's group holds its linear weights too, so removing it
// removes the lag); otherwise each is its own group. Either way they carry
// layer 1's lambda.
SbdlGroupLayout MakeSbdlGroups(const SbdlOptions& options,
                               const std::vector<DenseBlock>& layers,
                               const DenseBlock* linear = nullptr);

// Runs Algorithm 1 from *w. On return *w is the iterate of the outer iteration
// with the best validation metric (as set by the callback), or the last one
// when the callback reports none; *result describes that same iterate. One
// progress record per outer iteration: loss = V, extras = penalty,
// remaining_pct, pruned_groups, noise_variance, inner_epochs.
Summary MinimizeSbdl(const SbdlOptions& options,
                     const std::vector<DenseBlock>& layers,
                     SbdlObjective& objective, Eigen::VectorXd* w,
                     SbdlResult* result, IterationCallback* callback,
                     const DenseBlock* linear = nullptr);

}  // namespace sparrow::core

#endif  // SPARROW_CORE_OPTIM_SBDL_SBDL_H_
