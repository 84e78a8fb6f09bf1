// Per-sample losses l(y, yhat) with their first and second derivatives in yhat.
//
// Samples are columns. Separable losses (MSE, binary cross-entropy) act
// elementwise, so l' and l'' are matrices of the outputs' shape. Softmax
// cross-entropy takes logits and one-hot targets; its Hessian per sample is
// diag(p) - p p^T, returned by SampleHessian.
#ifndef SPARROW_CORE_LOSSES_LOSS_H_
#define SPARROW_CORE_LOSSES_LOSS_H_

#include "Eigen/Core"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace sparrow::core {

enum class LossKind {
  kMse,                  // (yhat - y)^2 per output
  kBinaryCrossEntropy,   // on a sigmoid output in (0,1); NAILS' modified form
                         // when epsilon > 0
  kSoftmaxCrossEntropy,  // on logits, targets one-hot
};

absl::string_view LossName(LossKind kind);
absl::StatusOr<LossKind> ParseLoss(absl::string_view name);

struct Loss {
  LossKind kind = LossKind::kMse;
  // Bemporad Sec. 5.5: l = -y log(eps + yhat) - (1 - y) log(1 + eps - yhat);
  // eps = 1e-4 there. eps = 0 is the ordinary binary cross-entropy (yhat is
  // then clamped away from 0 and 1).
  double epsilon = 0.0;
  // kMse on a classifier's one-hot class targets (one linear output per
  // class, accuracy by the largest output): RLS's all-RLS classification
  // mode. Softmax cross-entropy always takes one-hot targets.
  bool one_hot = false;

  absl::Status Validate() const;
  // A single label column becomes one-hot columns: softmax cross-entropy,
  // or kMse with one_hot.
  bool OneHotTargets() const {
    return kind == LossKind::kSoftmaxCrossEntropy ||
           (kind == LossKind::kMse && one_hot);
  }

  // Sum of the loss over all samples and outputs.
  double Value(const Eigen::Ref<const Eigen::MatrixXd>& y,
               const Eigen::Ref<const Eigen::MatrixXd>& yhat) const;
  // A lower bound of the loss of one element (one output of one sample) over
  // every prediction, valid for all targets in y: 0 for MSE, and for the
  // cross-entropies when the targets are probabilities; -log(1 + eps) for
  // the modified binary cross-entropy; -Inf when targets outside [0, 1] leave
  // a cross-entropy unbounded below. Lets a line search abandon a trial whose
  // partial loss already exceeds its bound.
  double LowerBoundPerElement(const Eigen::Ref<const Eigen::MatrixXd>& y) const;
  // dl/dyhat, elementwise (all losses).
  void Gradient(const Eigen::Ref<const Eigen::MatrixXd>& y,
                const Eigen::Ref<const Eigen::MatrixXd>& yhat,
                Eigen::Ref<Eigen::MatrixXd> grad) const;
  // d2l/dyhat2 on the diagonal, elementwise; for softmax the diagonal of the
  // per-sample Hessian.
  void Curvature(const Eigen::Ref<const Eigen::MatrixXd>& y,
                 const Eigen::Ref<const Eigen::MatrixXd>& yhat,
                 Eigen::Ref<Eigen::MatrixXd> curv) const;
  // Full Hessian of one sample (outputs x outputs).
  Eigen::MatrixXd SampleHessian(
      const Eigen::Ref<const Eigen::VectorXd>& y,
      const Eigen::Ref<const Eigen::VectorXd>& yhat) const;
};

}  // namespace sparrow::core

#endif  // SPARROW_CORE_LOSSES_LOSS_H_
