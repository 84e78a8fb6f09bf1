#include "core/optim/gauss_newton/least_squares.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>

#include "Eigen/Cholesky"
#include "Eigen/QR"
#include "core/util/denormals.h"

namespace sparrow::core {
namespace {

constexpr int kRowBlock =
    64;  // rows per rank update: large enough for a GEMM-speed update
// Steps per chunk when a simulation checks its partial loss (ValueBelow).
constexpr int kValueChunk = 128;

}  // namespace

void internal::QrUpdate(const Eigen::Ref<const Eigen::MatrixXd>& rows,
                        const Eigen::Ref<const Eigen::VectorXd>& rhs,
                        Eigen::MatrixXd* r, Eigen::VectorXd* d,
                        Eigen::MatrixXd* stack, Eigen::VectorXd* stack_rhs) {
  const Eigen::Index n = r->cols();
  const Eigen::Index m = rows.rows();
  stack->resize(n + m, n);
  stack->topRows(n) = *r;
  stack->bottomRows(m) = rows;
  stack_rhs->resize(n + m);
  stack_rhs->head(n) = *d;
  stack_rhs->tail(m) = rhs;
  Eigen::HouseholderQR<Eigen::Ref<Eigen::MatrixXd>> qr(*stack);
  stack_rhs->applyOnTheLeft(qr.householderQ().transpose());
  *r = qr.matrixQR().topRows(n).triangularView<Eigen::Upper>();
  *d = stack_rhs->head(n);
}

double LeastSquaresProblem::TriangularFactor(const Eigen::VectorXd& w,
                                             Eigen::MatrixXd* r,
                                             Eigen::VectorXd* d) {
  Eigen::MatrixXd h;
  Eigen::VectorXd g;
  const double value = NormalEquations(w, &h, &g);
  Eigen::LLT<Eigen::MatrixXd, Eigen::Lower> llt(h);
  *r = llt.matrixU();
  *d = llt.matrixL().solve(g);  // r^T d = g
  return value;
}

SequenceLeastSquares::SequenceLeastSquares(
    const StateSpaceRnn* rnn, const std::vector<data::Trace>* traces, Loss loss,
    double rho_x0, double rho_theta, int threads)
    : rnn_(rnn),
      traces_(traces),
      loss_(loss),
      threads_(std::max(
          1, std::min<int>(threads, static_cast<int>(traces->size())))) {
  rho_ = Eigen::VectorXd::Constant(rnn->num_params(), rho_theta);
  rho_.head(rnn->x0_size()).setConstant(rho_x0);
  for (const data::Trace& t : *traces) {
    const int steps = t.length() - rnn->warmup();
    num_samples_ += steps;
    num_elements_ += steps * static_cast<int>(t.y.rows());
    element_lower_bound_ =
        std::min(element_lower_bound_,
                 loss_.LowerBoundPerElement(t.y.rightCols(std::max(steps, 0))));
  }
  pipeline_ = threads >= 2 && threads_ == 1;
  workers_.resize(threads_);
  tapes_.resize(traces->size());
}

bool SequenceLeastSquares::SimulatedAt(const Eigen::VectorXd& w) const {
  return simulated_at_.size() == w.size() && simulated_at_ == w;
}

double SequenceLeastSquares::Regularization(const Eigen::VectorXd& w) const {
  return 0.5 * rho_.dot(w.cwiseAbs2());
}

double SequenceLeastSquares::Value(const Eigen::VectorXd& w) {
  return ValueBelow(w, std::numeric_limits<double>::infinity());
}

double SequenceLeastSquares::ValueBelow(const Eigen::VectorXd& w,
                                        double cutoff) {
  const ScopedFlushDenormals flush;  // as in Accumulate: the same numbers
  // Without a finite cutoff and a finite lower bound every trace runs to the
  // end.
  const bool may_stop =
      std::isfinite(cutoff) && std::isfinite(element_lower_bound_);
  simulated_at_.resize(0);
  const double regularization = Regularization(w);
  // A lower bound of V(w) that tightens as samples are simulated.
  double bound = regularization + element_lower_bound_ * num_elements_;
  double value = 0.0;
  for (size_t t = 0; t < traces_->size(); ++t) {
    const data::Trace& tr = (*traces_)[t];
    StateSpaceRnn::Tape& tape = tapes_[t];
    const Eigen::Index ny = tr.y.rows();
    int done = 0;
    const bool complete = rnn_->SimulateWhile(
        w.data(), tr.u, tr.y, static_cast<int>(t), &tape, kValueChunk,
        [&](int end) {
          if (!may_stop) return true;
          const int n = end - done;
          bound += loss_.Value(tr.y.middleCols(tape.start + done, n),
                               tape.outputs().middleCols(done, n)) -
                   element_lower_bound_ * static_cast<double>(ny * n);
          done = end;
          return bound <= cutoff;  // false for NaN too
        });
    if (!complete) return std::numeric_limits<double>::infinity();
    // Summed per trace, as in Accumulate, so both give identical numbers.
    value +=
        loss_.Value(tr.y.middleCols(tape.start, tape.steps), tape.outputs());
  }
  simulated_at_ = w;
  value += regularization;
  return std::isfinite(value) ? value : std::numeric_limits<double>::infinity();
}

void SequenceLeastSquares::Fold(Worker* wk, const Eigen::MatrixXd& rows,
                                const Eigen::VectorXd& rhs, int filled) {
  const auto r = rows.leftCols(filled);  // one row per column
  if (wk->qr) {
    internal::QrUpdate(r.transpose(), rhs.head(filled), &wk->h, &wk->g,
                       &wk->stack, &wk->stack_rhs);
  } else {
    wk->h.selfadjointView<Eigen::Lower>().rankUpdate(r);
    wk->g.noalias() += r * rhs.head(filled);
  }
}

void SequenceLeastSquares::AccumulateTrace(const Eigen::VectorXd& w, int t,
                                           bool simulated, Worker* wk,
                                           Pipeline* pipe) {
  const data::Trace& tr = (*traces_)[t];
  const int ny = static_cast<int>(tr.y.rows());
  const int n = num_params();
  StateSpaceRnn::Tape& tape = tapes_[t];
  if (!simulated) rnn_->Simulate(w.data(), tr.u, tr.y, t, &tape);
  const auto target = tr.y.middleCols(tape.start, tape.steps);
  wk->loss += loss_.Value(target, tape.outputs());
  wk->curv.resize(ny, tape.steps);
  wk->grad.resize(ny, tape.steps);
  loss_.Curvature(target, tape.outputs(), wk->curv);
  loss_.Gradient(target, tape.outputs(), wk->grad);
  int filled = 0;
  auto flush = [&] {
    if (filled == 0) return;
    if (pipe == nullptr) {
      Fold(wk, wk->rows, wk->rhs, filled);
    } else {
      std::unique_lock<std::mutex> lock(pipe->mu);
      pipe->cv.wait(lock, [&] { return !pipe->ready; });
      wk->rows.swap(pipe->rows);
      wk->rhs.swap(pipe->rhs);
      pipe->filled = filled;
      pipe->ready = true;
      pipe->cv.notify_all();
      if (wk->rows.cols() != kRowBlock) {
        wk->rows.resize(n, kRowBlock);
        wk->rhs.resize(kRowBlock);
      }
    }
    filled = 0;
  };
  rnn_->OutputJacobians(w.data(), t, &tape, [&](int k, const RowMatrixXd& jac) {
    for (int i = 0; i < ny; ++i) {
      // Bemporad eq. (11)/(14): row sqrt(l'') J, rhs -l'/sqrt(l''). The
      // ratio is formed from the square root directly so that l'' ~ 1e8
      // (cross-entropy near saturation) is harmless.
      const double s = std::sqrt(wk->curv(i, k));
      const double* src = jac.data() + static_cast<Eigen::Index>(i) * n;
      double* dst = wk->rows.col(filled).data();
      for (int c = 0; c < n; ++c) dst[c] = s * src[c];
      wk->rhs(filled) = -wk->grad(i, k) / s;
      if (++filled == kRowBlock) flush();
    }
  });
  flush();
}

void SequenceLeastSquares::StartAccumulation(bool qr) {
  const int n = num_params();
  for (Worker& wk : workers_) {
    wk.h.setZero(n, n);
    wk.g.setZero(n);
    wk.rows.resize(n, kRowBlock);
    wk.rhs.resize(kRowBlock);
    wk.loss = 0.0;
    wk.qr = qr;
  }
}

double SequenceLeastSquares::Accumulate(const Eigen::VectorXd& w) {
  const ScopedFlushDenormals flush;  // and in each thread below
  const int num_traces = static_cast<int>(traces_->size());
  const bool simulated = SimulatedAt(w);
  if (pipeline_) {
    Worker& wk = workers_[0];
    Pipeline pipe;
    pipe.rows.resize(num_params(), kRowBlock);
    pipe.rhs.resize(kRowBlock);
    std::thread folder([&] {
      const ScopedFlushDenormals flush;
      Eigen::MatrixXd rows(num_params(), kRowBlock);
      Eigen::VectorXd rhs(kRowBlock);
      for (;;) {
        int filled = 0;
        {
          std::unique_lock<std::mutex> lock(pipe.mu);
          pipe.cv.wait(lock, [&] { return pipe.ready || pipe.done; });
          if (!pipe.ready) return;
          rows.swap(pipe.rows);
          rhs.swap(pipe.rhs);
          filled = pipe.filled;
          pipe.ready = false;
          pipe.cv.notify_all();
        }
        Fold(&wk, rows, rhs, filled);
      }
    });
    for (int t = 0; t < num_traces; ++t) {
      AccumulateTrace(w, t, simulated, &wk, &pipe);
    }
    {
      std::lock_guard<std::mutex> lock(pipe.mu);
      pipe.done = true;
    }
    pipe.cv.notify_all();
    folder.join();
  } else if (threads_ == 1) {
    for (int t = 0; t < num_traces; ++t) {
      AccumulateTrace(w, t, simulated, &workers_[0]);
    }
  } else {
    std::vector<std::thread> pool;
    for (int k = 0; k < threads_; ++k) {
      pool.emplace_back([&, k] {
        const ScopedFlushDenormals flush;
        for (int t = k; t < num_traces; t += threads_) {
          AccumulateTrace(w, t, simulated, &workers_[k]);
        }
      });
    }
    for (std::thread& th : pool) th.join();
  }
  simulated_at_ = w;
  double value = 0.0;
  for (const Worker& wk : workers_) value += wk.loss;
  value += Regularization(w);
  return std::isfinite(value) ? value : std::numeric_limits<double>::infinity();
}

double SequenceLeastSquares::NormalEquations(const Eigen::VectorXd& w,
                                             Eigen::MatrixXd* h,
                                             Eigen::VectorXd* g) {
  StartAccumulation(false);
  const double value = Accumulate(w);
  *h = workers_[0].h;
  *g = workers_[0].g;
  for (int k = 1; k < threads_; ++k) {
    *h += workers_[k].h;
    *g += workers_[k].g;
  }
  // L2 rows sqrt(rho) I p = -sqrt(rho) w (Bemporad eq. 11).
  h->diagonal() += rho_;
  g->noalias() -= rho_.cwiseProduct(w);
  return value;
}

double SequenceLeastSquares::TriangularFactor(const Eigen::VectorXd& w,
                                              Eigen::MatrixXd* r,
                                              Eigen::VectorXd* d) {
  StartAccumulation(true);
  const double value = Accumulate(w);
  Worker& first = workers_[0];
  for (int k = 1; k < threads_; ++k) {
    internal::QrUpdate(workers_[k].h, workers_[k].g, &first.h, &first.g,
                       &first.stack, &first.stack_rhs);
  }
  // L2 rows sqrt(rho) I p = -sqrt(rho) w (Bemporad eq. 11).
  const Eigen::VectorXd root = rho_.cwiseSqrt();
  internal::QrUpdate(Eigen::MatrixXd(root.asDiagonal()), -root.cwiseProduct(w),
                     &first.h, &first.g, &first.stack, &first.stack_rhs);
  *r = first.h;
  *d = first.g;
  return value;
}

}  // namespace sparrow::core
