#include "translate/config.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/train/setup.h"
#include "core/train/stages.h"
#include "core/util/option_error.h"
#include "core/util/status_macros.h"
#include "translate/layered_config.h"
#include "translate/optimizer_config.h"

namespace sparrow::translate {

absl::StatusOr<core::Activation> ToActivation(v1::Activation a,
                                              core::Activation unspecified,
                                              absl::string_view field) {
  switch (a) {
    case v1::ACTIVATION_UNSPECIFIED:
      return unspecified;
    case v1::ACTIVATION_LINEAR:
      return core::Activation::kLinear;
    case v1::ACTIVATION_TANH:
      return core::Activation::kTanh;
    case v1::ACTIVATION_SIGMOID:
      return core::Activation::kSigmoid;
    case v1::ACTIVATION_RELU:
      return core::Activation::kRelu;
    case v1::ACTIVATION_LEAKY_RELU:
      return core::Activation::kLeakyRelu;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat(field, " has an unknown value ", a));
  }
}

namespace {

using core::Activation;

// The subspace fit's Hankel matrices have 2 x block rows x (inputs + outputs)
// rows; FitSubspace bounds those too.
constexpr int kMaxLinearBlockRows = 200;

std::vector<int> Sizes(const google::protobuf::RepeatedField<int32_t>& r) {
  return std::vector<int>(r.begin(), r.end());
}

absl::Status ToMlpConfig(const v1::MlpModel& m, Activation default_output,
                         core::ModelConfig* c) {
  c->kind = core::MlpKind{};
  c->hidden = Sizes(m.hidden());
  c->bias = !m.no_bias();
  SPARROW_ASSIGN_OR_RETURN(
      c->activation,
      ToActivation(m.activation(), Activation::kTanh, "model.mlp.activation"));
  SPARROW_ASSIGN_OR_RETURN(c->output_activation,
                           ToActivation(m.output_activation(), default_output,
                                        "model.mlp.output_activation"));
  return core::ValidateMlpSpec(core::NetworkSpec(*c, 1, 1), "model.mlp",
                               /*limit_params=*/false);
}

absl::Status ToNarxMlpConfig(const v1::NarxMlpModel& n,
                             Activation default_output, core::ModelConfig* c) {
  core::NarxMlpKind& narx = c->kind.emplace<core::NarxMlpKind>();
  narx.simulation_error = n.simulation_error();
  c->hidden = Sizes(n.hidden());
  SPARROW_ASSIGN_OR_RETURN(c->activation,
                           ToActivation(n.activation(), Activation::kTanh,
                                        "model.narx_mlp.activation"));
  c->output_activation = default_output;
  narx.lags.input_lags = n.input_lags();
  narx.lags.output_lags = n.output_lags();
  narx.lags.feedthrough = !n.no_feedthrough();
  narx.linear = n.linear();
  if (narx.linear && default_output != Activation::kLinear) {
    return absl::InvalidArgumentError(
        "model.narx_mlp.linear needs a linear output, and this loss gives a "
        "sigmoid one; use LOSS_MSE, or leave out linear");
  }
  if (n.input_lags() < 0) {
    return core::OptionError("model.narx_mlp.input_lags", n.input_lags(),
                             ">= 0");
  }
  if (n.output_lags() < 0) {
    return core::OptionError("model.narx_mlp.output_lags", n.output_lags(),
                             ">= 0");
  }
  SPARROW_RETURN_IF_ERROR(core::data::ValidateNarxLags(narx.lags));
  return core::ValidateMlpSpec(core::NetworkSpec(*c, 1, 1), "model.narx_mlp",
                               /*limit_params=*/false);
}

absl::StatusOr<core::InitialState> ToInitialState(v1::InitialState s) {
  switch (s) {
    case v1::INITIAL_STATE_UNSPECIFIED:
    case v1::INITIAL_STATE_FREE:
      return core::InitialState::kFree;
    case v1::INITIAL_STATE_ENCODER:
      return core::InitialState::kEncoder;
    case v1::INITIAL_STATE_ZERO:
      return core::InitialState::kZero;
    default:
      return absl::InvalidArgumentError(
          "model.state_space_rnn.initial_state is unknown");
  }
}

// model.state_space_rnn.subsequence_length / subsequence_stride.
absl::Status ToSubsequences(const v1::StateSpaceRnnModel& r,
                            core::StateSpaceRnnKind* kind) {
  const int length = r.subsequence_length(), stride = r.subsequence_stride();
  if (length == 0 || length == core::kWholeTraces) {
    if (stride != 0) {
      return core::OptionError("model.state_space_rnn.subsequence_stride",
                               stride, "0 without subsequence_length");
    }
    kind->subsequence_length = length;
    return absl::OkStatus();
  }
  constexpr int kMaxWindow = 10'000'000;
  if (length < 2 || length > kMaxWindow) {
    return core::OptionError(
        "model.state_space_rnn.subsequence_length", length,
        "in [2, 10000000] (0 = automatic, -1 = whole traces)");
  }
  if (r.initial_state() == v1::INITIAL_STATE_ZERO) {
    return absl::InvalidArgumentError(
        "model.state_space_rnn.subsequence_length needs initial_state "
        "INITIAL_STATE_FREE (each window gets its own trained initial state) "
        "or INITIAL_STATE_ENCODER (the encoder reads it from the samples "
        "before the window); with INITIAL_STATE_ZERO every window would start "
        "from x0 = 0");
  }
  if (stride < 0 || stride > kMaxWindow) {
    return core::OptionError("model.state_space_rnn.subsequence_stride", stride,
                             "in [1, 10000000] (0 = subsequence_length)");
  }
  if (stride > length) {
    return core::OptionError(
        "model.state_space_rnn.subsequence_stride", stride,
        absl::StrCat("at most subsequence_length (", length,
                     "): a longer stride leaves the samples between windows "
                     "out of training"));
  }
  kind->subsequence_length = length;
  kind->subsequence_stride = stride == 0 ? length : stride;
  return absl::OkStatus();
}

absl::Status ToStateSpaceRnnConfig(const v1::StateSpaceRnnModel& r,
                                   Activation default_output,
                                   core::ModelConfig* c) {
  core::StateSpaceRnnKind& kind = c->kind.emplace<core::StateSpaceRnnKind>();
  core::StateSpaceRnnSpec& s = kind.rnn;
  s.nx = r.nx();
  s.fx_hidden = Sizes(r.fx_hidden());
  s.fy_hidden = Sizes(r.fy_hidden());
  SPARROW_ASSIGN_OR_RETURN(s.activation,
                           ToActivation(r.activation(), Activation::kTanh,
                                        "model.state_space_rnn.activation"));
  SPARROW_ASSIGN_OR_RETURN(
      s.output_activation,
      ToActivation(r.output_activation(), default_output,
                   "model.state_space_rnn.output_activation"));
  s.feedthrough = !r.no_feedthrough();
  SPARROW_ASSIGN_OR_RETURN(s.initial_state, ToInitialState(r.initial_state()));
  if (r.has_encoder() && s.initial_state != core::InitialState::kEncoder) {
    return absl::InvalidArgumentError(
        "model.state_space_rnn.encoder is set, but initial_state is not "
        "INITIAL_STATE_ENCODER, so no encoder would be trained; set "
        "\"initial_state\": \"INITIAL_STATE_ENCODER\" or remove encoder");
  }
  s.encoder.hidden = Sizes(r.encoder().hidden());
  s.encoder.past_outputs = r.encoder().past_outputs();
  s.encoder.past_inputs = r.encoder().past_inputs();
  if (r.x0_estimation_samples() < 0) {
    return core::OptionError("model.state_space_rnn.x0_estimation_samples",
                             r.x0_estimation_samples(), ">= 0 (0 means 100)");
  }
  kind.x0_estimation_samples =
      r.x0_estimation_samples() == 0 ? 100 : r.x0_estimation_samples();
  s.linear = r.linear();
  if (r.linear_block_rows() != 0 &&
      (!r.linear() || r.linear_block_rows() <= s.nx ||
       r.linear_block_rows() > kMaxLinearBlockRows)) {
    return core::OptionError("model.state_space_rnn.linear_block_rows",
                             r.linear_block_rows(),
                             absl::StrCat("more than nx (", s.nx,
                                          ") and at most ", kMaxLinearBlockRows,
                                          ", with linear: true (0 means "
                                          "max(2 nx, 10))"));
  }
  kind.linear_block_rows = r.linear_block_rows();
  SPARROW_RETURN_IF_ERROR(ToSubsequences(r, &kind));
  // Sizes only, with data dimensions not known yet; the parameter count is
  // checked at submission (--max-model-params) and by the trainer.
  core::StateSpaceRnnSpec probe = s;
  probe.nu = probe.ny = 1;
  return core::ValidateStateSpaceRnnSpec(probe, "model.state_space_rnn",
                                         /*limit_params=*/false);
}

absl::Status ToPenalty(const v1::Regularization& reg,
                       core::TrainConfig::Penalty* p) {
  using Kind = core::TrainConfig::Penalty::Kind;
  switch (reg.penalty_case()) {
    case v1::Regularization::kL1:
      p->kind = Kind::kL1;
      p->tau = reg.l1().tau();
      break;
    case v1::Regularization::kL0:
      p->kind = Kind::kL0;
      p->tau = reg.l0().tau();
      break;
    case v1::Regularization::kGroupLasso:
      p->kind = Kind::kGroupLasso;
      p->tau = reg.group_lasso().tau();
      break;
    case v1::Regularization::kQuantization:
      p->kind = Kind::kQuantization;
      p->levels.assign(reg.quantization().levels().begin(),
                       reg.quantization().levels().end());
      if (p->levels.empty()) {
        return absl::InvalidArgumentError(
            "regularization.quantization.levels is empty; list the allowed "
            "weight values, e.g. [-0.5, -0.4, ..., 0.5]");
      }
      break;
    case v1::Regularization::kBinary:
      p->kind = Kind::kBinary;
      break;
    case v1::Regularization::PENALTY_NOT_SET:
      break;
  }
  return absl::OkStatus();
}

absl::StatusOr<core::TrainConfig::Scaling> ToScaling(v1::Normalization n) {
  switch (n) {
    case v1::NORMALIZATION_NONE:
      return core::TrainConfig::Scaling::kNone;
    case v1::NORMALIZATION_MINMAX:
      return core::TrainConfig::Scaling::kMinMax;
    case v1::NORMALIZATION_UNSPECIFIED:
    case v1::NORMALIZATION_ZSCORE:
      return core::TrainConfig::Scaling::kZScore;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("normalization has an unknown value ", n,
                       "; use NORMALIZATION_ZSCORE, NORMALIZATION_MINMAX or "
                       "NORMALIZATION_NONE"));
  }
}

