// The least-squares objective of a layered network with block (layer)
// restricted evaluations, for the block-layer decomposition methods:
//   f(w) = (1/P) sum_p ||yhat_p(w) - y_p||^2 + rho ||w||^2
// (Palagi & Seccia eq. 3: the MSE without a 1/2), and on a minibatch B
//   f_B(w) = (1/P) sum_{p in B} ||yhat_p - y_p||^2 + (|B| / P) rho ||w||^2
// (ALGORITHMS.md §4.1 erratum: the pieces of a partition sum to f).
//
// Block l is layer l's parameter block of the Network. Block evaluations are
// what make the methods cheap: the activations entering block l do not depend
// on it, so they are computed once per block visit, and each evaluation runs
// layers l..L forward and L..l backward only.
#ifndef SPARROW_CORE_OPTIM_BLD_LAYERED_OBJECTIVE_H_
#define SPARROW_CORE_OPTIM_BLD_LAYERED_OBJECTIVE_H_

#include <vector>

#include "Eigen/Core"
#include "core/models/network.h"
#include "core/optim/problem.h"

namespace sparrow::core {

class LayeredObjective : public Objective {
 public:
  // x: inputs x P, y: outputs x P; the pointers must outlive the objective.
  // net must outlive the objective too.
  LayeredObjective(const Network* net, const Eigen::MatrixXd* x,
                   const Eigen::MatrixXd* y, double rho);

  int num_params() const override { return net_->num_params(); }
  int num_layers() const { return net_->num_layers(); }
  int num_samples() const { return static_cast<int>(x_->cols()); }
  int block_offset(int l) const { return net_->block(l).offset; }
  int block_size(int l) const { return net_->block(l).size; }
  double rho() const { return rho_; }
  const Eigen::MatrixXd& targets() const { return *y_; }
  const Network& network() const { return *net_; }

  // f and, when grad is not null, its full gradient.
  double Evaluate(const Eigen::VectorXd& w, Eigen::VectorXd* grad) override;

  // ---- batch blocks (B2LD) ----
  // Fixes the point w and the block l (0-based layer): runs the layers
  // below l once and keeps their output.
  void SetBlock(const Eigen::VectorXd& w, int l);
  // f at the SetBlock point with block l replaced by v, and the gradient with
  // respect to v (block_size(l) entries) when grad is not null.
  double EvaluateBlock(const Eigen::VectorXd& v, Eigen::VectorXd* grad);
  // The last hidden layer's activations at the SetBlock point (l = L - 1):
  // the design matrix of the last layer's least-squares problem.
  const Eigen::MatrixXd& BlockInput() const;

  // ---- minibatches (BLInG, IG) ----
  // Selects the rows order[begin..end) as the current minibatch.
  void SetMinibatch(const std::vector<int>& order, int begin, int end);
  // Recomputes the minibatch activations at w from layer `from` up; layers
  // below `from` must be unchanged since the last call (from = 0: all).
  void MinibatchForward(const Eigen::VectorXd& w, int from);
  // Gradient of f_B with respect to block l at the point of the last
  // MinibatchForward (layers above l current): backpropagates L..l only.
  void MinibatchBlockGradient(const Eigen::VectorXd& w, int l,
                              Eigen::VectorXd* grad);
  // Full gradient of f_B at the point of the last MinibatchForward.
  void MinibatchGradient(const Eigen::VectorXd& w, Eigen::VectorXd* grad);

  // Block evaluations (forward from the block + backward to it) since
  // construction, and full evaluations; for the benchmarks.
  long block_evaluations() const { return block_evaluations_; }
  long full_evaluations() const { return full_evaluations_; }

 private:
  // d_out of the squared error on the cached batch, scaled by 2 / P.
  void OutputGradient(const Eigen::MatrixXd& y, Network::Cache* cache);

  const Network* net_;
  const Eigen::MatrixXd* x_;
  const Eigen::MatrixXd* y_;
  const double rho_;
  Network::Cache full_;  // all rows
  Eigen::MatrixXd d_out_;
  Eigen::VectorXd point_;    // SetBlock's w, with the block overwritten
  Eigen::VectorXd scratch_;  // full-length gradient scratch
  int block_ = -1;
  Network::Cache batch_;  // the minibatch
  Eigen::MatrixXd xb_, yb_;
  long block_evaluations_ = 0, full_evaluations_ = 0;
};

}  // namespace sparrow::core

#endif  // SPARROW_CORE_OPTIM_BLD_LAYERED_OBJECTIVE_H_
