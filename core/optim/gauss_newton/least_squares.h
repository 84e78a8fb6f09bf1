// Problems Gauss-Newton methods can solve: a smooth objective V(w) that can
// also emit its Gauss-Newton normal equations H = A^T A, g = A^T b at a point
// (Bemporad §3, eq. 14-15), with grad V = -g exactly and H the generalized
// Gauss-Newton matrix.
//
// Units: V is the sum form  V = sum_k l(y_k, yhat_k) + 1/2 sum_i rho_i w_i^2 (N
// times the mean objective the other optimizers report), so the least-squares
// rows are sqrt(l'') J with right-hand side -l'/sqrt(l''), and the L2 rows
// sqrt(rho) I.
#ifndef SPARROW_CORE_OPTIM_GAUSS_NEWTON_LEAST_SQUARES_H_
#define SPARROW_CORE_OPTIM_GAUSS_NEWTON_LEAST_SQUARES_H_

#include <condition_variable>
#include <mutex>
#include <vector>

#include "Eigen/Core"
#include "core/data/dataset.h"
#include "core/losses/loss.h"
#include "core/models/state_space_rnn.h"

namespace sparrow::core {
namespace internal {

// Appends rows (with right-hand side rhs) to the triangular least-squares
// system (r, d) by a Householder QR of [r; rows]: afterwards r^T r and r^T d
// include the new rows. stack and stack_rhs are scratch.
void QrUpdate(const Eigen::Ref<const Eigen::MatrixXd>& rows,
              const Eigen::Ref<const Eigen::VectorXd>& rhs, Eigen::MatrixXd* r,
              Eigen::VectorXd* d, Eigen::MatrixXd* stack,
              Eigen::VectorXd* stack_rhs);

}  // namespace internal

class LeastSquaresProblem {
 public:
  virtual ~LeastSquaresProblem() = default;
  virtual int num_params() const = 0;
  // Number of loss terms (predicted samples): the mean objective is Value /
  // num_samples.
  virtual int num_samples() const = 0;
  // V(w) by simulation; +Inf when the simulation is not finite.
  virtual double Value(const Eigen::VectorXd& w) = 0;
  // V(w) when it is at most `cutoff`; otherwise some value above the cutoff
  // (+Inf when the evaluation was abandoned part way). A line search only
  // needs to know whether a trial beats its bound. Defaults to Value.
  virtual double ValueBelow(const Eigen::VectorXd& w, double cutoff) {
    static_cast<void>(cutoff);
    return Value(w);
  }
  // Fills the lower triangle of h = A^T A and g = A^T b at w; returns V(w).
  virtual double NormalEquations(const Eigen::VectorXd& w, Eigen::MatrixXd* h,
                                 Eigen::VectorXd* g) = 0;
  // QR form of the same least-squares problem: upper-triangular r and d with
  // r^T r = A^T A and r^T d = A^T b, so min |A p - b| = min |r p - d|. Avoids
  // squaring the condition number. The default factors the normal equations
  // (no accuracy gain); SequenceLeastSquares computes a true streaming QR.
  virtual double TriangularFactor(const Eigen::VectorXd& w, Eigen::MatrixXd* r,
                                  Eigen::VectorXd* d);
};

// The state-space RNN on several traces (Bemporad §3.1): per-trace
// sensitivities M_kx, M_ktheta by forward recursion (eq. 8-9), rows emitted on
// the fly in blocks and accumulated by rank updates, so memory does not grow
// with N. Traces are processed in parallel on `threads` threads, each with its
// own accumulator.
class SequenceLeastSquares : public LeastSquaresProblem {
 public:
  SequenceLeastSquares(const StateSpaceRnn* rnn,
                       const std::vector<data::Trace>* traces, Loss loss,
                       double rho_x0, double rho_theta, int threads);

  int num_params() const override { return rnn_->num_params(); }
  int num_samples() const override { return num_samples_; }
  double Value(const Eigen::VectorXd& w) override;
  // Simulates in chunks and stops once the loss so far plus a lower bound of
  // the rest exceeds the cutoff. Value is ValueBelow with an infinite cutoff.
  double ValueBelow(const Eigen::VectorXd& w, double cutoff) override;
  double NormalEquations(const Eigen::VectorXd& w, Eigen::MatrixXd* h,
                         Eigen::VectorXd* g) override;
  // Streaming Householder QR of the row blocks (a TSQR): R is updated with
  // each block, so memory stays O(n_p^2) as for the normal equations.
  double TriangularFactor(const Eigen::VectorXd& w, Eigen::MatrixXd* r,
                          Eigen::VectorXd* d) override;

 private:
  struct Worker {
    // rows holds a block of least-squares rows as columns (num_params x
    // kRowBlock), so that each row is written contiguously.
    Eigen::MatrixXd h, rows, curv, grad;
    Eigen::VectorXd g, rhs;
    double loss = 0.0;
    bool qr = false;  // accumulate R, d (in h, g) instead of A^T A, A^T b
    Eigen::MatrixXd stack;
    Eigen::VectorXd stack_rhs;
  };
  // Hands full row blocks from the thread that builds them to one that folds
  // them into (h, g): with a single trace and two threads, the sensitivity
  // recursion and the rank updates run side by side.
  struct Pipeline {
    std::mutex mu;
    std::condition_variable cv;
    Eigen::MatrixXd rows;  // the exchange slot, rows as columns
    Eigen::VectorXd rhs;
    int filled = 0;
    bool ready = false;
    bool done = false;
  };
  // Folds rows [0, filled) into the worker's (h, g) or its QR factor.
  static void Fold(Worker* wk, const Eigen::MatrixXd& rows,
                   const Eigen::VectorXd& rhs, int filled);
  void StartAccumulation(bool qr);
  double Accumulate(const Eigen::VectorXd& w);
  // Accumulates the rows of trace t into worker `wk`; simulates first unless
  // tapes_[t] already holds the simulation at w.
  void AccumulateTrace(const Eigen::VectorXd& w, int t, bool simulated,
                       Worker* wk, Pipeline* pipe = nullptr);
  // Whether tapes_ hold the simulation of every trace at w.
  bool SimulatedAt(const Eigen::VectorXd& w) const;
  double Regularization(const Eigen::VectorXd& w) const;

  const StateSpaceRnn* rnn_;
  const std::vector<data::Trace>* traces_;
  Loss loss_;
  Eigen::VectorXd rho_;  // per-parameter L2 weight
  int threads_;
  bool pipeline_ = false;  // one trace, two threads: see Pipeline
  int num_samples_ = 0;
  // Loss::LowerBoundPerElement over all targets (-Inf: no early stopping).
  double element_lower_bound_ = 0.0;
  int num_elements_ = 0;  // outputs x samples over all traces
  std::vector<Worker> workers_;
  // One simulation tape per trace, and the parameters they were simulated
  // at: after an accepted line-search trial, the next epoch's rows start from
  // the trial's simulation instead of repeating it.
  std::vector<StateSpaceRnn::Tape> tapes_;
  Eigen::VectorXd simulated_at_;
};

}  // namespace sparrow::core

#endif  // SPARROW_CORE_OPTIM_GAUSS_NEWTON_LEAST_SQUARES_H_
