#include "core/train/objectives.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/data/narx.h"
#include "core/util/denormals.h"

namespace sparrow::core {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Non-finite predictions make the point unacceptable to every line search and
// step test.
double FiniteOrInf(double v) { return std::isfinite(v) ? v : kInf; }

// Inverts V = (1/N) [SSE + rho/2 |w|^2] for SSE / (N outputs), the mean squared
// residual, for an MSE loss.
double ResidualFromLoss(double loss, const Eigen::VectorXd& w, double rho,
                        int samples, int outputs) {
  const double data = loss - 0.5 * rho * w.squaredNorm() / std::max(samples, 1);
  return data / std::max(outputs, 1);
}

}  // namespace

double MinibatchEstimate(double loss_sum, int m, int n, double rho_theta,
                         const Eigen::VectorXd& w, Eigen::VectorXd* grad) {
  *grad /= m;
  *grad += (rho_theta / n) * w;
  return FiniteOrInf(loss_sum / m + 0.5 * rho_theta / n * w.squaredNorm());
}

TableObjective::TableObjective(const Mlp* mlp, const Eigen::MatrixXd* x,
                               const Eigen::MatrixXd* y, Loss loss,
                               double rho_theta, int batch_size, bool shuffle)
    : mlp_(mlp),
      x_(x),
      y_(y),
      loss_(loss),
      rho_theta_(rho_theta),
      batch_size_(batch_size),
      shuffle_(shuffle) {
  const int n = static_cast<int>(x->cols());
  num_batches_ = (batch_size <= 0 || batch_size >= n)
                     ? 1
                     : (n + batch_size - 1) / batch_size;
  order_.resize(n);
  std::iota(order_.begin(), order_.end(), 0);
  if (num_batches_ > 1) {
    x_shuffled_ = *x;
    y_shuffled_ = *y;
  }
}

double TableObjective::Accumulate(const Eigen::VectorXd& w,
                                  const Eigen::MatrixXd& x,
                                  const Eigen::MatrixXd& y, int begin, int end,
                                  Eigen::VectorXd* grad) {
  const int cols = end - begin;
  Mlp::Cache& cache = caches_[cols];
  mlp_->Forward(w.data(), x.middleCols(begin, cols), &cache);
  const auto target = y.middleCols(begin, cols);
  const double value = loss_.Value(target, cache.output());
  if (grad != nullptr) {
    d_out_.resize(y.rows(), cols);
    loss_.Gradient(target, cache.output(), d_out_);
    mlp_->Backward(w.data(), d_out_, &cache, grad->data(), nullptr);
  }
  return value;
}

double TableObjective::Evaluate(const Eigen::VectorXd& w,
                                Eigen::VectorXd* grad) {
  const int n = static_cast<int>(x_->cols());
  if (grad != nullptr) grad->setZero(w.size());
  double value = Accumulate(w, *x_, *y_, 0, n, grad);
  value += 0.5 * rho_theta_ * w.squaredNorm();
  if (grad != nullptr) {
    *grad += rho_theta_ * w;
    *grad /= n;
  }
  return FiniteOrInf(value / n);
}

void TableObjective::OutputJacobianSquares(const Eigen::VectorXd& w,
                                           Eigen::VectorXd* s) {
  const int n = static_cast<int>(x_->cols());
  Mlp::Cache& cache = caches_[n];
  mlp_->Forward(w.data(), *x_, &cache);
  curv_.setOnes(y_->rows(), n);
  s->setZero(w.size());
  mlp_->AccumulateDiagGgn(w.data(), curv_, &cache, s->data());
}

void TableObjective::DiagonalGgn(const Eigen::VectorXd& w, Eigen::VectorXd* h) {
  const int n = static_cast<int>(x_->cols());
  Mlp::Cache& cache = caches_[n];
  mlp_->Forward(w.data(), *x_, &cache);
  curv_.resize(y_->rows(), n);
  loss_.Curvature(*y_, cache.output(), curv_);
  curv_ = curv_.cwiseMax(0.0).cwiseSqrt();
  h->setZero(w.size());
  mlp_->AccumulateDiagGgn(w.data(), curv_, &cache, h->data());
  h->array() += rho_theta_;
  *h /= n;
}

double TableObjective::MeanSquaredResidual(const Eigen::VectorXd& w) {
  const int n = static_cast<int>(x_->cols());
  Mlp::Cache& cache = caches_[n];
  mlp_->Forward(w.data(), *x_, &cache);
  return (*y_ - cache.output()).squaredNorm() /
         (static_cast<double>(n) * static_cast<double>(y_->rows()));
}

NarxSimulationObjective::NarxSimulationObjective(
    const Mlp* mlp, const data::NarxLags& lags,
    const std::vector<data::Trace>* traces, Loss loss, double rho_theta,
    TableObjective* one_step)
    : mlp_(mlp),
      lags_(lags),
      traces_(traces),
      loss_(loss),
      rho_theta_(rho_theta),
      one_step_(one_step),
      caches_(traces->size()) {
  for (const data::Trace& t : *traces) {
    num_samples_ += std::max(0, t.length() - lags.max_lag());
  }
}

