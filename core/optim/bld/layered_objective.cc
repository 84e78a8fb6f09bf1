#include "core/optim/bld/layered_objective.h"

#include <cmath>
#include <limits>

namespace sparrow::core {
namespace {

double FiniteOrInf(double v) {
  return std::isfinite(v) ? v : std::numeric_limits<double>::infinity();
}

}  // namespace

LayeredObjective::LayeredObjective(const Network* net, const Eigen::MatrixXd* x,
                                   const Eigen::MatrixXd* y, double rho)
    : net_(net), x_(x), y_(y), rho_(rho) {
  scratch_.setZero(net->num_params());
}

void LayeredObjective::OutputGradient(const Eigen::MatrixXd& y,
                                      Network::Cache* cache) {
  d_out_.noalias() = (2.0 / num_samples()) * (cache->output() - y);
}

double LayeredObjective::Evaluate(const Eigen::VectorXd& w,
                                  Eigen::VectorXd* grad) {
  ++full_evaluations_;
  block_ = -1;  // the cache no longer holds a block's point
  net_->Forward(w.data(), *x_, &full_);
  const double value = (full_.output() - *y_).squaredNorm() / num_samples() +
                       rho_ * w.squaredNorm();
  if (grad != nullptr) {
    OutputGradient(*y_, &full_);
    grad->setZero(w.size());
    net_->Backward(w.data(), d_out_, &full_, nullptr);
    net_->Gradient(full_, grad->data());
    *grad += 2.0 * rho_ * w;
  }
  return FiniteOrInf(value);
}

void LayeredObjective::SetBlock(const Eigen::VectorXd& w, int l) {
  point_ = w;
  block_ = l;
  // The layers below l, once: activation[l] is the block's input from now on.
  full_.Resize(*net_, num_samples());
  full_.input() = *x_;
  net_->ForwardLayers(w.data(), 0, l, &full_);
}

double LayeredObjective::EvaluateBlock(const Eigen::VectorXd& v,
                                       Eigen::VectorXd* grad) {
  ++block_evaluations_;
  const int off = block_offset(block_), size = block_size(block_);
  // rho ||w||^2 changes only through the block.
  const double others =
      point_.squaredNorm() - point_.segment(off, size).squaredNorm();
  point_.segment(off, size) = v;
  net_->ForwardLayers(point_.data(), block_, num_layers(), &full_);
  const double value = (full_.output() - *y_).squaredNorm() / num_samples() +
                       rho_ * (others + v.squaredNorm());
  if (grad != nullptr) {
    OutputGradient(*y_, &full_);
    scratch_.segment(off, size).setZero();
    net_->BackwardToLayer(point_.data(), d_out_, block_, &full_);
    net_->LayerGradient(block_, full_, scratch_.data());
    *grad = scratch_.segment(off, size) + 2.0 * rho_ * v;
  }
  return FiniteOrInf(value);
}

const Eigen::MatrixXd& LayeredObjective::BlockInput() const {
  return full_.activation[block_];
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
  batch_.Resize(*net_, m);
  batch_.input() = xb_;
}

void LayeredObjective::MinibatchForward(const Eigen::VectorXd& w, int from) {
  net_->ForwardLayers(w.data(), from, num_layers(), &batch_);
}

void LayeredObjective::MinibatchBlockGradient(const Eigen::VectorXd& w, int l,
                                              Eigen::VectorXd* grad) {
  ++block_evaluations_;
  const int off = block_offset(l), size = block_size(l);
  d_out_.noalias() = (2.0 / num_samples()) * (batch_.output() - yb_);
  scratch_.segment(off, size).setZero();
  net_->BackwardToLayer(w.data(), d_out_, l, &batch_);
  net_->LayerGradient(l, batch_, scratch_.data());
  const double share = static_cast<double>(xb_.cols()) / num_samples();
  *grad =
      scratch_.segment(off, size) + (2.0 * rho_ * share) * w.segment(off, size);
}

void LayeredObjective::MinibatchGradient(const Eigen::VectorXd& w,
                                         Eigen::VectorXd* grad) {
  ++full_evaluations_;
  d_out_.noalias() = (2.0 / num_samples()) * (batch_.output() - yb_);
  grad->setZero(w.size());
  net_->Backward(w.data(), d_out_, &batch_, nullptr);
  net_->Gradient(batch_, grad->data());
  const double share = static_cast<double>(xb_.cols()) / num_samples();
  *grad += (2.0 * rho_ * share) * w;
}

}  // namespace sparrow::core
