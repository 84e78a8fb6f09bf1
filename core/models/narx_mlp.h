// NARX model: an MLP on the regressor z(t) = [u(t)?, u(t-1..t-na),
// y(t-1..t-nb)] (ALGORITHMS.md §1.1), used one-step-ahead (measured past
// outputs) or in free-run simulation (the model's own past outputs). The first
// max_lag samples of a trace are history only and are taken from the measured
// outputs.
//
// Immutable after construction and safe to share between threads.
#ifndef SPARROW_CORE_MODELS_NARX_MLP_H_
#define SPARROW_CORE_MODELS_NARX_MLP_H_

#include "Eigen/Core"
#include "core/data/narx.h"
#include "core/models/mlp.h"

namespace sparrow::core {

class NarxMlp {
 public:
  NarxMlp() = default;
  // network.inputs must equal lags.dimension(nu, ny) and network.outputs ny.
  NarxMlp(const data::NarxLags& lags, int nu, int ny, const MlpSpec& network);

  const Mlp& network() const { return mlp_; }
  const data::NarxLags& lags() const { return lags_; }
  int num_params() const { return mlp_.num_params(); }

  // One-step-ahead predictions for t = max_lag..N-1 of one trace (ny x (N -
  // max_lag)). u: nu x N, y: ny x N measured outputs. Requires N > max_lag.
  Eigen::MatrixXd PredictOneStep(const double* theta, const Eigen::MatrixXd& u,
                                 const Eigen::MatrixXd& y) const;
  // Free-run simulation: ny x N, columns < max_lag copied from y, the rest
  // simulated.
  Eigen::MatrixXd Simulate(const double* theta, const Eigen::MatrixXd& u,
                           const Eigen::MatrixXd& y) const;

 private:
  data::NarxLags lags_;
  Mlp mlp_;
};

}  // namespace sparrow::core

#endif  // SPARROW_CORE_MODELS_NARX_MLP_H_
