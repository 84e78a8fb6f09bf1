// Block-layer decomposition for deep feedforward networks (Palagi & Seccia,
// ALGORITHMS.md §4): B2LD (Algorithm 3), a batch method that sweeps the layers
// and solves each layer's weights as a block by L-BFGS to a shrinking
// accuracy, and BLInG (Algorithm 5), a minibatch method that takes a
// normalized gradient step on each layer in turn. Both minimize
//   f(w) = (1/P) sum_p ||yhat_p(w) - y_p||^2 + rho ||w||^2
// through a LayeredObjective, whose block evaluations reuse the cached
// activations below the block and backpropagate only down to it.
#ifndef SPARROW_CORE_OPTIM_BLD_BLD_H_
#define SPARROW_CORE_OPTIM_BLD_BLD_H_

#include <cstdint>
#include <vector>

#include "Eigen/Core"
#include "absl/status/status.h"
#include "core/optim/bld/layered_objective.h"
#include "core/optim/problem.h"
#include "core/optim/stop_rules.h"

namespace sparrow::core {

enum class LayerOrder { kBackward, kForward, kReshuffled };

struct B2ldOptions {
  static constexpr const char kName[] = "b2ld";  // in specs and messages
  // Initial block-gradient tolerance; 0 = 0.1 ||grad f(w0)|| (the paper
  // gives no value; this scales with the problem).
  double epsilon0 = 0.0;
  double epsilon_decay = 0.5;  // eps <- decay * eps after a sweep, in (0, 1)
  int memory = 10;             // L-BFGS memory, >= 1
  int block_iterations = 100;  // L-BFGS iterations per block visit, >= 1
  // Last layer: L-BFGS like the others (the paper's choice), or the exact
  // ridge least-squares solve (Z^T Z + P rho I) w^T = Z^T y.
  bool exact_last_layer = false;
  LayerOrder order = LayerOrder::kBackward;
  double gradient_tolerance = 1e-3;  // stop (i): ||grad f|| <= this
  // Stop (ii): every block visited in a sweep decreased f by at most this,
  // relative to max(f, 1). A sweep that skipped every block (all block
  // gradients below the tolerance) only shrinks the tolerance.
  double relative_decrease = 1e-4;
  // Armijo fallback: steps a delta^j with f decreasing by >= gamma a delta^j
  // ||g||^2; a = 1.
  double armijo_gamma = 1e-4;
  double armijo_delta = 0.5;
  int armijo_max_steps = 60;
  double sigma = 1e-8;  // forcing function sigma(t) = sigma t^2 of (5)
  // Iterations are sweeps over the layers; the tolerance is not used (B2LD
  // has its own tests, gradient_tolerance and relative_decrease).
  StopRules stop;
  uint64_t seed =
      0;  // kReshuffled order: each sweep's depends on (seed, sweep)
  // Resume: sweeps done before (the checkpoint's iteration).
  int iterations_before = 0;
  // rho of f, the weight decay of the objective the trainer builds (not used
  // by MinimizeB2ld itself): 0 = 1e-3 / n (the paper's), < 0 = none.
  double rho = 0.0;

  absl::Status Validate() const;
};

// What B2LD did, per layer (index 0 = the first weight layer): block updates
// (the paper's Table 5 counts), of which the L-BFGS point was accepted and of
// which the Armijo point was used, and visits skipped because the block
// gradient was already below the tolerance.
struct B2ldStats {
  std::vector<int> updates, lbfgs_accepted, armijo_used, skipped;
  // Conditions (4) and (5) held at every accepted L-BFGS update (checked, not
  // assumed; the Armijo point satisfies (5) by construction).
  bool conditions_held = true;
};

// The weight decay rho of f for a network of n parameters: `rho` as in
// B2ldOptions::rho.
double BldRho(double rho, int n);

Summary MinimizeB2ld(const B2ldOptions& options, LayeredObjective& objective,
                     Eigen::VectorXd* w, IterationCallback* callback,
                     B2ldStats* stats = nullptr);

enum class MinibatchOrder { kIncremental, kStochastic, kReshuffled };

struct BlingOptions {
  static constexpr const char kName[] = "bling";  // in specs and messages
  double alpha0 = 0.0;  // 0 = 0.5 / max(1, L - 2), or 0.5 when simultaneous
  double decay = 5e-3;  // alpha <- alpha (1 - decay alpha) per minibatch
  double beta = 1e-3;   // normalizer floor
  double gamma = 1e6;   // normalizer ceiling
  int batch_size = 128;
  LayerOrder order = LayerOrder::kBackward;  // kBackward or kForward
  MinibatchOrder minibatch = MinibatchOrder::kIncremental;
  // The IG baseline: one step on all layers along the full minibatch
  // gradient, normalized by its norm.
  bool simultaneous = false;
  // Iterations are epochs (passes over the data); the tolerance is not used.
  StopRules stop;
  uint64_t seed = 0;  // each epoch's minibatch order depends on (seed, epoch)
  double rho = 0.0;   // as B2ldOptions::rho
  // Resume: epochs done before (the checkpoint's iteration).
  int iterations_before = 0;

  absl::Status Validate() const;
};

Summary MinimizeBling(const BlingOptions& options, LayeredObjective& objective,
                      Eigen::VectorXd* w, IterationCallback* callback);

}  // namespace sparrow::core

#endif  // SPARROW_CORE_OPTIM_BLD_BLD_H_
