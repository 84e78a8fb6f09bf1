#include "core/optim/first_order/first_order.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/optim/internal/epoch_loop.h"
#include "core/optim/internal/epoch_seed.h"
#include "core/util/option_error.h"

namespace sparrow::core {

absl::Status FirstOrderOptions::Validate() const {
  if (!(learning_rate > 0.0) || !std::isfinite(learning_rate)) {
    return OptionError("learning_rate", learning_rate, "positive and finite");
  }
  if (!(momentum >= 0.0 && momentum < 1.0))
    return OptionError("momentum", momentum, "in [0, 1)");
  if (!(beta1 >= 0.0 && beta1 < 1.0))
    return OptionError("beta1", beta1, "in [0, 1)");
  if (!(beta2 >= 0.0 && beta2 < 1.0))
    return OptionError("beta2", beta2, "in [0, 1)");
  if (!(epsilon > 0.0)) return OptionError("epsilon", epsilon, "positive");
  if (!(clip_norm >= 0.0) || !std::isfinite(clip_norm)) {
    return OptionError("clip_norm", clip_norm, ">= 0 and finite (0 = off)");
  }
  return stop.Validate();
}

FirstOrderOptimizer::FirstOrderOptimizer(const FirstOrderOptions& options)
    : options_(options) {}

void FirstOrderOptimizer::Initialize(int n) {
  state_.m.setZero(n);
  state_.v.setZero(n);
  if (options_.amsgrad) state_.v_max.setZero(n);
  state_.t = 0;
  grad_.resize(n);
  step_.resize(n);
}

void FirstOrderOptimizer::PackState(Eigen::VectorXd* out) const {
  const Eigen::Index n = state_.m.size();
  const Eigen::Index k = options_.amsgrad ? 3 : 2;
  out->resize(1 + k * n);
  (*out)(0) = static_cast<double>(state_.t);
  out->segment(1, n) = state_.m;
  out->segment(1 + n, n) = state_.v;
  if (options_.amsgrad) out->segment(1 + 2 * n, n) = state_.v_max;
}

bool FirstOrderOptimizer::UnpackState(const Eigen::VectorXd& in) {
  const Eigen::Index n = state_.m.size();
  const Eigen::Index k = options_.amsgrad ? 3 : 2;
  // The update count must fit its integer (2^53: doubles count exactly that
  // far); a larger one, e.g. from a corrupt checkpoint, is refused like a
  // wrong size rather than converted with undefined behavior.
  if (in.size() != 1 + k * n || !in.allFinite() || !(in(0) >= 0) ||
      in(0) > 9007199254740992.0) {
    return false;
  }
  state_.t = static_cast<long long>(in(0));
  state_.m = in.segment(1, n);
  state_.v = in.segment(1 + n, n);
  if (options_.amsgrad) state_.v_max = in.segment(1 + 2 * n, n);
  return true;
}

void FirstOrderOptimizer::Update(Eigen::VectorXd* w) {
  ++state_.t;
  const double lr = options_.learning_rate;
  if (options_.method == FirstOrderOptions::Method::kSgd) {
    if (options_.momentum == 0.0) {
      *w -= lr * grad_;
    } else {
      state_.m = options_.momentum * state_.m + grad_;
      if (options_.nesterov) {
        *w -= lr * (grad_ + options_.momentum * state_.m);
      } else {
        *w -= lr * state_.m;
      }
    }
    if (proximal_ != nullptr) {
      step_.setConstant(lr);
      proximal_->Apply(step_, w);
    }
    return;
  }
  // Adam (Kingma & Ba, Alg. 1) with bias correction; AMSGrad keeps max(v)
  // (Reddi et al., Alg. 2, with PyTorch's bias-corrected form so the two agree
  // for the same learning rate).
  const double b1 = options_.beta1;
  const double b2 = options_.beta2;
  state_.m = b1 * state_.m + (1.0 - b1) * grad_;
  state_.v = b2 * state_.v + (1.0 - b2) * grad_.cwiseAbs2();
  const double c1 = 1.0 - std::pow(b1, static_cast<double>(state_.t));
  const double c2 = 1.0 - std::pow(b2, static_cast<double>(state_.t));
  const double step = lr / c1;
  const Eigen::VectorXd* v = &state_.v;
  if (options_.amsgrad) {
    state_.v_max = state_.v_max.cwiseMax(state_.v);
    v = &state_.v_max;
  }
  w->array() -=
      step * state_.m.array() / ((v->array() / c2).sqrt() + options_.epsilon);
  if (proximal_ != nullptr) {
    step_.array() = lr / ((v->array() / c2).sqrt() + options_.epsilon);
    proximal_->Apply(step_, w);
  }
}

double FirstOrderOptimizer::Step(Objective& objective, Eigen::VectorXd* w) {
  Rng rng(internal::EpochSeed(options_.seed, state_.t));
  objective.StartEpoch(*w, &rng);
  const int batches = objective.num_batches();
  double sum = 0.0;
  for (int b = 0; b < batches; ++b) {
    const double loss = objective.EvaluateBatch(*w, b, &grad_);
    sum += loss;
    if (!std::isfinite(loss) || !grad_.allFinite()) {
      return std::numeric_limits<double>::infinity();
    }
    if (proximal_ != nullptr) proximal_->FilterGradient(&grad_);
    if (options_.clip_norm > 0.0) {
      const double norm = grad_.norm();
      if (norm > options_.clip_norm) grad_ *= options_.clip_norm / norm;
    }
    Update(w);
  }
  return sum / batches;
}

Summary MinimizeFirstOrder(const FirstOrderOptions& options,
                           Objective& objective, Eigen::VectorXd* w,
                           IterationCallback* callback) {
  FirstOrderOptimizer optimizer(options);
  optimizer.Initialize(objective.num_params());
  if (options.initial_state.size() > 0) {
    optimizer.UnpackState(options.initial_state);
  }
  return internal::RunEpochs(options.stop, options.learning_rate, optimizer,
                             objective, w, callback);
}

}  // namespace sparrow::core
