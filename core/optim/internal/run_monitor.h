// Shared bookkeeping of an iterative run: wall clock, progress cadence, the
// callback, and the stopping predicates common to every method. Each optimizer
// owns one per Minimize call.
#ifndef SPARROW_CORE_OPTIM_INTERNAL_RUN_MONITOR_H_
#define SPARROW_CORE_OPTIM_INTERNAL_RUN_MONITOR_H_

#include <chrono>
#include <cmath>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/optim/problem.h"
#include "core/optim/stop_rules.h"

namespace sparrow::core::internal {

class RunMonitor {
 public:
  // allow_non_finite: record a non-finite loss instead of stopping with
  // kDiverged (ADMM, whose reported model nu may be briefly unstable while
  // theta is fine). The tolerance test is the absolute one of StopRules.
  RunMonitor(const StopRules& rules, IterationCallback* callback,
             Summary* summary, bool allow_non_finite = false)
      : rules_(rules),
        allow_non_finite_(allow_non_finite),
        callback_(callback),
        summary_(summary),
        start_(std::chrono::steady_clock::now()),
        stall_reference_(rules.stall_reference),
        stall_since_(rules.stall_since) {
    summary_->resumed = std::isfinite(rules.resume_loss);
  }

  // Wall time since the start (what max_seconds bounds).
  double Elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start_)
        .count();
  }
  // The optimizer's own time: Elapsed() less the time spent in the callback
  // (validation and test metrics, checkpoints, events), what records and the
  // summary report.
  double OptimizerSeconds() const { return Elapsed() - callback_seconds_; }

  // Records iteration `it` that moved the objective from `previous` to `loss`.
  // Returns the termination reason when the run must stop, std::nullopt to
  // continue.
  std::optional<Termination> EndIteration(
      int it, double previous, double loss, double step,
      const Eigen::VectorXd& params,
      std::vector<std::pair<std::string, double>> extras = {}) {
    summary_->iterations = it;
    summary_->final_loss = loss;
    // A resumed run's first iteration goes on from the checkpoint's loss, as
    // the uninterrupted run does (a minibatch epoch's loss cannot be redone).
    if (it == 1 && std::isfinite(rules_.resume_loss)) {
      previous = rules_.resume_loss;
    }
    if (!std::isfinite(loss) && !allow_non_finite_) {
      summary_->message = absl::StrFormat(
          "the loss became %s at iteration %d; try a smaller learning rate or "
          "step, or "
          "normalized data",
          std::isnan(loss) ? "NaN" : "Inf", it);
      return Termination::kDiverged;
    }
    const bool last = it >= rules_.max_iterations;
    const bool converged = rules_.tolerance > 0.0 && std::isfinite(previous) &&
                           std::abs(previous - loss) <= rules_.tolerance;
    const bool deadline =
        rules_.max_seconds > 0.0 && Elapsed() >= rules_.max_seconds;
    std::optional<Termination> stop;
    if (Stalled(previous, loss)) stop = Termination::kStalled;
    // A first iteration that moved nothing would pass the absolute tolerance
    // as converged; it is a stall at the start.
    const bool dead_start = DeadStart(it, previous, loss);
    if (converged && !dead_start) stop = Termination::kConverged;
    if (dead_start) stop = Termination::kStalled;
    if (deadline) stop = Termination::kDeadline;
    if (last && !stop) stop = Termination::kMaxIterations;
    if (stop == Termination::kStalled) {
      summary_->message =
          dead_start ? DeadStartMessage(previous, loss) : StallMessage();
    }
    const int every = rules_.report_every > 0 ? rules_.report_every : 1;
    if (it % every == 0 || stop) {
      IterationRecord r;
      r.iteration = it;
      r.elapsed_seconds = OptimizerSeconds();
      r.loss = loss;
      r.step_size = step;
      r.params = &params;
      r.optimizer_state = state_;
      r.stall_reference = stall_reference_;
      r.stall_since = stall_since_;
      r.extras = std::move(extras);
      CallbackResult answer = CallbackResult::kContinue;
      if (callback_ != nullptr) {
        const double before = Elapsed();
        answer = callback_->OnIteration(&r);
        callback_seconds_ += Elapsed() - before;
      }
      r.params = nullptr;
      r.optimizer_state = nullptr;
      r.best_params = nullptr;
      summary_->history.push_back(r);
      // An abort at the last iteration comes too late: the run has ended.
      if (answer == CallbackResult::kAbort && !stop) {
        return Termination::kUserAbort;
      }
      if (answer == CallbackResult::kFinish && !stop)
        stop = Termination::kEarlyStopped;
    }
    return stop;
  }

  // For methods whose initial loss is their first epoch's mean minibatch loss
  // (taken while that epoch trained): a run of one epoch then has nothing to
  // compare it with, and Finish says nothing about its progress.
  void set_initial_is_first_epoch() { initial_is_first_epoch_ = true; }

  // What later records expose as IterationRecord::optimizer_state (must stay
  // valid; updated in place by the caller before each EndIteration).
  void set_state(const Eigen::VectorXd* state) { state_ = state; }

  // Ends the run. A run that otherwise ended well but lowered its loss by
  // less than kLittleProgress of where it started says so: the model has
  // learned next to nothing, which no termination name shows.
  void Finish(Termination t) {
    summary_->termination = t;
    summary_->seconds = OptimizerSeconds();
    const double first = summary_->initial_loss;
    const double last = summary_->final_loss;
    const bool ended_well =
        t == Termination::kConverged || t == Termination::kMaxIterations ||
        t == Termination::kDeadline || t == Termination::kEarlyStopped;
    const bool nothing_to_compare =
        initial_is_first_epoch_ && summary_->iterations < 2;
    if (!ended_well || nothing_to_compare || !std::isfinite(first) ||
        !std::isfinite(last) || !(first > 0) ||
        last < (1.0 - kLittleProgress) * first ||
        std::isfinite(rules_.resume_loss)) {
      return;
    }
    const std::string change = absl::StrFormat(
        "the loss %s %.3g %% over the run (from %.6g to %.6g at the last "
        "iteration)",
        last > first ? "rose by" : "fell by only",
        100.0 * std::abs(first - last) / first, first, last);
    summary_->message = absl::StrCat(
        summary_->message, summary_->message.empty() ? "" : "; ", change,
        rules_.warm_start
            ? absl::StrCat(
                  " from the model it started from (a warm start): training "
                  "on added nothing",
                  last > first ? "; a smaller learning rate or step may keep "
                                 "what that model had learned"
                               : "")
        : last > kManyTimes * first
            ? absl::StrCat(": the steps are far too large for this "
                           "problem; try a smaller learning rate or step")
            : absl::StrCat(": the model has learned next to nothing. ",
                           kWhatToTry));
  }

 private:
  // The stall test after an iteration from `previous` to `loss`.
  bool Stalled(double previous, double loss) {
    if (rules_.stall_window <= 0 || !std::isfinite(loss)) return false;
    if (!std::isfinite(stall_reference_)) {
      stall_reference_ = std::isfinite(previous) ? previous : loss;
    }
    // Any move beyond the band, down or up (a first-order method's
    // transient spike), restarts the count.
    if (std::abs(loss - stall_reference_) >
        kStallRelative * std::abs(stall_reference_)) {
      stall_reference_ = loss;
      stall_since_ = 0;
      return false;
    }
    return ++stall_since_ >= rules_.stall_window;
  }
  std::string StallMessage() const {
    return absl::StrFormat(
        "the loss stayed within a relative %g of %.6g for the last %d "
        "iterations (stopping.stall_epochs; -1 = off). If the fit is poor: %s",
        kStallRelative, stall_reference_, stall_since_, kWhatToTry);
  }
  // The first iteration of a run (not of a resume), with stall detection on,
  // moved the loss by at most a relative kStallRelative.
  bool DeadStart(int it, double previous, double loss) const {
    const bool resumed = std::isfinite(rules_.resume_loss) ||
                         std::isfinite(rules_.stall_reference);
    return it == 1 && rules_.stall_window > 0 && !resumed &&
           std::isfinite(previous) &&
           std::abs(previous - loss) <= kStallRelative * std::abs(previous);
  }
  static std::string DeadStartMessage(double previous, double loss) {
    return absl::StrFormat(
        "the first iteration moved the loss from %.6g to %.6g (a relative "
        "%.3g): nothing moves from the starting point, or it is a minimum "
        "already (a warm start from a converged model). %s",
        previous, loss,
        previous != 0 ? std::abs(previous - loss) / std::abs(previous) : 0.0,
        kWhatToTry);
  }

  // Less than this fraction of the initial loss gained over a whole run is
  // reported (Finish).
  static constexpr double kLittleProgress = 1e-3;
  // A loss that ended this many times higher than it started was driven up
  // by the steps, not stuck at the initialization.
  static constexpr double kManyTimes = 10.0;
  static constexpr const char* kWhatToTry =
      "Check the data's normalization and init_scale (too small, or "
      "saturating activations); try another seed, a linear part for a "
      "state_space_rnn (\"linear\": true), subsequences for a long record "
      "(state_space_rnn.subsequence_length), or another optimizer";

  StopRules rules_;
  bool allow_non_finite_;
  IterationCallback* callback_;
  Summary* summary_;
  std::chrono::steady_clock::time_point start_;
  double callback_seconds_ = 0.0;
  const Eigen::VectorXd* state_ = nullptr;
  double stall_reference_;
  int stall_since_;
  bool initial_is_first_epoch_ = false;
};

}  // namespace sparrow::core::internal

#endif  // SPARROW_CORE_OPTIM_INTERNAL_RUN_MONITOR_H_
