#include "core/optim/bld/bld.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <stdexcept>

#include "Eigen/Cholesky"
#include "LBFGS.h"
#include "absl/strings/str_cat.h"
#include "core/models/layers/dense.h"
#include "core/optim/internal/epoch_seed.h"
#include "core/optim/internal/run_monitor.h"
#include "core/util/random.h"

namespace sparrow::core {
namespace {

using Eigen::VectorXd;

// LBFGS++ functor over one block, remembering the best point it saw (LBFGS++
// may end its line search elsewhere, or throw).
class BlockFunctor {
 public:
  // Thrown when the run's wall-clock budget is spent mid-solve.
  struct OutOfTime {};

  BlockFunctor(LayeredObjective* objective, const internal::RunMonitor* monitor,
               double max_seconds)
      : objective_(objective), monitor_(monitor), max_seconds_(max_seconds) {}
  double operator()(const VectorXd& v, VectorXd& grad) {
    if (max_seconds_ > 0 && monitor_->Elapsed() >= max_seconds_) {
      throw OutOfTime{};
    }
    const double f = objective_->EvaluateBlock(v, &grad);
    if (!std::isfinite(f)) {
      grad.setZero();
      return std::numeric_limits<double>::infinity();
    }
    if (f < best_) {
      best_ = f;
      best_v_ = v;
    }
    return f;
  }
  double best() const { return best_; }
  const VectorXd& best_v() const { return best_v_; }

 private:
  LayeredObjective* objective_;
  const internal::RunMonitor* monitor_;
  double max_seconds_;
  double best_ = std::numeric_limits<double>::infinity();
  VectorXd best_v_;
};

std::vector<int> LayerSequence(LayerOrder order, int layers, Rng* rng) {
  std::vector<int> seq(layers);
  std::iota(seq.begin(), seq.end(), 0);
  if (order == LayerOrder::kBackward) {
    std::reverse(seq.begin(), seq.end());
  } else if (order == LayerOrder::kReshuffled) {
    for (int i = layers - 1; i > 0; --i) {
      std::swap(seq[i], seq[static_cast<int>(rng->Uniform() * (i + 1))]);
    }
  }
  return seq;
}

// The ridge least-squares solution of the last layer given its input Z (the
// last hidden activations, plus a row of ones with a bias):
// W (Z Z^T + P rho I) = Y Z^T.
VectorXd ExactLastLayer(const LayeredObjective& objective) {
  const DenseBlock l =
      DenseBlockOf(objective.network(), objective.num_layers() - 1);
  const Eigen::MatrixXd& z0 = objective.BlockInput();
  const bool bias = l.bias_offset >= 0;
  Eigen::MatrixXd z(z0.rows() + (bias ? 1 : 0), z0.cols());
  z.topRows(z0.rows()) = z0;
  if (bias) z.bottomRows(1).setOnes();
  Eigen::MatrixXd a = z * z.transpose();
  a.diagonal().array() += objective.num_samples() * objective.rho();
  const Eigen::MatrixXd rhs = z * objective.targets().transpose();  // in x out
  const Eigen::MatrixXd wt = a.ldlt().solve(rhs);                   // W^T
  VectorXd v(l.num_params());
  Eigen::Map<Eigen::MatrixXd>(v.data(), l.out, l.in) =
      wt.topRows(l.in).transpose();
  if (bias) v.tail(l.out) = wt.bottomRows(1).transpose();
  return v;
}

}  // namespace

absl::Status B2ldOptions::Validate() const {
  if (!(epsilon0 >= 0.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "epsilon is ", epsilon0, "; it must be >= 0 (0 = automatic)"));
  }
  if (!(epsilon_decay > 0.0 && epsilon_decay < 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("delta is ", epsilon_decay, "; it must be in (0, 1)"));
  }
  if (memory < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("memory is ", memory, "; it must be >= 1"));
  }
  if (block_iterations < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "block_iterations is ", block_iterations, "; it must be >= 1"));
  }
  if (!(armijo_gamma > 0.0 && armijo_gamma < 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "armijo_gamma is ", armijo_gamma, "; it must be in (0, 1)"));
  }
  if (!(armijo_delta > 0.0 && armijo_delta < 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "armijo_delta is ", armijo_delta, "; it must be in (0, 1)"));
  }
  if (!(sigma >= 0.0 && sigma <= armijo_gamma)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sigma is ", sigma,
        "; it must be in [0, armijo_gamma] so that the Armijo point always "
        "satisfies condition (5)"));
  }
  if (!(gradient_tolerance >= 0.0) || !(relative_decrease >= 0.0)) {
    return absl::InvalidArgumentError(
        "gradient_tolerance and relative_decrease must be >= 0");
  }
  return stop.Validate();
}

