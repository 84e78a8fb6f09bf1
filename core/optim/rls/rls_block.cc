#include "core/optim/rls/rls_block.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"

namespace sparrow::core {
namespace {

// Rows below which splitting a block's products over threads does not pay.
constexpr Eigen::Index kMinRowsPerPart = 16;

}  // namespace

absl::Status RlsBlockOptions::Validate() const {
  if (!(forgetting > 0.0 && forgetting <= 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("rls forgetting factor must be in (0, 1], got ",
                     forgetting, "; the paper uses 1"));
  }
  if (!(eta > 0.0) || !std::isfinite(eta)) {
    return absl::InvalidArgumentError(
        absl::StrCat("rls eta (gradient scaling factor) must be finite and > "
                     "0, got ",
                     eta, "; the paper uses 1"));
  }
  if (!(momentum >= 0.0 && momentum < 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("rls momentum must be in [0, 1), got ", momentum,
                     "; the paper's +M "
                     "uses 0.5"));
  }
  if (!(l1 >= 0.0) || !std::isfinite(l1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("rls l1 must be finite and >= 0, got ", l1,
                     "; the paper's +R uses 1e-5 (FNN, CNN) or 1e-6 (LSTM)"));
  }
  return absl::OkStatus();
}

RlsBlock::RlsBlock(int rows, int inputs, const RlsBlockOptions& options,
                   bool bias)
    : options_(options),
      p_(inputs + bias, inputs + bias),
      omega_(Eigen::MatrixXd::Zero(rows, inputs + bias)),
      step_(rows, inputs + bias),
      sign_(rows, inputs + bias),
      u_(inputs + bias),
      bias_(bias),
      last_h_(std::numeric_limits<double>::quiet_NaN()) {
  ResetP();
}

void RlsBlock::ResetP() { p_.setIdentity(); }

void RlsBlock::ForRows(
    ThreadPool* pool,
    const std::function<void(Eigen::Index, Eigen::Index)>& fn) {
  const Eigen::Index rows = omega_.rows();
  const int parts =
      pool == nullptr ? 1
                      : static_cast<int>(std::min<Eigen::Index>(
                            pool->threads(),
                            std::max<Eigen::Index>(rows / kMinRowsPerPart, 1)));
  if (parts == 1) {
    fn(0, rows);
    return;
  }
  pool->Run(parts, [&](int k) {
    const Eigen::Index first = rows * k / parts;
    fn(first, rows * (k + 1) / parts - first);
  });
}

void RlsBlock::Step(const Eigen::Ref<const Eigen::VectorXd>& xbar, double k,
                    const double* grad, double* block, ThreadPool* pool,
                    const Eigen::MatrixXd* gp, double gp_scale) {
  const Eigen::Index r = omega_.rows(), c = omega_.cols();
  Eigen::Map<const Eigen::MatrixXd> g(grad, r, c);
  Eigen::Map<Eigen::MatrixXd> b(block, r, c);

  u_.noalias() = p_.selfadjointView<Eigen::Lower>() * xbar;
  double q = xbar.dot(u_);
  if (!(q >= 0.0) || !std::isfinite(q)) {  // P lost definiteness
    ResetP();
    ++resets_;
    u_.noalias() = p_.selfadjointView<Eigen::Lower>() * xbar;
    q = xbar.dot(u_);
  }
  const double h = options_.forgetting + k * q;
  last_h_ = h;

  // Omega_s = alpha Omega_{s-1} - (eta / h) G P_{s-1}   (63), (99)
  ForRows(pool, [&](Eigen::Index first, Eigen::Index n) {
    auto omega = omega_.middleRows(first, n);
    if (gp != nullptr) {
      omega = options_.momentum * omega -
              (options_.eta * gp_scale / h) * gp->middleRows(first, n);
      return;
    }
    auto step = step_.middleRows(first, n);
    step.noalias() =
        g.middleRows(first, n) * p_.selfadjointView<Eigen::Lower>();
    omega = options_.momentum * omega - (options_.eta / h) * step;
  });
  if (options_.l1 > 0.0) {  // the old signs, sgn(B_{s-1})
    sign_ = b.array().sign();
    if (bias_) sign_.col(c - 1).setZero();
  }
  // P_s = (P_{s-1} - (k / h) u u^T) / lambda   (53)
  p_.selfadjointView<Eigen::Lower>().rankUpdate(u_, -k / h);
  if (options_.forgetting != 1.0) {
    p_.triangularView<Eigen::Lower>() *= 1.0 / options_.forgetting;
  }
  // B_s = B_{s-1} + Omega_s - gamma sgn(B_{s-1}) P_s   (100)
  ForRows(pool, [&](Eigen::Index first, Eigen::Index n) {
    auto rows = b.middleRows(first, n);
    rows += omega_.middleRows(first, n);
    if (options_.l1 > 0.0) {
      auto step = step_.middleRows(first, n);
      step.noalias() =
          sign_.middleRows(first, n) * p_.selfadjointView<Eigen::Lower>();
      rows -= options_.l1 * step;
    }
  });
}

Eigen::MatrixXd RlsBlock::P() const {
  return p_.selfadjointView<Eigen::Lower>();
}

int64_t RlsBlock::state_size() const {
  const int64_t c = omega_.cols();
  return c * (c + 1) / 2 + omega_.size() + 1;
}

void RlsBlock::PackState(double* out) const {
  const Eigen::Index c = p_.cols();
  for (Eigen::Index j = 0; j < c; ++j) {
    for (Eigen::Index i = j; i < c; ++i) *out++ = p_(i, j);
  }
  for (Eigen::Index i = 0; i < omega_.size(); ++i) *out++ = omega_.data()[i];
  *out = static_cast<double>(resets_);
}

absl::Status RlsBlock::UnpackState(const double* in, int64_t size) {
  if (size != state_size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rls block state has ", size, " values, expected ", state_size(),
        " for a ", omega_.rows(), " x ", omega_.cols(),
        " block; the checkpoint is not from "
        "this model"));
  }
  for (int64_t i = 0; i < size; ++i) {
    if (!std::isfinite(in[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("rls block state value ", i, " is not finite"));
    }
  }
  const Eigen::Index c = p_.cols();
  for (Eigen::Index j = 0; j < c; ++j) {
    for (Eigen::Index i = j; i < c; ++i) p_(i, j) = *in++;
  }
  for (Eigen::Index i = 0; i < omega_.size(); ++i) omega_.data()[i] = *in++;
  resets_ = static_cast<int64_t>(*in);
  return absl::OkStatus();
}

}  // namespace sparrow::core
