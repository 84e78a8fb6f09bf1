#include "core/optim/bld/bld.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "Eigen/Cholesky"
#include "LBFGS.h"
#include "absl/strings/str_cat.h"
#include "core/models/layers/dense.h"
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

Summary MinimizeB2ld(const B2ldOptions& options, LayeredObjective& objective,
                     VectorXd* w, IterationCallback* callback,
                     B2ldStats* stats) {
  Summary summary;
  B2ldStats local;
  B2ldStats& st = stats != nullptr ? *stats : local;
  const int layers = objective.num_layers();
  st.updates.assign(layers, 0);
  st.lbfgs_accepted.assign(layers, 0);
  st.armijo_used.assign(layers, 0);
  st.skipped.assign(layers, 0);
  st.conditions_held = true;
  internal::RunMonitor monitor(options.stop, callback, &summary);
  VectorXd grad;
  double f = objective.Evaluate(*w, &grad);
  summary.initial_loss = f;
  if (!std::isfinite(f)) {
    summary.message = "the objective is not finite at the starting point";
    monitor.Finish(Termination::kDiverged);
    return summary;
  }
  LBFGSpp::LBFGSParam<double> param;
  param.m = options.memory;
  param.epsilon_rel = 0.0;
  param.max_iterations = options.block_iterations;
  param.linesearch = LBFGSpp::LBFGS_LINESEARCH_BACKTRACKING_STRONG_WOLFE;
  Rng rng(options.seed);
  double epsilon =
      options.epsilon0 > 0.0 ? options.epsilon0 : 0.1 * grad.norm();
  VectorXd v, g, trial;
  for (int sweep = 1;; ++sweep) {
    const double f_start = f;
    bool all_small = true;
    bool out_of_time = false;
    int lbfgs = 0, armijo = 0, skipped = 0;
    // `grad` is the full gradient at *w until a block changes: the skip test
    // of the blocks before the first update reads it instead of a block
    // evaluation (same decision, no cost).
    bool grad_current = true;
    if (options.order != LayerOrder::kReshuffled) {
      // A sweep that would skip every block changes nothing but the
      // tolerance: shrink it as those sweeps would, without running them.
      double largest = 0.0;
      for (int l = 0; l < layers; ++l) {
        largest = std::max(largest, grad.segment(objective.block_offset(l),
                                                 objective.block_size(l))
                                        .norm());
      }
      // Each folded sweep still counts against the sweep budget.
      while (epsilon >= largest && largest > 0.0 &&
             sweep < options.stop.max_iterations) {
        epsilon *= options.epsilon_decay;
        ++sweep;
      }
    }
    for (int l : LayerSequence(options.order, layers, &rng)) {
      if (options.stop.max_seconds > 0 &&
          monitor.Elapsed() >= options.stop.max_seconds) {
        out_of_time = true;
        break;
      }
      const int off = objective.block_offset(l);
      const int size = objective.block_size(l);
      if (grad_current && grad.segment(off, size).norm() <= epsilon) {
        ++st.skipped[l];
        ++skipped;
        continue;
      }
      objective.SetBlock(*w, l);
      v = w->segment(off, size);
      const double f_l = objective.EvaluateBlock(v, &g);
      const double g_norm = g.norm();
      if (g_norm <= epsilon) {
        ++st.skipped[l];
        ++skipped;
        continue;
      }
      grad_current = false;  // this block is about to change
      // The block solve: L-BFGS to the current accuracy (or, for the last
      // layer when asked, the exact least-squares solution).
      VectorXd v_star = v;
      double f_star = f_l;
      if (options.exact_last_layer && l == layers - 1) {
        v_star = ExactLastLayer(objective);
        f_star = objective.EvaluateBlock(v_star, nullptr);
      } else {
        param.epsilon = epsilon;
        LBFGSpp::LBFGSSolver<double, LBFGSpp::LineSearchNocedalWright> solver(
            param);
        BlockFunctor functor(&objective, &monitor, options.stop.max_seconds);
        VectorXd x = v;
        double fx = f_l;
        try {
          solver.minimize(functor, x, fx);
        } catch (const BlockFunctor::OutOfTime&) {
          // The budget ran out mid-solve: the best point so far is still a
          // candidate (checked against (4)/(5) below), then the run ends.
          out_of_time = true;
        } catch (const std::exception&) {
          // Line-search trouble: the best point seen is still a candidate.
        }
        if (functor.best_v().size() == size) {
          v_star = functor.best_v();
          f_star = functor.best();
        }
      }
      // The Armijo point along -g (a = 1): always acceptable.
      double alpha = 1.0, f_armijo = f_l;
      VectorXd v_armijo = v;
      const double g2 = g_norm * g_norm;
      for (int j = 0; j < options.armijo_max_steps;
           ++j, alpha *= options.armijo_delta) {
        trial = v - alpha * g;
        const double ft = objective.EvaluateBlock(trial, nullptr);
        if (ft <= f_l - options.armijo_gamma * alpha * g2) {
          v_armijo = trial;
          f_armijo = ft;
          break;
        }
      }
      const bool cond4 = f_star <= f_armijo;
      const bool cond5 =
          f_star - f_l <= -options.sigma * (v_star - v).squaredNorm();
      double f_new;
      if (cond4 && cond5 && std::isfinite(f_star)) {
        w->segment(off, size) = v_star;
        f_new = f_star;
        ++st.lbfgs_accepted[l];
        ++lbfgs;
      } else {
        w->segment(off, size) = v_armijo;
        f_new = f_armijo;
        ++st.armijo_used[l];
        ++armijo;
      }
      // Conditions (4) and (5) of the update actually made.
      const VectorXd& made = w->segment(off, size);
      if (!(f_new <= f_armijo &&
            f_new - f_l <= -options.sigma * (made - v).squaredNorm())) {
        st.conditions_held = false;
      }
      ++st.updates[l];
      if ((f_l - f_new) / std::max(f_l, 1.0) > options.relative_decrease) {
        all_small = false;
      }
      f = f_new;
    }
    epsilon *= options.epsilon_decay;
    f = objective.Evaluate(*w, &grad);
    const double grad_norm = grad.norm();
    std::vector<std::pair<std::string, double>> extras = {
        {"grad_norm", grad_norm},
        {"lbfgs_blocks", lbfgs},
        {"armijo_blocks", armijo},
        {"skipped_blocks", skipped}};
    // Cumulative block updates per layer (the paper's Table 5).
    for (int l = 0; l < layers; ++l) {
      extras.emplace_back(absl::StrCat("updates_layer_", l), st.updates[l]);
    }
    auto stop =
        monitor.EndIteration(sweep, f_start, f, epsilon, *w, std::move(extras));
    if (out_of_time && !stop) stop = Termination::kDeadline;
    if (!stop && grad_norm <= options.gradient_tolerance) {
      summary.message = absl::StrCat("gradient norm ", grad_norm,
                                     " <= ", options.gradient_tolerance);
      stop = Termination::kConverged;
    }
    if (!stop && all_small && skipped < layers) {
      summary.message =
          "every block decreased the objective by less than relative_decrease "
          "in the last sweep";
      stop = Termination::kConverged;
    }
    if (stop) {
      monitor.Finish(*stop);
      summary.final_loss = f;
      return summary;
    }
  }
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
  Rng rng(options.seed);
  const std::vector<int> sequence = LayerSequence(options.order, layers, &rng);
  VectorXd g;
  for (int epoch = 1;; ++epoch) {
    if (options.minibatch == MinibatchOrder::kReshuffled) {
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