double BldRho(double rho, int n) {
  return rho == 0.0 ? 1e-3 / n : std::max(0.0, rho);
}

namespace {

LBFGSpp::LBFGSParam<double> BlockSolverParam(const B2ldOptions& options) {
  LBFGSpp::LBFGSParam<double> param;
  param.m = options.memory;
  param.epsilon_rel = 0.0;
  param.max_iterations = options.block_iterations;
  param.linesearch = LBFGSpp::LBFGS_LINESEARCH_BACKTRACKING_STRONG_WOLFE;
  return param;
}

// A candidate value of one block and the objective there.
struct BlockPoint {
  VectorXd v;
  double f;
};

// What one sweep did, for its progress record and stopping tests.
struct SweepTally {
  bool all_small = true;
  bool out_of_time = false;
  int lbfgs = 0, armijo = 0, skipped = 0;
  // `grad_` is the full gradient at *w until a block changes: the skip test
  // of the blocks before the first update reads it instead of a block
  // evaluation (same decision, no cost).
  bool grad_current = true;
};

// One MinimizeB2ld call: the state its sweeps share, a method per stage (one
// block visit, the end of a sweep and its stopping tests). Run once.
class B2ldRun {
 public:
  B2ldRun(const B2ldOptions& options, LayeredObjective& objective, VectorXd* w,
          IterationCallback* callback, B2ldStats* stats);

  Summary Run();

 private:
  void FoldSkippedSweeps(int* sweep);
  void VisitBlock(int l, SweepTally* tally);
  BlockPoint SolveBlock(int l, double f_l, SweepTally* tally);
  BlockPoint ArmijoPoint(double f_l, double g_norm);
  double Update(int l, double f_l, const BlockPoint& star,
                const BlockPoint& armijo, SweepTally* tally);
  std::optional<Termination> EndSweep(int sweep, double f_start,
                                      const SweepTally& tally);