absl::StatusOr<core::Precision> ToPrecision(const std::string& precision) {
  if (precision.empty() || precision == "float64") {
    return core::Precision::kFloat64;
  }
  if (precision == "float32") return core::Precision::kFloat32;
  return absl::InvalidArgumentError(
      absl::StrCat("model.precision is \"", precision,
                   "\"; use \"float64\" (default) or \"float32\""));
}

}  // namespace

absl::StatusOr<core::Loss> ToLoss(const v1::LossSpec& l) {
  core::Loss loss;
  switch (l.kind()) {
    case v1::LOSS_UNSPECIFIED:
    case v1::LOSS_MSE:
      loss.kind = core::LossKind::kMse;
      break;
    case v1::LOSS_BINARY_CROSS_ENTROPY:
      loss.kind = core::LossKind::kBinaryCrossEntropy;
      break;
    case v1::LOSS_SOFTMAX_CROSS_ENTROPY:
      loss.kind = core::LossKind::kSoftmaxCrossEntropy;
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("loss.kind has an unknown value ", l.kind()));
  }
  loss.epsilon = l.epsilon();
  loss.one_hot = l.one_hot_targets();
  SPARROW_RETURN_IF_ERROR(loss.Validate());
  return loss;
}

absl::StatusOr<core::ModelConfig> ToModelConfig(const v1::ModelSpec& m,
                                                const core::Loss& loss) {
  core::ModelConfig c;
  const Activation default_output =
      loss.kind == core::LossKind::kBinaryCrossEntropy ? Activation::kSigmoid
                                                       : Activation::kLinear;
  if (m.init_scale() < 0 || !std::isfinite(m.init_scale())) {
    return core::OptionError("model.init_scale", m.init_scale(),
                             "positive (0 means 1)");
  }
  c.init_scale = m.init_scale() == 0 ? 1.0 : m.init_scale();
  SPARROW_ASSIGN_OR_RETURN(c.precision, ToPrecision(m.precision()));
  if (!m.init().empty() && (m.has_narx_mlp() || m.has_state_space_rnn())) {
    return absl::InvalidArgumentError(
        "model.init applies to mlp, cnn, rnn and lstm models; narx_mlp and "
        "state_space_rnn use Glorot-normal weights scaled by init_scale");
  }
  switch (m.kind_case()) {
    case v1::ModelSpec::kMlp: {
      SPARROW_RETURN_IF_ERROR(ToMlpConfig(m.mlp(), default_output, &c));
      SPARROW_ASSIGN_OR_RETURN(c.init, ToInitLaw(m.init()));
      break;
    }
    case v1::ModelSpec::kNarxMlp:
      SPARROW_RETURN_IF_ERROR(
          ToNarxMlpConfig(m.narx_mlp(), default_output, &c));
      break;
    case v1::ModelSpec::kStateSpaceRnn:
      SPARROW_RETURN_IF_ERROR(
          ToStateSpaceRnnConfig(m.state_space_rnn(), default_output, &c));
      break;
    case v1::ModelSpec::kCnn:
    case v1::ModelSpec::kRnn:
    case v1::ModelSpec::kLstm:
      SPARROW_RETURN_IF_ERROR(ToLayeredConfig(m, &c));
      break;
    case v1::ModelSpec::KIND_NOT_SET:
      return absl::InvalidArgumentError(
          "model: set one of mlp, narx_mlp, state_space_rnn, cnn, rnn, lstm "
          "(e.g. \"model\": "
          "{\"mlp\": "
          "{\"hidden\": [16]}})");
  }
  return c;
}

