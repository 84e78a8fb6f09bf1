#include "core/optim/gauss_newton/least_squares.h"

#include <algorithm>
#include <cmath>
#include <limits>

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
  time_split_ = threads >= 2 && traces->size() == 1;
  if (threads_ > 1 || time_split_) {
    pool_ = std::make_unique<ThreadPool>(time_split_ ? 2 : threads_);
  }
  workers_.resize(threads_);
  tapes_.resize(traces->size());
}

bool SequenceLeastSquares::UseSimulationAt(const Eigen::VectorXd& w) {
  auto at = [&](const Eigen::VectorXd& point) {
    return point.size() == w.size() && point == w;
  };
  if (at(simulated_at_)) return true;
  if (!at(spare_at_)) return false;
  tapes_.swap(spare_tapes_);
  simulated_at_.swap(spare_at_);
  return true;
}

double SequenceLeastSquares::Regularization(const Eigen::VectorXd& w) const {
  return 0.5 * rho_.dot(w.cwiseAbs2());
}

double SequenceLeastSquares::Value(const Eigen::VectorXd& w) {
  return ValueBelow(w, std::numeric_limits<double>::infinity());
}

double SequenceLeastSquares::ValueBelow(const Eigen::VectorXd& w,
                                        double cutoff) {
  return ValueBelowIn(0, w, cutoff);
}

double SequenceLeastSquares::ValueBelowIn(int slot, const Eigen::VectorXd& w,
                                          double cutoff) {
  Eigen::VectorXd& at = slot == 0 ? simulated_at_ : spare_at_;
  at.resize(0);
  double value = 0.0;
  if (SimulateBelow(w, cutoff, slot == 0 ? &tapes_ : &spare_tapes_, &value)) {
    at = w;
  }
  return value;
}

bool SequenceLeastSquares::SimulateBelow(
    const Eigen::VectorXd& w, double cutoff,
    std::vector<StateSpaceRnn::Tape>* tapes, double* value) const {
  const ScopedFlushDenormals flush;  // as in Accumulate: the same numbers
  tapes->resize(traces_->size());
  // Without a finite cutoff and a finite lower bound every trace runs to the
  // end.
  const bool may_stop =
      std::isfinite(cutoff) && std::isfinite(element_lower_bound_);
  const double regularization = Regularization(w);
  // A lower bound of V(w) that tightens as samples are simulated.
  double bound = regularization + element_lower_bound_ * num_elements_;
  double sum = 0.0;
  for (size_t t = 0; t < traces_->size(); ++t) {
    const data::Trace& tr = (*traces_)[t];
    StateSpaceRnn::Tape& tape = (*tapes)[t];
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
          // The bound sums its terms in another order than the value below,
          // so it may exceed a value equal to the cutoff by rounding: go on
          // within a relative 1e-10 (false for NaN too).
          return bound <= cutoff + 1e-10 * std::abs(cutoff);
        });
    if (!complete) {
      *value = std::numeric_limits<double>::infinity();
      return false;
    }
    // Summed per trace, as in Accumulate, so both give identical numbers.
    sum += loss_.Value(tr.y.middleCols(tape.start, tape.steps), tape.outputs());
  }
  sum += regularization;
  *value = std::isfinite(sum) ? sum : std::numeric_limits<double>::infinity();
  return true;
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

void SequenceLeastSquares::PrepareTrace(const Eigen::VectorXd& w, int t,
                                        bool simulated, Worker* wk) {
  const data::Trace& tr = (*traces_)[t];
  StateSpaceRnn::Tape& tape = tapes_[t];
  if (!simulated) rnn_->Simulate(w.data(), tr.u, tr.y, t, &tape);
  const auto target = tr.y.middleCols(tape.start, tape.steps);
  wk->loss += loss_.Value(target, tape.outputs());
  wk->curv.resize(tr.y.rows(), tape.steps);
  wk->grad.resize(tr.y.rows(), tape.steps);
  loss_.Curvature(target, tape.outputs(), wk->curv);
  loss_.Gradient(target, tape.outputs(), wk->grad);
}