  const B2ldOptions& options_;
  LayeredObjective& objective_;
  VectorXd* w_;
  const int layers_;
  B2ldStats local_stats_;
  B2ldStats& st_;
  Summary summary_;
  internal::RunMonitor monitor_;
  LBFGSpp::LBFGSParam<double> param_;
  double f_ = 0.0;
  double epsilon_ = 0.0;
  VectorXd grad_;           // the full gradient at the end of the last sweep
  VectorXd v_, g_, trial_;  // the visited block, its gradient, a trial point
};

B2ldRun::B2ldRun(const B2ldOptions& options, LayeredObjective& objective,
                 VectorXd* w, IterationCallback* callback, B2ldStats* stats)
    : options_(options),
      objective_(objective),
      w_(w),
      layers_(objective.num_layers()),
      st_(stats != nullptr ? *stats : local_stats_),
      monitor_(options.stop, callback, &summary_),
      param_(BlockSolverParam(options)) {
  st_.updates.assign(layers_, 0);
  st_.lbfgs_accepted.assign(layers_, 0);
  st_.armijo_used.assign(layers_, 0);
  st_.skipped.assign(layers_, 0);
  st_.conditions_held = true;
}

Summary B2ldRun::Run() {
  f_ = objective_.Evaluate(*w_, &grad_);
  summary_.initial_loss = f_;
  if (!std::isfinite(f_)) {
    summary_.message = "the objective is not finite at the starting point";
    monitor_.Finish(Termination::kDiverged);
    return summary_;
  }
  epsilon_ = options_.epsilon0 > 0.0 ? options_.epsilon0 : 0.1 * grad_.norm();
  for (int sweep = 1;; ++sweep) {
    const double f_start = f_;
    SweepTally tally;
    if (options_.order != LayerOrder::kReshuffled) FoldSkippedSweeps(&sweep);
    Rng rng(internal::EpochSeed(options_.seed,
                                options_.iterations_before + sweep - 1));
    for (int l : LayerSequence(options_.order, layers_, &rng)) {
      if (options_.stop.max_seconds > 0 &&
          monitor_.Elapsed() >= options_.stop.max_seconds) {
        tally.out_of_time = true;
        break;
      }
      VisitBlock(l, &tally);
    }
    if (const auto stop = EndSweep(sweep, f_start, tally)) {
      monitor_.Finish(*stop);
      summary_.final_loss = f_;
      return summary_;
    }
  }
}

// A sweep that would skip every block changes nothing but the tolerance:
// shrink it as those sweeps would, without running them.
void B2ldRun::FoldSkippedSweeps(int* sweep) {
  double largest = 0.0;
  for (int l = 0; l < layers_; ++l) {
    largest = std::max(
        largest,
        grad_.segment(objective_.block_offset(l), objective_.block_size(l))
            .norm());
  }
  // Each folded sweep still counts against the sweep budget.
  while (epsilon_ >= largest && largest > 0.0 &&
         *sweep < options_.stop.max_iterations) {
    epsilon_ *= options_.epsilon_decay;
    ++*sweep;
  }
}

// Block l: skipped when its gradient is within the tolerance, else updated to
// the solver's point when it satisfies conditions (4) and (5), else to the
// Armijo point.
void B2ldRun::VisitBlock(int l, SweepTally* tally) {
  const int off = objective_.block_offset(l);
  const int size = objective_.block_size(l);
  if (tally->grad_current && grad_.segment(off, size).norm() <= epsilon_) {
    ++st_.skipped[l];
    ++tally->skipped;
    return;
  }
  objective_.SetBlock(*w_, l);
  v_ = w_->segment(off, size);
  const double f_l = objective_.EvaluateBlock(v_, &g_);
  const double g_norm = g_.norm();
  if (g_norm <= epsilon_) {
    ++st_.skipped[l];
    ++tally->skipped;
    return;
  }
  tally->grad_current = false;  // this block is about to change
  const BlockPoint star = SolveBlock(l, f_l, tally);
  const BlockPoint armijo = ArmijoPoint(f_l, g_norm);
  const double f_new = Update(l, f_l, star, armijo, tally);
  if ((f_l - f_new) / std::max(f_l, 1.0) > options_.relative_decrease) {
    tally->all_small = false;
  }
  f_ = f_new;
}

// The block solve: L-BFGS to the current accuracy (or, for the last layer
// when asked, the exact least-squares solution).
BlockPoint B2ldRun::SolveBlock(int l, double f_l, SweepTally* tally) {
  BlockPoint star{v_, f_l};
  if (options_.exact_last_layer && l == layers_ - 1) {
    star.v = ExactLastLayer(objective_);
    star.f = objective_.EvaluateBlock(star.v, nullptr);
    return star;
  }
  param_.epsilon = epsilon_;
  LBFGSpp::LBFGSSolver<double, LBFGSpp::LineSearchNocedalWright> solver(param_);
  BlockFunctor functor(&objective_, &monitor_, options_.stop.max_seconds);
  VectorXd x = v_;
  double fx = f_l;
  try {
    solver.minimize(functor, x, fx);
  } catch (const BlockFunctor::OutOfTime&) {
    // The budget ran out mid-solve: the best point so far is still a
    // candidate (checked against (4)/(5) below), then the run ends.
    tally->out_of_time = true;
  } catch (const std::exception&) {
    // Line-search trouble: the best point seen is still a candidate.
  }
  if (functor.best_v().size() == v_.size()) {
    star.v = functor.best_v();
    star.f = functor.best();
  }
  return star;
}

// The Armijo point along -g (a = 1): always acceptable.
BlockPoint B2ldRun::ArmijoPoint(double f_l, double g_norm) {
  double alpha = 1.0;
  const double g2 = g_norm * g_norm;
  for (int j = 0; j < options_.armijo_max_steps;
       ++j, alpha *= options_.armijo_delta) {
    trial_ = v_ - alpha * g_;
    const double ft = objective_.EvaluateBlock(trial_, nullptr);
    if (ft <= f_l - options_.armijo_gamma * alpha * g2) return {trial_, ft};
  }
  return {v_, f_l};
}

// Moves block l to `star` when it satisfies conditions (4) and (5), else to
// `armijo`; returns the objective there.
double B2ldRun::Update(int l, double f_l, const BlockPoint& star,
                       const BlockPoint& armijo, SweepTally* tally) {
  const int off = objective_.block_offset(l);
  const int size = objective_.block_size(l);
  const bool cond4 = star.f <= armijo.f;
  const bool cond5 =
      star.f - f_l <= -options_.sigma * (star.v - v_).squaredNorm();
  double f_new;
  if (cond4 && cond5 && std::isfinite(star.f)) {
    w_->segment(off, size) = star.v;
    f_new = star.f;
    ++st_.lbfgs_accepted[l];
    ++tally->lbfgs;
  } else {
    w_->segment(off, size) = armijo.v;
    f_new = armijo.f;
    ++st_.armijo_used[l];
    ++tally->armijo;
  }
  // Conditions (4) and (5) of the update actually made.
  const VectorXd& made = w_->segment(off, size);
  if (!(f_new <= armijo.f &&
        f_new - f_l <= -options_.sigma * (made - v_).squaredNorm())) {
    st_.conditions_held = false;
  }
  ++st_.updates[l];
  return f_new;
}

// Shrinks the tolerance, records the sweep and applies the stopping tests.
std::optional<Termination> B2ldRun::EndSweep(int sweep, double f_start,
                                             const SweepTally& tally) {
  epsilon_ *= options_.epsilon_decay;
  f_ = objective_.Evaluate(*w_, &grad_);
  const double grad_norm = grad_.norm();
  std::vector<std::pair<std::string, double>> extras = {
      {"grad_norm", grad_norm},
      {"lbfgs_blocks", tally.lbfgs},
      {"armijo_blocks", tally.armijo},
      {"skipped_blocks", tally.skipped}};
  // Cumulative block updates per layer (the paper's Table 5).
  for (int l = 0; l < layers_; ++l) {
    extras.emplace_back(absl::StrCat("updates_layer_", l), st_.updates[l]);
  }
  auto stop = monitor_.EndIteration(sweep, f_start, f_, epsilon_, *w_,
                                    std::move(extras));
  if (tally.out_of_time && !stop) stop = Termination::kDeadline;
  if (!stop && grad_norm <= options_.gradient_tolerance) {
    summary_.message = absl::StrCat("gradient norm ", grad_norm,
                                    " <= ", options_.gradient_tolerance);
    stop = Termination::kConverged;
  }
  if (!stop && tally.all_small && tally.skipped < layers_) {
    summary_.message =
        "every block decreased the objective by less than relative_decrease "
        "in the last sweep";
    stop = Termination::kConverged;
  }
  return stop;
}

}  // namespace

