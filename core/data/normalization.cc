#include "core/data/normalization.h"

#include <cassert>
#include <cmath>
#include <limits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace sparrow::core::data {
namespace {

// A channel whose standard deviation is this small relative to its mean is
// constant up to the rounding error of the mean itself.
constexpr double kConstantChannelTolerance = 1e-10;

}  // namespace

Normalizer Normalizer::Identity(int n) {
  Normalizer normalizer;
  normalizer.mean = Eigen::VectorXd::Zero(n);
  normalizer.scale = Eigen::VectorXd::Ones(n);
  return normalizer;
}

Normalizer Normalizer::FitZScore(
    const std::vector<const Eigen::MatrixXd*>& blocks) {
  if (blocks.empty() || blocks.front() == nullptr) return Identity(0);
  const Eigen::Index n = blocks.front()->rows();
  // Two passes (mean, then squared deviations) avoid the cancellation of the
  // one-pass sum-of-squares formula on channels with a large offset.
  Eigen::VectorXd sum = Eigen::VectorXd::Zero(n);
  Eigen::Index count = 0;
  for (const Eigen::MatrixXd* block : blocks) {
    assert(block != nullptr && block->rows() == n);
    // An empty block is skipped: Eigen's row sums of a matrix without data
    // offset its null pointer (undefined behaviour, reported by clang's UBSan).
    if (block == nullptr || block->rows() != n || block->cols() == 0) continue;
    sum += block->rowwise().sum();
    count += block->cols();
  }
  if (count == 0) return Identity(static_cast<int>(n));
  Normalizer normalizer;
  normalizer.mean = sum / static_cast<double>(count);
  Eigen::VectorXd squares = Eigen::VectorXd::Zero(n);
  for (const Eigen::MatrixXd* block : blocks) {
    if (block == nullptr || block->rows() != n || block->cols() == 0) continue;
    squares += (block->colwise() - normalizer.mean).rowwise().squaredNorm();
  }
  normalizer.scale = (squares / static_cast<double>(count)).cwiseSqrt();
  for (Eigen::Index i = 0; i < n; ++i) {
    // Written so that a NaN deviation also falls back to 1.
    if (!(normalizer.scale(i) >
          kConstantChannelTolerance * std::abs(normalizer.mean(i)))) {
      normalizer.scale(i) = 1.0;
    }
  }
  return normalizer;
}

Normalizer Normalizer::FitMinMax(
    const std::vector<const Eigen::MatrixXd*>& blocks) {
  if (blocks.empty() || blocks.front() == nullptr) return Identity(0);
  const Eigen::Index n = blocks.front()->rows();
  Eigen::VectorXd lo =
      Eigen::VectorXd::Constant(n, std::numeric_limits<double>::infinity());
  Eigen::VectorXd hi = -lo;
  Eigen::Index count = 0;
  for (const Eigen::MatrixXd* block : blocks) {
    assert(block != nullptr && block->rows() == n);
    if (block == nullptr || block->rows() != n || block->cols() == 0) continue;
    lo = lo.cwiseMin(block->rowwise().minCoeff());
    hi = hi.cwiseMax(block->rowwise().maxCoeff());
    count += block->cols();
  }
  if (count == 0) return Identity(static_cast<int>(n));
  Normalizer normalizer;
  normalizer.mean = lo;
  normalizer.scale = hi - lo;
  for (Eigen::Index i = 0; i < n; ++i) {
    // Written so that a NaN range also falls back to 1.
    if (!(normalizer.scale(i) > kConstantChannelTolerance * std::abs(lo(i)))) {
      normalizer.scale(i) = 1.0;
    }
  }
  return normalizer;
}

absl::Status Normalizer::Validate() const {
  if (mean.size() != scale.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "normalizer has %d means but %d scales; they must match", mean.size(),
        scale.size()));
  }
  for (Eigen::Index i = 0; i < mean.size(); ++i) {
    if (!std::isfinite(mean(i))) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "normalizer channel %d: mean %g is not finite", i, mean(i)));
    }
    if (!std::isfinite(scale(i)) || scale(i) == 0.0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "normalizer channel %d: scale %g must be finite and nonzero", i,
          scale(i)));
    }
  }
  return absl::OkStatus();
}

void Normalizer::Apply(Eigen::MatrixXd* m) const {
  assert(m->rows() == mean.size());
  m->colwise() -= mean;
  m->array().colwise() /= scale.array();
}

void Normalizer::Invert(Eigen::MatrixXd* m) const {
  assert(m->rows() == mean.size());
  m->array().colwise() *= scale.array();
  m->colwise() += mean;
}

}  // namespace sparrow::core::data
