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

#include <memory>
#include <vector>

#include "Eigen/Core"
#include "core/data/dataset.h"
#include "core/losses/loss.h"
#include "core/models/state_space_rnn.h"
#include "core/util/thread_pool.h"

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
  // Threads on which a solver may evaluate two trials side by side, in the
  // trial slots 0 and 1 of ValueBelowIn, between the problem's own calls
  // (the problem's pool); nullptr: one slot, one trial at a time. A problem
  // that returns a pool must override ValueBelowIn with slots that can run
  // at once.
  virtual ThreadPool* trial_pool() { return nullptr; }
  // ValueBelow in trial slot `slot`; calls for slots 0 and 1 may run at once
  // when trial_pool() is not null.
  virtual double ValueBelowIn(int slot, const Eigen::VectorXd& w,
                              double cutoff) {
    static_cast<void>(slot);
    return ValueBelow(w, cutoff);
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
// own accumulator; a single trace on two or more threads is split in time
// between two. With two or more threads a solver can also simulate two trials
// at once (trial_pool), the second into a tape set of its own.
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
  // With two or more threads: the second slot simulates into tapes of its
  // own, and the rows at a point either slot simulated completely start from
  // that simulation.
  ThreadPool* trial_pool() override { return pool_.get(); }
  double ValueBelowIn(int slot, const Eigen::VectorXd& w,
                      double cutoff) override;
  double NormalEquations(const Eigen::VectorXd& w, Eigen::MatrixXd* h,
                         Eigen::VectorXd* g) override;
  // Streaming Householder QR of the row blocks (a TSQR): R is updated with
  // each block, so memory stays O(n_p^2) as for the normal equations.
  double TriangularFactor(const Eigen::VectorXd& w, Eigen::MatrixXd* r,
                          Eigen::VectorXd* d) override;

 private:
  struct Worker {
    // rows holds a block of least-squares rows as columns (row width x
    // kRowBlock), so that each row is written contiguously.
    Eigen::MatrixXd h, rows, curv, grad;
    Eigen::VectorXd g, rhs;
    double loss = 0.0;
    bool qr = false;  // accumulate R, d (in h, g) instead of A^T A, A^T b
    Eigen::MatrixXd stack;
    Eigen::VectorXd stack_rhs;
  };
  // Folds rows [0, filled) into the worker's (h, g) or its QR factor.
  static void Fold(Worker* wk, const Eigen::MatrixXd& rows,
                   const Eigen::VectorXd& rhs, int filled);
  // Clears a worker for rows of `width` columns.
  static void Clear(int width, bool qr, Worker* wk);
  void StartAccumulation(bool qr);
  double Accumulate(const Eigen::VectorXd& w);
  // Simulates trace t unless `simulated` (tapes_[t] holds it), adds its loss
  // to wk->loss and sets wk->curv and wk->grad (l'' and l' per output and
  // step).
  void PrepareTrace(const Eigen::VectorXd& w, int t, bool simulated,
                    Worker* wk);
  // Folds the rows of steps [begin, end) of trace t (after PrepareTrace into
  // `loss_terms`) into wk, with the sensitivity scratch s (see
  // StateSpaceRnn::OutputJacobianSteps).
  void AddRows(const Eigen::VectorXd& w, int t, int begin, int end,
               const Worker& loss_terms, StateSpaceRnn::Sensitivities* s,
               Worker* wk);
  // One trace on two threads, split in time: steps [0, mid) into workers_[0]
  // as usual, steps [mid, end) into split_ with the sensitivities started at
  // a virtual free x_mid, then split_ is folded into workers_[0] through M_mid
  // (exact up to rounding: the sensitivity recursion is linear in M).
  void AccumulateSplit(const Eigen::VectorXd& w, bool simulated);
  void MergeSplit();
  // Simulates every trace at w into `tapes` while the loss so far plus a
  // lower bound of the rest stays at most the cutoff; returns whether all
  // were simulated, and *value (ValueBelow's result).
  bool SimulateBelow(const Eigen::VectorXd& w, double cutoff,
                     std::vector<StateSpaceRnn::Tape>* tapes,
                     double* value) const;
  // Whether a slot's tapes hold the simulation of every trace at w; the
  // second slot's are swapped into tapes_ when they do.
  bool UseSimulationAt(const Eigen::VectorXd& w);
  double Regularization(const Eigen::VectorXd& w) const;

  const StateSpaceRnn* rnn_;
  const std::vector<data::Trace>* traces_;
  Loss loss_;
  Eigen::VectorXd rho_;  // per-parameter L2 weight
  int threads_;
  // One trace and two threads: see AccumulateSplit.
  bool time_split_ = false;
  std::unique_ptr<ThreadPool> pool_;  // threads_ > 1 or time_split_
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
  // The second trial slot's tapes and point (empty: none complete).
  std::vector<StateSpaceRnn::Tape> spare_tapes_;
  Eigen::VectorXd spare_at_;
  // AccumulateSplit: the later part's accumulator and sensitivities, and
  // merge scratch.
  Worker split_;
  StateSpaceRnn::Sensitivities split_sens_;
  Eigen::MatrixXd embedded_, cross_;
};

}  // namespace sparrow::core

#endif  // SPARROW_CORE_OPTIM_GAUSS_NEWTON_LEAST_SQUARES_H_
