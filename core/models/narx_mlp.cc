#include "core/models/narx_mlp.h"

#include <cassert>

namespace sparrow::core {

NarxMlp::NarxMlp(const data::NarxLags& lags, int nu, int ny,
                 const MlpSpec& network)
    : lags_(lags), mlp_(network) {
  assert(network.inputs == lags.dimension(nu, ny) && network.outputs == ny);
  (void)nu;  // only the assertion reads them: NDEBUG builds have none
  (void)ny;
}

Eigen::MatrixXd NarxMlp::PredictOneStep(const double* theta,
                                        const Eigen::MatrixXd& u,
                                        const Eigen::MatrixXd& y) const {
  const int first = lags_.max_lag();
  const int n = static_cast<int>(u.cols()) - first;
  Eigen::MatrixXd z(mlp_.inputs(), n);
  for (int t = first; t < u.cols(); ++t) {
    data::FillNarxRegressor(lags_, u, y, t, z.col(t - first));
  }
  Mlp::Cache cache;
  mlp_.Forward(theta, z, &cache);  // the Mlp's: with its linear term
  return cache.output();
}

Eigen::MatrixXd NarxMlp::Simulate(const double* theta, const Eigen::MatrixXd& u,
                                  const Eigen::MatrixXd& y) const {
  Eigen::MatrixXd sim = y;
  Mlp::Cache cache;
  cache.Resize(mlp_, 1);
  for (int t = lags_.max_lag(); t < u.cols(); ++t) {
    data::FillNarxRegressor(lags_, u, sim, t, cache.input().col(0));
    mlp_.ForwardColumn(theta, 0, &cache);
    sim.col(t) = cache.output().col(0);
  }
  return sim;
}

}  // namespace sparrow::core