Summary MinimizeB2ld(const B2ldOptions& options, LayeredObjective& objective,
                     VectorXd* w, IterationCallback* callback,
                     B2ldStats* stats) {
  return B2ldRun(options, objective, w, callback, stats).Run();
}

absl::Status BlingOptions::Validate() const {
  if (!(alpha0 >= 0.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("alpha is ", alpha0, "; it must be >= 0 (0 = default)"));
  }
  if (!(decay >= 0.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "epsilon (the step decay) is ", decay, "; it must be >= 0"));
  }
  if (!(beta > 0.0 && gamma >= beta)) {
    return absl::InvalidArgumentError(
        absl::StrCat("beta is ", beta, " and gamma ", gamma,
                     "; the normalizer needs 0 < beta <= gamma"));
  }
  if (batch_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch_size is ", batch_size, "; it must be >= 1"));
  }
  if (order == LayerOrder::kReshuffled) {
    return absl::InvalidArgumentError(
        "BLInG updates layers backward or forward");
  }
  return stop.Validate();
}

Summary MinimizeBling(const BlingOptions& options, LayeredObjective& objective,
                      VectorXd* w, IterationCallback* callback) {
  Summary summary;
  internal::RunMonitor monitor(options.stop, callback, &summary);
  const int layers = objective.num_layers();
  const int rows = objective.num_samples();
  const int batch = std::min(options.batch_size, rows);
  const int batches = (rows + batch - 1) / batch;
  double alpha =
      options.alpha0 > 0.0
          ? options.alpha0
          : (options.simultaneous ? 0.5 : 0.5 / std::max(1, layers - 2));
  double f = objective.Evaluate(*w, nullptr);
  summary.initial_loss = f;
  if (!std::isfinite(f)) {
    summary.message = "the objective is not finite at the starting point";
    monitor.Finish(Termination::kDiverged);
    return summary;
  }
  std::vector<int> order(rows);
  std::iota(order.begin(), order.end(), 0);
  Rng layer_rng(options.seed);
  const std::vector<int> sequence =
      LayerSequence(options.order, layers, &layer_rng);
  VectorXd g;
  for (int epoch = 1;; ++epoch) {
    Rng rng(internal::EpochSeed(options.seed,
                                options.iterations_before + epoch - 1));
    if (options.minibatch == MinibatchOrder::kReshuffled) {
      std::iota(order.begin(), order.end(), 0);
      for (int i = rows - 1; i > 0; --i) {
        std::swap(order[i], order[static_cast<int>(rng.Uniform() * (i + 1))]);
      }
    }
    bool out_of_time = false;
    for (int h = 0; h < batches; ++h) {
      const int hb = options.minibatch == MinibatchOrder::kStochastic
                         ? static_cast<int>(rng.Uniform() * batches)
                         : h;
      objective.SetMinibatch(order, hb * batch,
                             std::min(rows, (hb + 1) * batch));
      objective.MinibatchForward(*w, 0);
      if (options.simultaneous) {
        objective.MinibatchGradient(*w, &g);
        const double norm = g.norm();
        *w -=
            (alpha / std::max(options.beta, std::min(options.gamma, norm))) * g;
      } else {
        int changed = -1;  // lowest layer changed since the last forward pass
        for (int l : sequence) {
          if (changed >= 0) objective.MinibatchForward(*w, changed);
          objective.MinibatchBlockGradient(*w, l, &g);
          const double norm = g.norm();
          w->segment(objective.block_offset(l), objective.block_size(l)) -=
              (alpha / std::max(options.beta, std::min(options.gamma, norm))) *
              g;
          changed = l;
        }
      }
      alpha *= 1.0 - options.decay * alpha;
      if (options.stop.max_seconds > 0 && (h & 15) == 15 &&
          monitor.Elapsed() >= options.stop.max_seconds) {
        out_of_time = true;
        break;
      }
    }
    const double f_prev = f;
    f = objective.Evaluate(*w, nullptr);
    auto stop = monitor.EndIteration(epoch, f_prev, f, alpha, *w);
    if (out_of_time && !stop) stop = Termination::kDeadline;
    if (stop) {
      monitor.Finish(*stop);
      summary.final_loss = f;
      return summary;
    }
  }
}

}  // namespace sparrow::core