namespace {

absl::Status InStage(int k, const absl::Status& s) {
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat("stages[", k, "].", s.message()));
}

// One stage: its optimizer with its stopping rules (the job's, with the
// fields the stage sets replaced), batch and ADMM options, and NARX training
// mode (the model's when unset).
absl::StatusOr<core::TrainStage> ToStage(const v1::JobSpec& spec, int k,
                                         const core::TrainConfig& c) {
  const v1::Stage& s = spec.stages(k);
  v1::Stopping stopping = spec.stopping();
  stopping.MergeFrom(s.stopping());
  absl::StatusOr<core::StopRules> stop = ToStopRules(stopping);
  if (!stop.ok()) {
    return s.has_stopping() ? InStage(k, stop.status()) : stop.status();
  }
  core::TrainConfig own = c;
  absl::StatusOr<core::OptimizerOptions> optimizer =
      ToOptimizer(s.optimizer(), *stop, &own);
  if (!optimizer.ok()) return InStage(k, optimizer.status());
  core::TrainStage stage;
  stage.name = s.name();
  stage.optimizer = *std::move(optimizer);
  stage.patience = stopping.patience();
  stage.batch_size = own.batch_size;
  stage.bptt_window = own.bptt_window;
  stage.shuffle = own.shuffle;
  stage.threads = own.threads;
  stage.admm = own.admm;
  if (s.has_simulation_error() && !c.model.is<core::NarxMlpKind>()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "stages[", k, "].simulation_error is for narx_mlp models; remove it"));
  }
  if (c.model.is<core::NarxMlpKind>()) {
    stage.simulation_error =
        s.has_simulation_error()
            ? s.simulation_error()
            : c.model.as<core::NarxMlpKind>().simulation_error;
  }
  return stage;
}

