// Fit and sparsity metrics (ALGORITHMS.md §0). Samples are columns;
// multi-output metrics pool all outputs.
#ifndef SPARROW_CORE_METRICS_METRICS_H_
#define SPARROW_CORE_METRICS_METRICS_H_

#include "Eigen/Core"

namespace sparrow::core {

// sqrt(mean((y - yhat)^2)).
double Rmse(const Eigen::Ref<const Eigen::MatrixXd>& y,
            const Eigen::Ref<const Eigen::MatrixXd>& yhat);
// RMSE divided by the standard deviation of y (per output, then averaged).
double Nrmse(const Eigen::Ref<const Eigen::MatrixXd>& y,
             const Eigen::Ref<const Eigen::MatrixXd>& yhat);
// Best fit rate 100 (1 - ||y - yhat|| / ||y - mean(y)||), per output, averaged
// over outputs. NaN (not measured) when an output is constant over the
// samples (one sample, say): the ratio is undefined there, not -Inf.
double Bfr(const Eigen::Ref<const Eigen::MatrixXd>& y,
           const Eigen::Ref<const Eigen::MatrixXd>& yhat);
// Percent correct. Binary outputs (multiclass false): every output is
// thresholded at 0.5 (yhat is a probability) and each output of each sample
// counts once. Multiclass: y is one-hot and the argmax of each column of yhat
// is the prediction.
double Accuracy(const Eigen::Ref<const Eigen::MatrixXd>& y,
                const Eigen::Ref<const Eigen::MatrixXd>& yhat, bool multiclass);

struct Sparsity {
  double zero_pct = 0.0;       // % of entries exactly zero (Bemporad)
  double remaining_pct = 0.0;  // % nonzero (SBDL Table 2)
  int zeros = 0;
  int total = 0;
};
Sparsity ComputeSparsity(const Eigen::Ref<const Eigen::VectorXd>& params);

}  // namespace sparrow::core

#endif  // SPARROW_CORE_METRICS_METRICS_H_