double NarxSimulationObjective::Trace(const Eigen::VectorXd& w, size_t i,
                                      Eigen::VectorXd* grad) {
  const data::Trace& tr = (*traces_)[i];
  const int first = lags_.max_lag();
  const int steps = tr.length() - first;
  if (steps <= 0) return 0.0;
  const int ny = static_cast<int>(tr.y.rows());
  Mlp::Cache& cache = caches_[i];
  cache.Resize(*mlp_, steps);
  // Free run: the first `first` outputs are the measured history.
  yhat_ = tr.y;
  for (int j = 0; j < steps; ++j) {
    data::FillNarxRegressor(lags_, tr.u, yhat_, first + j,
                            cache.input().col(j));
    mlp_->ForwardColumn(w.data(), j, &cache);
    yhat_.col(first + j) = cache.output().col(j);
  }
  const auto target = tr.y.rightCols(steps);
  const double value = loss_.Value(target, cache.output());
  if (grad == nullptr || !std::isfinite(value)) return value;
  d_out_.resize(ny, steps);
  loss_.Gradient(target, cache.output(), d_out_);
  // Reverse sweep: yhat(t) feeds z(t + k) for k = 1..output_lags, so its
  // adjoint collects dL/dz of those later steps.
  adjoint_.setZero(ny, steps);
  d_in_.resize(mlp_->inputs());
  const int y_offset = static_cast<int>(tr.u.rows()) *
                       (lags_.input_lags + (lags_.feedthrough ? 1 : 0));
  for (int j = steps - 1; j >= 0; --j) {
    d_out_.col(j) += adjoint_.col(j);
    mlp_->BackwardColumn(w.data(), j, d_out_.col(j).data(), &cache,
                         d_in_.data());
    for (int k = 1; k <= lags_.output_lags && j - k >= 0; ++k) {
      adjoint_.col(j - k) += d_in_.segment(y_offset + (k - 1) * ny, ny);
    }
  }
  mlp_->AccumulateGradient(cache, grad->data());
  return value;
}

double NarxSimulationObjective::Evaluate(const Eigen::VectorXd& w,
                                         Eigen::VectorXd* grad) {
  if (grad != nullptr) grad->setZero(w.size());
  double value = 0.5 * rho_theta_ * w.squaredNorm();
  for (size_t i = 0; i < traces_->size(); ++i) value += Trace(w, i, grad);
  if (grad != nullptr) {
    *grad += rho_theta_ * w;
    *grad /= std::max(num_samples_, 1);
    if (!grad->allFinite()) return kInf;
  }
  return FiniteOrInf(value / std::max(num_samples_, 1));
}

double NarxSimulationObjective::MeanSquaredResidual(const Eigen::VectorXd& w) {
  double sse = 0.0;
  int count = 0;
  for (size_t i = 0; i < traces_->size(); ++i) {
    Trace(w, i, nullptr);
    const data::Trace& tr = (*traces_)[i];
    const int steps = tr.length() - lags_.max_lag();
    if (steps <= 0) continue;
    sse += (tr.y.rightCols(steps) - caches_[i].output()).squaredNorm();
    count += steps * static_cast<int>(tr.y.rows());
  }
  const double mse = sse / std::max(count, 1);
  return std::isfinite(mse) ? mse : kInf;
}

double TableObjective::MeanSquaredResidualFromLoss(
    double loss, const Eigen::VectorXd& w) const {
  return ResidualFromLoss(loss, w, rho_theta_, static_cast<int>(x_->cols()),
                          static_cast<int>(y_->rows()));
}

double NarxSimulationObjective::MeanSquaredResidualFromLoss(
    double loss, const Eigen::VectorXd& w) const {
  const int outputs =
      traces_->empty() ? 1 : static_cast<int>((*traces_)[0].y.rows());
  return ResidualFromLoss(loss, w, rho_theta_, num_samples_, outputs);
}

void TableObjective::StartEpoch(const Eigen::VectorXd&, Rng* rng) {
  if (num_batches_ == 1 || !shuffle_) return;
  std::iota(order_.begin(), order_.end(), 0);
  rng->Shuffle(&order_);
  for (size_t j = 0; j < order_.size(); ++j) {
    x_shuffled_.col(j) = x_->col(order_[j]);
    y_shuffled_.col(j) = y_->col(order_[j]);
  }
}

double TableObjective::EvaluateBatch(const Eigen::VectorXd& w, int batch,
                                     Eigen::VectorXd* grad) {
  if (num_batches_ == 1) return Evaluate(w, grad);
  const int n = static_cast<int>(x_->cols());
  const int begin = batch * batch_size_;
  const int end = std::min(n, begin + batch_size_);
  grad->setZero(w.size());
  const double value =
      Accumulate(w, x_shuffled_, y_shuffled_, begin, end, grad);
  return MinibatchEstimate(value, end - begin, n, rho_theta_, w, grad);
}