absl::StatusOr<core::TrainConfig::ValidationMetric> ToValidationMetric(
    v1::Sweep::Metric m, absl::string_view field) {
  using Metric = core::TrainConfig::ValidationMetric;
  switch (m) {
    case v1::Sweep::METRIC_UNSPECIFIED:
      return Metric::kDefault;
    case v1::Sweep::METRIC_RMSE:
      return Metric::kRmse;
    case v1::Sweep::METRIC_ONE_STEP_RMSE:
      return Metric::kOneStepRmse;
    case v1::Sweep::METRIC_BFR:
      return Metric::kBfr;
    case v1::Sweep::METRIC_ACCURACY:
      return Metric::kAccuracy;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat(field, " is ", static_cast<int>(m),
                       "; use METRIC_RMSE, METRIC_ONE_STEP_RMSE, METRIC_BFR or "
                       "METRIC_ACCURACY"));
  }
}

// JobSpec.stages: every stage's own fields, the first one's in the config.
absl::Status ToStages(const v1::JobSpec& spec, core::TrainConfig* c) {
  if (spec.optimizer().method_case() != v1::OptimizerSpec::METHOD_NOT_SET) {
    return absl::InvalidArgumentError(
        "optimizer: leave it unset when the spec has stages; each stage has "
        "its own (stages[0].optimizer, ...)");
  }
  if (spec.stages_size() > core::kMaxStages) {
    return absl::InvalidArgumentError(
        absl::StrCat("stages has ", spec.stages_size(), " stages; at most ",
                     core::kMaxStages, " are allowed"));
  }
  for (int k = 0; k < spec.stages_size(); ++k) {
    if (spec.stages(k).stopping().validation_metric() !=
        v1::Sweep::METRIC_UNSPECIFIED) {
      return absl::InvalidArgumentError(absl::StrCat(
          "stages[", k,
          "].stopping.validation_metric: the stages of a job share one; set "
          "it in the job's stopping"));
    }
    SPARROW_ASSIGN_OR_RETURN(core::TrainStage stage, ToStage(spec, k, *c));
    c->stages.push_back(std::move(stage));
  }
  core::UseStage(c->stages[0], c);
  return absl::OkStatus();
}

}  // namespace

