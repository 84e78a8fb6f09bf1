// First-order baselines: SGD with (Nesterov) momentum, Adam and AMSGrad (Reddi
// et al. 2018), minibatch over an Objective's batches. One Step() is one epoch.
#ifndef SPARROW_CORE_OPTIM_FIRST_ORDER_FIRST_ORDER_H_
#define SPARROW_CORE_OPTIM_FIRST_ORDER_FIRST_ORDER_H_

#include <string>
#include <utility>
#include <vector>

#include "Eigen/Core"
#include "absl/status/status.h"
#include "core/optim/internal/run_monitor.h"
#include "core/optim/problem.h"
#include "core/optim/stop_rules.h"

namespace sparrow::core {

struct FirstOrderOptions {
  enum class Method { kSgd, kAdam };
  Method method = Method::kAdam;
  // Step size, > 0: Adam's 1e-3 (Kingma & Ba); SgdOptions sets SGD's 0.01.
  double learning_rate = 1e-3;
  // SGD: heavy-ball momentum in [0, 1); Nesterov's variant when nesterov is
  // set.
  double momentum = 0.0;
  bool nesterov = false;
  // Adam: decay rates in [0, 1) and the denominator guard (> 0).
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-8;
  // AMSGrad: divide by the running maximum of the second-moment estimate.
  bool amsgrad = false;
  // > 0: each minibatch gradient whose global L2 norm exceeds this is scaled
  // down to it before the update (PyTorch's clip_grad_norm_); 0 = off.
  double clip_norm = 0.0;
  // Iterations are epochs; tolerance is the absolute change of the epoch's
  // reported loss.
  StopRules stop;
  uint64_t seed = 0;  // minibatch order
  // Resume: a state reported in IterationRecord::optimizer_state (update
  // count and moments); ignored when its size does not fit the problem.
  Eigen::VectorXd initial_state;

  absl::Status Validate() const;
};

// The two first-order methods as the trainer's optimizer choices: the same
// options with the method (and SGD's step size) fixed.
struct SgdOptions : FirstOrderOptions {
  static constexpr const char kName[] = "sgd";
  SgdOptions() {
    method = Method::kSgd;
    learning_rate = 0.01;
  }
};
struct AdamOptions : FirstOrderOptions {
  static constexpr const char kName[] = "adam";
  AdamOptions() { method = Method::kAdam; }
};

// A non-smooth term handled by a proximal step after every update (proximal
// SGD / Adam), and a mask on the gradient. Not owned by the optimizer.
class ProximalTerm {
 public:
  virtual ~ProximalTerm() = default;
  // Called on every minibatch gradient before the update, e.g. to zero the
  // gradient of pruned parameters.
  virtual void FilterGradient(Eigen::VectorXd* /*grad*/) const {}
  // w <- prox of the term, where step(k) is the update's effective step size
  // for coordinate k (the learning rate for SGD, lr / (sqrt(v_hat) + eps) for
  // Adam: the inverse of the diagonal metric of the update).
  virtual void Apply(const Eigen::VectorXd& step, Eigen::VectorXd* w) const = 0;
};

// Step-wise optimizer: Initialize, then Step() once per epoch; the server can
// checkpoint between steps from the public state.
class FirstOrderOptimizer {
 public:
  struct State {
    Eigen::VectorXd m, v, v_max;  // Adam moments / SGD velocity in m
    long long t = 0;              // update count
  };

  explicit FirstOrderOptimizer(const FirstOrderOptions& options);
  void Initialize(int num_params);
  // [t, m, v, v_max (AMSGrad)] as one vector, and back (false, leaving the
  // state as it was, when the size does not fit, a value is not finite or the
  // update count t is negative or above 2^53).
  void PackState(Eigen::VectorXd* out) const;
  bool UnpackState(const Eigen::VectorXd& in);
  // One epoch over all minibatches; returns the mean batch loss (the full-batch
  // loss before the update when there is one batch).
  double Step(Objective& objective, Eigen::VectorXd* w);
  // Adds a proximal step after every update (nullptr: none).
  void set_proximal(const ProximalTerm* term) { proximal_ = term; }
  const State& state() const { return state_; }
  // Progress extras: none.
  std::vector<std::pair<std::string, double>> Extras() const { return {}; }
  State* mutable_state() { return &state_; }

 private:
  void Update(Eigen::VectorXd* w);

  FirstOrderOptions options_;
  State state_;
  Eigen::VectorXd grad_;
  Eigen::VectorXd step_;  // per-coordinate step sizes for the proximal term
  const ProximalTerm* proximal_ = nullptr;
};

// Runs until a stopping rule holds. On divergence w is the last finite iterate.
Summary MinimizeFirstOrder(const FirstOrderOptions& options,
                           Objective& objective, Eigen::VectorXd* w,
                           IterationCallback* callback);

}  // namespace sparrow::core

#endif  // SPARROW_CORE_OPTIM_FIRST_ORDER_FIRST_ORDER_H_
