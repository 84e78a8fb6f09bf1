#include "core/optim/bld/layered_objective.h"

#include <cmath>
#include <limits>

namespace sparrow::core {
namespace {

double FiniteOrInf(double v) {
  return std::isfinite(v) ? v : std::numeric_limits<double>::infinity();
}

}  // namespace

LayeredObjective::LayeredObjective(const Mlp* mlp, const Eigen::MatrixXd* x,
                                   const Eigen::MatrixXd* y, double rho)
    : mlp_(mlp), x_(x), y_(y), rho_(rho) {
  scratch_.setZero(mlp->num_params());
}

void LayeredObjective::OutputGradient(const Eigen::MatrixXd& y,
                                      Mlp::Cache* cache) {
  d_out_.noalias() = (2.0 / num_samples()) * (cache->output() - y);
}

double LayeredObjective::Evaluate(const Eigen::VectorXd& w,
                                  Eigen::VectorXd* grad) {
  ++full_evaluations_;
  block_ = -1;  // the cache no longer holds a block's point
  mlp_->Forward(w.data(), *x_, &full_);
  const double value = (full_.output() - *y_).squaredNorm() / num_samples() +
                       rho_ * w.squaredNorm();
  if (grad != nullptr) {
    OutputGradient(*y_, &full_);
    grad->setZero(w.size());
    mlp_->Backward(w.data(), d_out_, &full_, grad->data(), nullptr);
    *grad += 2.0 * rho_ * w;
  }
  return FiniteOrInf(value);
}

void LayeredObjective::SetBlock(const Eigen::VectorXd& w, int l) {
  point_ = w;
  block_ = l;
  // The layers below l, once: z[l] is the block's input from now on.
  full_.Resize(*mlp_, num_samples());
  full_.z[0] = *x_;
  const auto& layers = mlp_->layers();
  for (int i = 0; i < l; ++i) {
    const Mlp::Layer& layer = layers[i];
    full_.v[i + 1].noalias() =
        Eigen::Map<const Eigen::MatrixXd>(w.data() + layer.weight_offset,
                                          layer.out, layer.in) *
        full_.z[i];
    if (layer.bias_offset >= 0) {
      full_.v[i + 1].colwise() += Eigen::Map<const Eigen::VectorXd>(
          w.data() + layer.bias_offset, layer.out);
    }
    ApplyActivation(layer.activation, full_.v[i + 1], full_.z[i + 1]);
  }
}

double LayeredObjective::EvaluateBlock(const Eigen::VectorXd& v,
                                       Eigen::VectorXd* grad) {
  ++block_evaluations_;
  const int off = block_offset(block_), size = block_size(block_);
  // rho ||w||^2 changes only through the block.
  const double others =
      point_.squaredNorm() - point_.segment(off, size).squaredNorm();
  point_.segment(off, size) = v;
  mlp_->ForwardFrom(point_.data(), block_, &full_);
  const double value = (full_.output() - *y_).squaredNorm() / num_samples() +
                       rho_ * (others + v.squaredNorm());
  if (grad != nullptr) {
    OutputGradient(*y_, &full_);
    scratch_.segment(off, size).setZero();
    mlp_->BackwardToLayer(point_.data(), d_out_, block_, &full_,
                          scratch_.data());
    *grad = scratch_.segment(off, size) + 2.0 * rho_ * v;
  }
  return FiniteOrInf(value);
}

const Eigen::MatrixXd& LayeredObjective::BlockInput() const {
  return full_.z[block_];
}

void LayeredObjective::SetMinibatch(const std::vector<int>& order, int begin,
                                    int end) {
  const int m = end - begin;
  xb_.resize(x_->rows(), m);
  yb_.resize(y_->rows(), m);
  for (int j = 0; j < m; ++j) {
    xb_.col(j) = x_->col(order[begin + j]);
    yb_.col(j) = y_->col(order[begin + j]);
  }
  batch_.Resize(*mlp_, m);
  batch_.z[0] = xb_;
}

void LayeredObjective::MinibatchForward(const Eigen::VectorXd& w, int from) {
  mlp_->ForwardFrom(w.data(), from, &batch_);
}

void LayeredObjective::MinibatchBlockGradient(const Eigen::VectorXd& w, int l,
                                              Eigen::VectorXd* grad) {
  ++block_evaluations_;
  const int off = block_offset(l), size = block_size(l);
  d_out_.noalias() = (2.0 / num_samples()) * (batch_.output() - yb_);
  scratch_.segment(off, size).setZero();
  mlp_->BackwardToLayer(w.data(), d_out_, l, &batch_, scratch_.data());
  const double share = static_cast<double>(xb_.cols()) / num_samples();
  *grad =
      scratch_.segment(off, size) + (2.0 * rho_ * share) * w.segment(off, size);
}

void LayeredObjective::MinibatchGradient(const Eigen::VectorXd& w,
                                         Eigen::VectorXd* grad) {
  ++full_evaluations_;
  d_out_.noalias() = (2.0 / num_samples()) * (batch_.output() - yb_);
  grad->setZero(w.size());
  mlp_->Backward(w.data(), d_out_, &batch_, grad->data(), nullptr);
  const double share = static_cast<double>(xb_.cols()) / num_samples();
  *grad += (2.0 * rho_ * share) * w;
}

}  // namespace sparrow::core