SequenceObjective::SequenceObjective(const StateSpaceRnn* rnn,
                                     const std::vector<data::Trace>* traces,
                                     Loss loss, double rho_x0, double rho_theta,
                                     int bptt_window, bool shuffle)
    : rnn_(rnn),
      traces_(traces),
      loss_(loss),
      rho_x0_(rho_x0),
      rho_theta_(rho_theta),
      bptt_window_(bptt_window),
      shuffle_(shuffle),
      tapes_(traces->size()) {
  for (size_t t = 0; t < traces->size(); ++t) {
    const int steps = (*traces)[t].length() - rnn->warmup();
    num_samples_ += steps;
    const int window = bptt_window > 0 ? bptt_window : steps;
    for (int offset = 0; offset < steps; offset += window) {
      windows_.push_back(
          {static_cast<int>(t), offset, std::min(window, steps - offset)});
    }
  }
}

double SequenceObjective::Regularization(const Eigen::VectorXd& w,
                                         Eigen::VectorXd* grad,
                                         double scale) const {
  const int x0 = rnn_->x0_size();
  const int rest = rnn_->num_params() - x0;
  if (grad != nullptr) {
    grad->head(x0) += scale * rho_x0_ * w.head(x0);
    grad->tail(rest) += scale * rho_theta_ * w.tail(rest);
  }
  return scale * 0.5 *
         (rho_x0_ * w.head(x0).squaredNorm() +
          rho_theta_ * w.tail(rest).squaredNorm());
}

double SequenceObjective::LossAndBackward(const Eigen::VectorXd& w, int trace,
                                          int offset, StateSpaceRnn::Tape* tape,
                                          Eigen::VectorXd* grad) {
  const data::Trace& tr = (*traces_)[trace];
  const auto target = tr.y.middleCols(tape->start, tape->steps);
  const double value = loss_.Value(target, tape->outputs());
  if (grad != nullptr) {
    d_out_.resize(tr.y.rows(), tape->steps);
    loss_.Gradient(target, tape->outputs(), d_out_);
    if (offset == 0) {
      rnn_->Backward(w.data(), d_out_, trace, tape, grad->data());
    } else {
      // A window after the first starts from a detached nominal state: no x0
      // gradient.
      Eigen::VectorXd unused;
      rnn_->Backward(w.data(), d_out_, trace, tape, grad->data(), &unused);
    }
  }
  return value;
}

double SequenceObjective::Evaluate(const Eigen::VectorXd& w,
                                   Eigen::VectorXd* grad) {
  const ScopedFlushDenormals flush;  // BPTT adjoints decay along long traces
  if (grad != nullptr) grad->setZero(w.size());
  double value = 0.0;
  for (size_t t = 0; t < traces_->size(); ++t) {
    const data::Trace& tr = (*traces_)[t];
    rnn_->Simulate(w.data(), tr.u, tr.y, static_cast<int>(t), &tapes_[t]);
    value += LossAndBackward(w, static_cast<int>(t), 0, &tapes_[t], grad);
  }
  const double scale = 1.0 / num_samples_;
  if (grad != nullptr) *grad *= scale;
  value = value * scale + Regularization(w, grad, scale);
  if (grad != nullptr && !grad->allFinite()) return kInf;
  return FiniteOrInf(value);
}

void SequenceObjective::StartEpoch(const Eigen::VectorXd& w, Rng* rng) {
  if (bptt_window_ <= 0) return;  // full BPTT: nothing to prepare
  const ScopedFlushDenormals flush;
  for (size_t t = 0; t < traces_->size(); ++t) {
    const data::Trace& tr = (*traces_)[t];
    rnn_->Simulate(w.data(), tr.u, tr.y, static_cast<int>(t), &tapes_[t]);
  }
  if (!shuffle_) return;
  // Back to the canonical order (trace, then offset) before the shuffle.
  std::sort(
      windows_.begin(), windows_.end(), [](const Window& a, const Window& b) {
        return a.trace != b.trace ? a.trace < b.trace : a.offset < b.offset;
      });
  rng->Shuffle(&windows_);
}

double SequenceObjective::EvaluateBatch(const Eigen::VectorXd& w, int batch,
                                        Eigen::VectorXd* grad) {
  if (bptt_window_ <= 0) return Evaluate(w, grad);
  const ScopedFlushDenormals flush;
  const Window& win = windows_[batch];
  const data::Trace& tr = (*traces_)[win.trace];
  grad->setZero(w.size());
  if (win.offset == 0) {
    rnn_->Simulate(w.data(), tr.u, tr.y, win.trace, &window_tape_, win.steps);
  } else {
    rnn_->SimulateFrom(w.data(), tapes_[win.trace].x.col(win.offset), tr.u,
                       rnn_->warmup() + win.offset, &window_tape_, win.steps);
  }
  double value = LossAndBackward(w, win.trace, win.offset, &window_tape_, grad);
  *grad /= win.steps;
  value = value / win.steps + Regularization(w, grad, 1.0 / num_samples_);
  return FiniteOrInf(value);
}

}  // namespace sparrow::core