bool HasValidation(const v1::JobSpec& spec) {
  return spec.split().validation_size() > 0 ||
         spec.split().validation_fraction() > 0 || spec.has_validation_data();
}

absl::Status CheckValidationMetric(const v1::JobSpec& spec,
                                   v1::Sweep::Metric metric,
                                   absl::string_view field) {
  if (metric == v1::Sweep::METRIC_UNSPECIFIED) return absl::OkStatus();
  core::TrainConfig c;
  SPARROW_ASSIGN_OR_RETURN(c.validation_metric,
                           ToValidationMetric(metric, field));
  const std::string name = v1::Sweep::Metric_Name(metric);
  if (!HasValidation(spec)) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": ", name,
        " is measured on validation data; set split.validation (rows), "
        "split.validation_fraction or validation_data"));
  }
  // The model's own rule; a loss or model that does not translate is
  // refused by its own checks.
  const absl::StatusOr<core::Loss> loss = ToLoss(spec.loss());
  if (!loss.ok()) return absl::OkStatus();
  c.loss = *loss;
  absl::StatusOr<core::ModelConfig> model = ToModelConfig(spec.model(), c.loss);
  if (!model.ok()) return absl::OkStatus();
  c.model = *std::move(model);
  const char* needs = core::ValidationMetricNeeds(c);
  if (needs == nullptr) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": ", name, " needs ", needs,
                   "; this spec's model does not have it. Use METRIC_RMSE, "
                   "or leave it unset"));
}

absl::StatusOr<core::TrainConfig> ToTrainConfig(const v1::JobSpec& spec) {
  core::TrainConfig c;
  SPARROW_ASSIGN_OR_RETURN(c.loss, ToLoss(spec.loss()));
  SPARROW_ASSIGN_OR_RETURN(c.model, ToModelConfig(spec.model(), c.loss));
  c.rho_x0 = spec.regularization().rho_x0();
  c.rho_theta = spec.regularization().rho_theta();
  SPARROW_RETURN_IF_ERROR(ToPenalty(spec.regularization(), &c.penalty));
  if (spec.stages().empty()) {
    SPARROW_ASSIGN_OR_RETURN(const core::StopRules stop,
                             ToStopRules(spec.stopping()));
    c.patience = spec.stopping().patience();
    SPARROW_ASSIGN_OR_RETURN(c.optimizer,
                             ToOptimizer(spec.optimizer(), stop, &c));
  } else {
    SPARROW_RETURN_IF_ERROR(ToStages(spec, &c));
  }
  SPARROW_RETURN_IF_ERROR(CheckValidationMetric(
      spec, spec.stopping().validation_metric(), "stopping.validation_metric"));
  SPARROW_ASSIGN_OR_RETURN(
      c.validation_metric,
      ToValidationMetric(spec.stopping().validation_metric(),
                         "stopping.validation_metric"));
  SPARROW_ASSIGN_OR_RETURN(c.scaling, ToScaling(spec.normalization()));
  c.seed = spec.seed();
  SPARROW_RETURN_IF_ERROR(c.Validate());
  return c;
}

}  // namespace sparrow::translate
