// One parameter block trained by the recursive-least-squares step of Zhang et
// al. (ALGORITHMS.md §3.3): a preconditioned SGD step whose preconditioner P
// is the inverse autocorrelation of the block's input, updated by a rank-1
// Sherman–Morrison step from the minibatch's mean input (the "average
// approximation"), with the paper's momentum (+M) and l1 (+R) variants.
//
// Layout. A block is Sparrow's [A b]: a rows x (n + 1) column-major matrix
// whose last column is the bias (a Dense layer's [A b], a Conv2d's [K~ b], a
// recurrent layer's [W b] or [V v]), the transpose of the paper's
// Theta = [W; b^T]. The paper's update Theta <- Theta - (eta / h) P G is then
// B <- B - (eta / h) G_B P with G_B the gradient in the same layout (P is
// symmetric). x̄ has n + 1 entries, the last one 1 (the bias input).
//
// P stays symmetric by construction: only its lower triangle is stored and
// updated. With lambda = 1 it is positive definite in exact arithmetic; when
// round-off makes x̄ᵀ P x̄ negative or h not finite, P is reset to I (counted
// in resets()), as ALGORITHMS.md §3.6 advises. P is kept in double whatever
// the network's precision.
#ifndef SPARROW_CORE_OPTIM_RLS_RLS_BLOCK_H_
#define SPARROW_CORE_OPTIM_RLS_RLS_BLOCK_H_

#include <cstdint>
#include <functional>

#include "Eigen/Core"
#include "absl/status/status.h"
#include "core/util/thread_pool.h"

namespace sparrow::core {

struct RlsBlockOptions {
  // Forgetting factor lambda in (0, 1] (the paper: 1).
  double forgetting = 1.0;
  // Gradient scaling factor eta > 0 (the paper: 1 for every layer).
  double eta = 1.0;
  // Momentum alpha in [0, 1) (+M; the paper: 0.5).
  double momentum = 0.0;
  // l1 weight gamma >= 0 (+R; the paper: 1e-5 for FNN and CNN, 1e-6 for
  // LSTM); the bias column is not penalized.
  double l1 = 0.0;

  absl::Status Validate() const;
};

class RlsBlock {
 public:
  // A block of `rows` outputs over `inputs` inputs plus, with `bias`, the
  // bias column: P = I of size cols() = inputs + bias, momentum 0.
  RlsBlock(int rows, int inputs, const RlsBlockOptions& options,
           bool bias = true);

  int rows() const { return static_cast<int>(omega_.rows()); }
  int cols() const { return static_cast<int>(omega_.cols()); }

  // One step on `block` (rows x cols column-major, updated in place) given
  // the minibatch gradient `grad` (same layout, evaluated before any block
  // of the network moved) and x̄, the mean of the block's input rows (with a
  // trailing 1 for the bias). `k` is the ratio factor times the number of steps
  // the mean ran over (k for a dense or conv block, k T for a recurrent one), >
  // 0. With a pool, the products G P and sgn(B) P are split by rows over its
  // threads (results then depend on the thread count, not on scheduling).
  // With `gp`, the step takes gp_scale * gp for G P instead of forming it
  // (BlockProducts: gp = G' P with grad = gp_scale * G'). Allocates no
  // matrices.
  void Step(const Eigen::Ref<const Eigen::VectorXd>& xbar, double k,
            const double* grad, double* block, ThreadPool* pool = nullptr,
            const Eigen::MatrixXd* gp = nullptr, double gp_scale = 1.0);

  // P with its upper triangle filled in (for tests and inspection), and the
  // stored lower triangle (its upper triangle is not maintained).
  Eigen::MatrixXd P() const;
  const Eigen::MatrixXd& p_lower() const { return p_; }
  const Eigen::MatrixXd& momentum() const { return omega_; }
  // How many times P was reset to I because it had lost definiteness.
  int64_t resets() const { return resets_; }
  // h of the last step (NaN before the first), and trace(P).
  double last_h() const { return last_h_; }
  double trace() const { return p_.diagonal().sum(); }

  // The state a resumed run needs: P's lower triangle by columns, then the
  // momentum buffer, then the reset count. Unpack refuses a state of the
  // wrong size or with a non-finite entry.
  int64_t state_size() const;
  void PackState(double* out) const;
  absl::Status UnpackState(const double* in, int64_t size);

 private:
  void ResetP();
  // fn(first row, row count) over all rows: in one call, or split over the
  // pool's threads.
  void ForRows(ThreadPool* pool,
               const std::function<void(Eigen::Index, Eigen::Index)>& fn);

  RlsBlockOptions options_;
  Eigen::MatrixXd p_;      // cols x cols, lower triangle
  Eigen::MatrixXd omega_;  // rows x cols
  Eigen::MatrixXd step_;   // rows x cols scratch: G P, then sgn(B) P
  Eigen::MatrixXd sign_;   // rows x cols scratch: sgn(B_{s-1}), bias column 0
  Eigen::VectorXd u_;      // P x̄
  int64_t resets_ = 0;
  bool bias_;
  double last_h_;
};

}  // namespace sparrow::core

#endif  // SPARROW_CORE_OPTIM_RLS_RLS_BLOCK_H_
