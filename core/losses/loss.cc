#include "core/losses/loss.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

namespace sparrow::core {
namespace {

// Plain cross-entropy (epsilon = 0) evaluates log(yhat); keep yhat inside (0,1)
// so a saturated sigmoid gives a large finite loss instead of Inf.
constexpr double kProbabilityFloor = 1e-15;

double Clamp01(double p, double eps) {
  if (eps > 0.0) return p;
  return std::clamp(p, kProbabilityFloor, 1.0 - kProbabilityFloor);
}

// Column-wise softmax, shifted by the maximum for stability.
Eigen::VectorXd Softmax(const Eigen::Ref<const Eigen::VectorXd>& logits) {
  Eigen::VectorXd p = (logits.array() - logits.maxCoeff()).exp();
  return p / p.sum();
}

}  // namespace

absl::string_view LossName(LossKind kind) {
  switch (kind) {
    case LossKind::kMse:
      return "mse";
    case LossKind::kBinaryCrossEntropy:
      return "binary_cross_entropy";
    case LossKind::kSoftmaxCrossEntropy:
      return "softmax_cross_entropy";
  }
  return "unknown";
}

absl::StatusOr<LossKind> ParseLoss(absl::string_view name) {
  for (LossKind k : {LossKind::kMse, LossKind::kBinaryCrossEntropy,
                     LossKind::kSoftmaxCrossEntropy}) {
    if (LossName(k) == name) return k;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown loss '", name,
      "'; use mse, binary_cross_entropy or softmax_cross_entropy"));
}

absl::Status Loss::Validate() const {
  if (!(epsilon >= 0.0 && epsilon < 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("loss.epsilon is ", epsilon, "; it must be in [0, 1)"));
  }
  if (one_hot && kind != LossKind::kMse) {
    return absl::InvalidArgumentError(
        "loss.one_hot_targets applies to LOSS_MSE only (softmax cross-entropy "
        "always takes one-hot targets); remove it");
  }
  return absl::OkStatus();
}

double Loss::Value(const Eigen::Ref<const Eigen::MatrixXd>& y,
                   const Eigen::Ref<const Eigen::MatrixXd>& yhat) const {
  switch (kind) {
    case LossKind::kMse:
      return (yhat - y).squaredNorm();
    case LossKind::kBinaryCrossEntropy: {
      double sum = 0.0;
      for (Eigen::Index j = 0; j < y.cols(); ++j) {
        for (Eigen::Index i = 0; i < y.rows(); ++i) {
          const double p = Clamp01(yhat(i, j), epsilon);
          sum -= y(i, j) * std::log(epsilon + p) +
                 (1.0 - y(i, j)) * std::log(1.0 + epsilon - p);
        }
      }
      return sum;
    }
    case LossKind::kSoftmaxCrossEntropy: {
      double sum = 0.0;
      for (Eigen::Index j = 0; j < y.cols(); ++j) {
        const double m = yhat.col(j).maxCoeff();
        const double log_z =
            m + std::log((yhat.col(j).array() - m).exp().sum());
        sum += y.col(j).sum() * log_z - y.col(j).dot(yhat.col(j));
      }
      return sum;
    }
  }
  return 0.0;
}

double Loss::LowerBoundPerElement(
    const Eigen::Ref<const Eigen::MatrixXd>& y) const {
  if (kind == LossKind::kMse) return 0.0;
  if (y.size() > 0 && (y.minCoeff() < 0.0 || y.maxCoeff() > 1.0)) {
    return -std::numeric_limits<double>::infinity();
  }
  // Both logarithms of the modified form are at most log(1 + eps), and their
  // weights y and 1 - y are non-negative and sum to 1.
  return kind == LossKind::kBinaryCrossEntropy ? -std::log1p(epsilon) : 0.0;
}

void Loss::Gradient(const Eigen::Ref<const Eigen::MatrixXd>& y,
                    const Eigen::Ref<const Eigen::MatrixXd>& yhat,
                    Eigen::Ref<Eigen::MatrixXd> grad) const {
  switch (kind) {
    case LossKind::kMse:
      grad = 2.0 * (yhat - y);
      return;
    case LossKind::kBinaryCrossEntropy:
      for (Eigen::Index j = 0; j < y.cols(); ++j) {
        for (Eigen::Index i = 0; i < y.rows(); ++i) {
          const double p = Clamp01(yhat(i, j), epsilon);
          grad(i, j) =
              -y(i, j) / (epsilon + p) + (1.0 - y(i, j)) / (1.0 + epsilon - p);
        }
      }
      return;
    case LossKind::kSoftmaxCrossEntropy:
      for (Eigen::Index j = 0; j < y.cols(); ++j) {
        grad.col(j) = y.col(j).sum() * Softmax(yhat.col(j)) - y.col(j);
      }
      return;
  }
}

void Loss::Curvature(const Eigen::Ref<const Eigen::MatrixXd>& y,
                     const Eigen::Ref<const Eigen::MatrixXd>& yhat,
                     Eigen::Ref<Eigen::MatrixXd> curv) const {
  switch (kind) {
    case LossKind::kMse:
      curv.setConstant(2.0);
      return;
    case LossKind::kBinaryCrossEntropy:
      for (Eigen::Index j = 0; j < y.cols(); ++j) {
        for (Eigen::Index i = 0; i < y.rows(); ++i) {
          const double p = Clamp01(yhat(i, j), epsilon);
          const double a = epsilon + p;
          const double b = 1.0 + epsilon - p;
          curv(i, j) = y(i, j) / (a * a) + (1.0 - y(i, j)) / (b * b);
        }
      }
      return;
    case LossKind::kSoftmaxCrossEntropy:
      for (Eigen::Index j = 0; j < y.cols(); ++j) {
        const Eigen::VectorXd p = Softmax(yhat.col(j));
        curv.col(j) = y.col(j).sum() * (p.array() * (1.0 - p.array())).matrix();
      }
      return;
  }
}

Eigen::MatrixXd Loss::SampleHessian(
    const Eigen::Ref<const Eigen::VectorXd>& y,
    const Eigen::Ref<const Eigen::VectorXd>& yhat) const {
  if (kind == LossKind::kSoftmaxCrossEntropy) {
    const Eigen::VectorXd p = Softmax(yhat);
    Eigen::MatrixXd h = -p * p.transpose();
    h.diagonal() += p;
    return y.sum() * h;
  }
  Eigen::MatrixXd c(y.size(), 1);
  Curvature(y, yhat, c);
  return c.col(0).asDiagonal();
}

}  // namespace sparrow::core
