// The epoch loop the minibatch methods (SGD, Adam, RLS) share.
#ifndef SPARROW_CORE_OPTIM_INTERNAL_EPOCH_LOOP_H_
#define SPARROW_CORE_OPTIM_INTERNAL_EPOCH_LOOP_H_

#include <limits>

#include "Eigen/Core"
#include "core/optim/internal/run_monitor.h"
#include "core/optim/problem.h"
#include "core/optim/stop_rules.h"

namespace sparrow::core::internal {

// Runs optimizer.Step(objective, w) once per epoch until a stopping rule
// holds. Each epoch is reported with `step_size`, optimizer.Extras() and, for
// checkpoints, optimizer.PackState(); on divergence w is the last finite
// iterate. The summary's final loss is the full objective at the result.
template <typename Optimizer, typename Problem>
Summary RunEpochs(const StopRules& rules, double step_size,
                  Optimizer& optimizer, Problem& objective, Eigen::VectorXd* w,
                  IterationCallback* callback) {
  Summary summary;
  RunMonitor monitor(rules, callback, &summary);
  monitor.set_initial_is_first_epoch();
  Eigen::VectorXd state;  // reported with each record, for checkpoints
  if (callback != nullptr) monitor.set_state(&state);
  Eigen::VectorXd last_good = *w;
  double previous = std::numeric_limits<double>::infinity();
  for (int epoch = 1;; ++epoch) {
    const double loss = optimizer.Step(objective, w);
    if (epoch == 1) summary.initial_loss = loss;
    if (callback != nullptr) optimizer.PackState(&state);
    const auto stop = monitor.EndIteration(epoch, previous, loss, step_size, *w,
                                           optimizer.Extras());
    if (stop == Termination::kDiverged) *w = last_good;
    if (stop) {
      monitor.Finish(*stop);
      break;
    }
    last_good = *w;
    previous = loss;
  }
  summary.final_loss = objective.Evaluate(*w, nullptr);
  return summary;
}

}  // namespace sparrow::core::internal

#endif  // SPARROW_CORE_OPTIM_INTERNAL_EPOCH_LOOP_H_
