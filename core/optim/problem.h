// The function concept every Sparrow optimizer minimizes, and how a run reports
// to the outside.
//
// Follows ensmallen's separable-function shape (Evaluate / EvaluateBatch) and
// Ceres' Summary and IterationCallback: not converging is an outcome recorded
// in the Summary, never an error.
#ifndef SPARROW_CORE_OPTIM_PROBLEM_H_
#define SPARROW_CORE_OPTIM_PROBLEM_H_

#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "Eigen/Core"
#include "core/util/random.h"

namespace sparrow::core {

// A differentiable objective, optionally split into minibatches.
// Implementations return +Inf (never NaN) when the model produces non-finite
// values, so that a line search rejects the point.
class Objective {
 public:
  virtual ~Objective() = default;
  virtual int num_params() const = 0;
  // Value and, when grad is not null, gradient of the full objective.
  virtual double Evaluate(const Eigen::VectorXd& w, Eigen::VectorXd* grad) = 0;
  // Number of minibatches per epoch (1 = full batch).
  virtual int num_batches() const { return 1; }
  // Called before every epoch: reshuffle minibatches, refresh truncated-BPTT
  // start states. The epoch's batch order must depend on rng's draws only
  // (shuffle the canonical order, not the last epoch's), so that a run
  // resumed at an epoch boundary with the epoch's rng reproduces the
  // uninterrupted one.
  virtual void StartEpoch(const Eigen::VectorXd& /*w*/, Rng* /*rng*/) {}
  // Value and gradient of minibatch b, scaled so that it estimates the full
  // objective.
  virtual double EvaluateBatch(const Eigen::VectorXd& w, int /*batch*/,
                               Eigen::VectorXd* grad) {
    return Evaluate(w, grad);
  }
};

enum class Termination {
  kConverged,          // a tolerance test held
  kMaxIterations,      // the epoch budget ran out
  kDeadline,           // the wall-clock budget ran out
  kLineSearchFailure,  // no acceptable step along the search direction
  kDiverged,           // the objective became NaN/Inf
  kEarlyStopped,  // the callback asked to finish (e.g. validation patience)
  kUserAbort,     // the callback asked to abort (cancellation)
  kStalled,       // the loss stopped falling (StopRules::stall_window)
};
const char* TerminationName(Termination t);

// One progress record, emitted every `report_every` iterations and at the end.
struct IterationRecord {
  int iteration = 0;  // epochs for first-order and Gauss-Newton methods
  // The optimizer's time since the start: wall time less the time spent in
  // the callback (validation, test metrics, checkpoints, events).
  double elapsed_seconds = 0.0;
  double loss = std::numeric_limits<double>::quiet_NaN();  // training objective
  double step_size = std::numeric_limits<double>::quiet_NaN();
  double validation_metric =
      std::numeric_limits<double>::quiet_NaN();  // set by the callback
  double sparsity_pct = std::numeric_limits<double>::quiet_NaN();
  const Eigen::VectorXd* params =
      nullptr;  // the current iterate, valid during the call only
  // The method's internal state needed to resume exactly where it is (Adam's
  // moments and step count), valid during the call only; null when the
  // iterate and step_size are all there is to it.
  const Eigen::VectorXd* optimizer_state = nullptr;
  // Set by the trainer when it tracks validation data: the best iterate so
  // far (valid during the call only), its metric and the reports since. A
  // checkpoint keeps them, so that a resumed run ends with the same model.
  const Eigen::VectorXd* best_params = nullptr;
  double best_validation_metric = std::numeric_limits<double>::infinity();
  int reports_since_best = 0;
  // The stall test's reference and the iterations since (StopRules), for a
  // checkpoint.
  double stall_reference = std::numeric_limits<double>::quiet_NaN();
  int stall_since = 0;
  // A multi-stage run (core/train/stages.h): the stage (0-based) and the
  // iteration and optimizer seconds, on this run's clock, at which it started
  // (negative for a stage resumed part-way), for a checkpoint.
  int stage = 0;
  int stage_start_iteration = 0;
  double stage_start_seconds = 0.0;
  // Not an iteration: the record a multi-stage run makes between two stages,
  // with the next stage's starting point (params) and no loss, so that a
  // checkpoint of it resumes that stage from its start. Progress displays
  // skip it.
  bool stage_start = false;
  // Method-specific quantities, e.g. ADMM's primal and dual residuals.
  std::vector<std::pair<std::string, double>> extras;
};

enum class CallbackResult { kContinue, kFinish, kAbort };

// How the outside world watches and steers a run. The optimizer does not own
// it.
class IterationCallback {
 public:
  virtual ~IterationCallback() = default;
  // May fill record->validation_metric. kFinish ends the run successfully,
  // kAbort cancels it.
  virtual CallbackResult OnIteration(IterationRecord* record) = 0;
};

struct Summary {
  Termination termination = Termination::kMaxIterations;
  std::string message;
  int iterations = 0;
  double initial_loss = std::numeric_limits<double>::quiet_NaN();
  double final_loss = std::numeric_limits<double>::quiet_NaN();
  // A run resumed from a checkpoint: initial_loss is the checkpoint's loss,
  // not the loss where the whole run started.
  bool resumed = false;
  double seconds = 0.0;  // the optimizer's time, as elapsed_seconds
  std::vector<IterationRecord> history;  // params pointers cleared
  // One line: method-independent outcome, e.g. "converged after 120 epochs:
  // loss 0.31 -> 0.012".
  std::string BriefReport() const;
};

}  // namespace sparrow::core

#endif  // SPARROW_CORE_OPTIM_PROBLEM_H_
