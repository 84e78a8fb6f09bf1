#include "core/metrics/metrics.h"

#include <cmath>
#include <limits>

namespace sparrow::core {

double Rmse(const Eigen::Ref<const Eigen::MatrixXd>& y,
            const Eigen::Ref<const Eigen::MatrixXd>& yhat) {
  if (y.size() == 0) return std::numeric_limits<double>::quiet_NaN();
  return std::sqrt((y - yhat).squaredNorm() / static_cast<double>(y.size()));
}

double Nrmse(const Eigen::Ref<const Eigen::MatrixXd>& y,
             const Eigen::Ref<const Eigen::MatrixXd>& yhat) {
  if (y.cols() == 0) return std::numeric_limits<double>::quiet_NaN();
  double sum = 0.0;
  for (Eigen::Index i = 0; i < y.rows(); ++i) {
    const double sd =
        std::sqrt((y.row(i).array() - y.row(i).mean()).square().mean());
    sum += Rmse(y.row(i), yhat.row(i)) / sd;
  }
  return sum / static_cast<double>(y.rows());
}

double Bfr(const Eigen::Ref<const Eigen::MatrixXd>& y,
           const Eigen::Ref<const Eigen::MatrixXd>& yhat) {
  if (y.cols() == 0) return std::numeric_limits<double>::quiet_NaN();
  double sum = 0.0;
  for (Eigen::Index i = 0; i < y.rows(); ++i) {
    const double err = (y.row(i) - yhat.row(i)).norm();
    const double spread = (y.row(i).array() - y.row(i).mean()).matrix().norm();
    if (spread == 0.0) return std::numeric_limits<double>::quiet_NaN();
    sum += 100.0 * (1.0 - err / spread);
  }
  return sum / static_cast<double>(y.rows());
}

double Accuracy(const Eigen::Ref<const Eigen::MatrixXd>& y,
                const Eigen::Ref<const Eigen::MatrixXd>& yhat,
                bool multiclass) {
  if (y.cols() == 0) return std::numeric_limits<double>::quiet_NaN();
  if (!multiclass) {
    const auto truth = (y.array() >= 0.5);
    const auto guess = (yhat.array() >= 0.5);
    return 100.0 * static_cast<double>((truth == guess).count()) /
           static_cast<double>(y.size());
  }
  int correct = 0;
  for (Eigen::Index j = 0; j < y.cols(); ++j) {
    Eigen::Index truth, guess;
    y.col(j).maxCoeff(&truth);
    yhat.col(j).maxCoeff(&guess);
    correct += truth == guess;
  }
  return 100.0 * correct / static_cast<double>(y.cols());
}

Sparsity ComputeSparsity(const Eigen::Ref<const Eigen::VectorXd>& params) {
  Sparsity s;
  s.total = static_cast<int>(params.size());
  s.zeros = static_cast<int>((params.array() == 0.0).count());
  if (s.total > 0) {
    s.zero_pct = 100.0 * s.zeros / s.total;
    s.remaining_pct = 100.0 - s.zero_pct;
  }
  return s;
}

}  // namespace sparrow::core
