// Training objectives: a model, its data and its loss turned into an Objective
// the optimizers minimize. All use the same scaling,
//   V(w) = (1/N) [ sum_k l(y_k, yhat_k) + rho_x0/2 |x0|^2 + rho_theta/2
//   |theta|^2 ],
// with N the number of predicted training samples; minibatch values estimate V.
//
// Not thread-safe: each run owns its objective (the models inside are shared
// read-only).
#ifndef SPARROW_CORE_TRAIN_OBJECTIVES_H_
#define SPARROW_CORE_TRAIN_OBJECTIVES_H_

#include <map>
#include <vector>

#include "Eigen/Core"
#include "core/data/dataset.h"
#include "core/data/narx.h"
#include "core/losses/loss.h"
#include "core/models/mlp.h"
#include "core/models/state_space_rnn.h"
#include "core/optim/problem.h"
#include "core/optim/sbdl/sbdl.h"

namespace sparrow::core {

// A minibatch of m of the n training samples, whose loss sum is loss_sum and
// whose gradient sum is in *grad: scales both to estimate V(w) and adds the
// batch's share of rho_theta/2 |w|^2. +Inf for a non-finite value.
double MinibatchEstimate(double loss_sum, int m, int n, double rho_theta,
                         const Eigen::VectorXd& w, Eigen::VectorXd* grad);

// An MLP on columns of x (inputs x N) with targets y (outputs x N); also the
// one-step NARX objective on regressors. batch_size 0 = full batch. Provides
// the diagonal curvature SBDL needs.
class TableObjective : public SbdlObjective {
 public:
  TableObjective(const Mlp* mlp, const Eigen::MatrixXd* x,
                 const Eigen::MatrixXd* y, Loss loss, double rho_theta,
                 int batch_size, bool shuffle);

  int num_params() const override { return mlp_->num_params(); }
  int num_batches() const override { return num_batches_; }
  double Evaluate(const Eigen::VectorXd& w, Eigen::VectorXd* grad) override;
  void StartEpoch(const Eigen::VectorXd& w, Rng* rng) override;
  double EvaluateBatch(const Eigen::VectorXd& w, int batch,
                       Eigen::VectorXd* grad) override;
  int num_samples() const override { return static_cast<int>(x_->cols()); }
  void OutputJacobianSquares(const Eigen::VectorXd& w,
                             Eigen::VectorXd* s) override;
  void DiagonalGgn(const Eigen::VectorXd& w, Eigen::VectorXd* h) override;
  double MeanSquaredResidual(const Eigen::VectorXd& w) override;
  double MeanSquaredResidualFromLoss(double loss,
                                     const Eigen::VectorXd& w) const override;

 private:
  // Loss sum and (optionally) gradient over the columns [begin, end) of (x, y).
  double Accumulate(const Eigen::VectorXd& w, const Eigen::MatrixXd& x,
                    const Eigen::MatrixXd& y, int begin, int end,
                    Eigen::VectorXd* grad);

  const Mlp* mlp_;
  const Eigen::MatrixXd* x_;
  const Eigen::MatrixXd* y_;
  Loss loss_;
  double rho_theta_;
  int batch_size_;
  bool shuffle_;
  int num_batches_;
  std::vector<int> order_;
  Eigen::MatrixXd x_shuffled_, y_shuffled_, d_out_, curv_;
  std::map<int, Mlp::Cache>
      caches_;  // one per batch width, so no reallocation per batch
};

// A NARX model trained on its free-run simulation error (output error): the
// regressors read the model's own past outputs, and the gradient is
// backpropagated through that feedback over each whole trace. Full batch.
// SBDL's curvature and sigma^2 use the one-step (teacher-forced) network on
// the measured regressors, an approximation that ignores the feedback.
class NarxSimulationObjective : public SbdlObjective {
 public:
  // traces in normalized units; one_step: the one-step objective on the same
  // data (for the curvature), not owned.
  NarxSimulationObjective(const Mlp* mlp, const data::NarxLags& lags,
                          const std::vector<data::Trace>* traces, Loss loss,
                          double rho_theta, TableObjective* one_step);

  int num_params() const override { return mlp_->num_params(); }
  double Evaluate(const Eigen::VectorXd& w, Eigen::VectorXd* grad) override;
  int num_samples() const override { return num_samples_; }
  void OutputJacobianSquares(const Eigen::VectorXd& w,
                             Eigen::VectorXd* s) override {
    one_step_->OutputJacobianSquares(w, s);
  }
  void DiagonalGgn(const Eigen::VectorXd& w, Eigen::VectorXd* h) override {
    one_step_->DiagonalGgn(w, h);
  }
  // The free-run residual: the noise the simulation model has to explain.
  double MeanSquaredResidual(const Eigen::VectorXd& w) override;
  double MeanSquaredResidualFromLoss(double loss,
                                     const Eigen::VectorXd& w) const override;

 private:
  // Loss sum of trace i, adding its gradient when grad is set.
  double Trace(const Eigen::VectorXd& w, size_t i, Eigen::VectorXd* grad);

  const Mlp* mlp_;
  data::NarxLags lags_;
  const std::vector<data::Trace>* traces_;
  Loss loss_;
  double rho_theta_;
  TableObjective* one_step_;
  int num_samples_ = 0;
  std::vector<Mlp::Cache> caches_;  // one per trace
  Eigen::MatrixXd yhat_, d_out_, adjoint_;
  Eigen::VectorXd d_in_;
};

// A state-space RNN on several traces: full BPTT (bptt_window 0) or truncated
// BPTT over windows of bptt_window steps, each started from the state of a
// nominal simulation at the epoch start.
class SequenceObjective : public Objective {
 public:
  SequenceObjective(const StateSpaceRnn* rnn,
                    const std::vector<data::Trace>* traces, Loss loss,
                    double rho_x0, double rho_theta, int bptt_window,
                    bool shuffle);

  int num_params() const override { return rnn_->num_params(); }
  // Full BPTT is one batch over all traces; truncated BPTT one batch per
  // window.
  int num_batches() const override {
    return bptt_window_ > 0 ? static_cast<int>(windows_.size()) : 1;
  }
  double Evaluate(const Eigen::VectorXd& w, Eigen::VectorXd* grad) override;
  void StartEpoch(const Eigen::VectorXd& w, Rng* rng) override;
  double EvaluateBatch(const Eigen::VectorXd& w, int batch,
                       Eigen::VectorXd* grad) override;
  int num_samples() const { return num_samples_; }

 private:
  struct Window {
    int trace = 0;
    int offset = 0;  // steps after the warmup
    int steps = 0;
  };
  double Regularization(const Eigen::VectorXd& w, Eigen::VectorXd* grad,
                        double scale) const;
  // Loss sum of one simulated tape against trace t, adding its gradient when
  // grad is set. Windows after the first (offset > 0) start from a detached
  // state and give no x0 gradient.
  double LossAndBackward(const Eigen::VectorXd& w, int trace, int offset,
                         StateSpaceRnn::Tape* tape, Eigen::VectorXd* grad);

  const StateSpaceRnn* rnn_;
  const std::vector<data::Trace>* traces_;
  Loss loss_;
  double rho_x0_, rho_theta_;
  int bptt_window_;
  bool shuffle_;
  int num_samples_ = 0;
  std::vector<Window> windows_;
  std::vector<StateSpaceRnn::Tape> tapes_;  // one per trace: nominal simulation
  StateSpaceRnn::Tape window_tape_;
  Eigen::MatrixXd d_out_;
};

}  // namespace sparrow::core

#endif  // SPARROW_CORE_TRAIN_OBJECTIVES_H_
