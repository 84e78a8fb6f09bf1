// RLS (core/optim/rls) on an mlp, cnn, rnn or lstm model through the threaded
// NetworkObjective. With a cross-entropy loss the output layer is trained by
// Adam (the paper's hybrid mode, HRLS) unless the spec asks for RLS there;
// with LOSS_MSE every layer is RLS and the gradient is halved so that each
// block sees the paper's (1 / 2M) ||Z - Z*||^2.
#include "core/optim/rls/rls.h"

#include "absl/strings/str_cat.h"
#include "core/optim/rls/state.h"
#include "core/train/methods.h"
#include "core/util/status_macros.h"

namespace sparrow::core {

absl::Status CheckMethod(const RlsOptions& options, const TrainConfig& config) {
  const ModelConfig& m = config.model;
  if (!m.is<MlpKind>() && !m.is<CnnKind>() && !m.is<RnnKind>() &&
      !m.is<LstmKind>()) {
    return absl::InvalidArgumentError(
        "optimizer.rls trains mlp, cnn, rnn and lstm models; for narx_mlp "
        "and state_space_rnn use nails, nailm, adam or lbfgs");
  }
  if (config.batch_size <= 0) {
    return absl::InvalidArgumentError(
        "optimizer.rls.batch.batch_size must be set (the paper uses 128): "
        "RLS updates its matrices once per minibatch");
  }
  if (config.loss.kind == LossKind::kBinaryCrossEntropy) {
    return absl::InvalidArgumentError(
        "optimizer.rls takes LOSS_MSE (all layers RLS) or "
        "LOSS_SOFTMAX_CROSS_ENTROPY (hybrid: Adam on the output layer)");
  }
  return OptionsStatus(options.Validate(), "rls");
}

absl::StatusOr<MethodResult> RunMethod(const RlsOptions& options,
                                       const TrainConfig& config,
                                       TrainSetup* setup, Eigen::VectorXd* w,
                                       IterationCallback* callback, Model*) {
  auto* objective = dynamic_cast<BlockObjective*>(setup->objective.get());
  if (objective == nullptr) {
    return absl::InternalError(
        "optimizer.rls: the model's objective reports no parameter blocks");
  }
  RlsOptions o = options;
  o.seed = config.seed;
  o.threads = config.threads;
  if (config.loss.kind == LossKind::kMse) o.gradient_scale = 0.5;
  if (!o.adam_output_layer) {
    o.adam_output_layer = config.loss.kind != LossKind::kMse;
  }
  SPARROW_RETURN_IF_ERROR(
      OptionsStatus(CheckRlsBlocks(objective->matrix_blocks(), o), "rls"));
  // MinimizeRls keeps fresh P matrices when the state does not fit; a run
  // from them would not continue the checkpoint, so a misfit is an error.
  if (!RlsStateFits(o, objective->matrix_blocks(), objective->num_params())) {
    return ResumeStateError("rls", o.initial_state.size());
  }
  MethodResult result;
  result.summary = MinimizeRls(o, *objective, w, callback);
  return result;
}

// P, the momentum, Adam's moments and the update count continue where the
// checkpoint left them.
void ResumeMethod(const ResumePoint& point, const TrainConfig&,
                  RlsOptions* options) {
  options->initial_state = point.state;
}

}  // namespace sparrow::core