void SequenceLeastSquares::AddRows(const Eigen::VectorXd& w, int t, int begin,
                                   int end, const Worker& loss_terms,
                                   StateSpaceRnn::Sensitivities* s,
                                   Worker* wk) {
  const int ny = static_cast<int>((*traces_)[t].y.rows());
  const Eigen::Index width = wk->rows.rows();
  int filled = 0;
  auto emit = [&](int k, const RowMatrixXd& jac) {
    for (int i = 0; i < ny; ++i) {
      // Bemporad eq. (11)/(14): row sqrt(l'') J, rhs -l'/sqrt(l''). The
      // ratio is formed from the square root directly so that l'' ~ 1e8
      // (cross-entropy near saturation) is harmless.
      const double root = std::sqrt(loss_terms.curv(i, k));
      const double* src = jac.data() + i * width;
      double* dst = wk->rows.col(filled).data();
      for (Eigen::Index c = 0; c < width; ++c) dst[c] = root * src[c];
      wk->rhs(filled) = -loss_terms.grad(i, k) / root;
      if (++filled == kRowBlock) {
        Fold(wk, wk->rows, wk->rhs, filled);
        filled = 0;
      }
    }
  };
  rnn_->OutputJacobianSteps(w.data(), t, &tapes_[t], begin, end, s, emit);
  if (filled > 0) Fold(wk, wk->rows, wk->rhs, filled);
}

void SequenceLeastSquares::Clear(int width, bool qr, Worker* wk) {
  wk->h.setZero(width, width);
  wk->g.setZero(width);
  wk->rows.resize(width, kRowBlock);
  wk->rhs.resize(kRowBlock);
  wk->loss = 0.0;
  wk->qr = qr;
}

void SequenceLeastSquares::StartAccumulation(bool qr) {
  for (Worker& wk : workers_) Clear(num_params(), qr, &wk);
}

void SequenceLeastSquares::AccumulateSplit(const Eigen::VectorXd& w,
                                           bool simulated) {
  Worker& first = workers_[0];
  PrepareTrace(w, 0, simulated, &first);
  const int steps = tapes_[0].steps;
  const int mid = steps / 2;
  if (mid == 0) {
    AddRows(w, 0, 0, steps, first, &tapes_[0].sens, &first);
    return;
  }
  Clear(num_params() + rnn_->spec().nx, first.qr, &split_);
  pool_->Run(2, [&](int part) {
    const ScopedFlushDenormals flush;
    if (part == 0) {
      AddRows(w, 0, 0, mid, first, &tapes_[0].sens, &first);
    } else {
      AddRows(w, 0, mid, steps, first, &split_sens_, &split_);
    }
  });
  MergeSplit();
}

void SequenceLeastSquares::MergeSplit() {
  // The later rows are [P G] with P the rows from M_mid = 0 and G = d yhat /
  // d x_mid, and the true rows are P + G E for E = M_mid embedded in the
  // parameter columns: J = [P G] T with T = [I; E].
  const int n = num_params();
  const int nx = rnn_->spec().nx;
  Worker& first = workers_[0];
  rnn_->EmbedSensitivities(tapes_[0].sens, &embedded_);
  if (first.qr) {
    // R_aug T has the same R^T R and R^T d as the rows it stands for.
    cross_ = split_.h.leftCols(n);
    cross_.noalias() += split_.h.rightCols(nx) * embedded_;
    internal::QrUpdate(cross_, split_.g, &first.h, &first.g, &first.stack,
                       &first.stack_rhs);
    return;
  }
  // T^T [P G]^T [P G] T = PP + PG E + (PG E)^T + E^T GG E.
  Eigen::MatrixXd& a = split_.h;
  a.triangularView<Eigen::StrictlyUpper>() = a.transpose();
  cross_.noalias() = a.topRightCorner(n, nx) * embedded_;
  cross_ += cross_.transpose().eval();
  cross_ += a.topLeftCorner(n, n);
  cross_.noalias() +=
      embedded_.transpose() * (a.bottomRightCorner(nx, nx) * embedded_);
  first.h.triangularView<Eigen::Lower>() += cross_;
  first.g += split_.g.head(n);
  first.g.noalias() += embedded_.transpose() * split_.g.tail(nx);
}

double SequenceLeastSquares::Accumulate(const Eigen::VectorXd& w) {
  const ScopedFlushDenormals flush;  // and in each thread below
  const int num_traces = static_cast<int>(traces_->size());
  const bool simulated = UseSimulationAt(w);
  // The tapes are rewritten below: until they are complete they hold no
  // point's simulation (a thrown exception leaves them unclaimed).
  if (!simulated) simulated_at_.resize(0);
  if (time_split_) {
    AccumulateSplit(w, simulated);
  } else {
    auto part = [&](int k) {
      const ScopedFlushDenormals flush;
      Worker* wk = &workers_[k];
      for (int t = k; t < num_traces; t += threads_) {
        PrepareTrace(w, t, simulated, wk);
        AddRows(w, t, 0, tapes_[t].steps, *wk, &tapes_[t].sens, wk);
      }
    };
    if (pool_ == nullptr) {
      part(0);
    } else {
      pool_->Run(threads_, part);
    }
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
