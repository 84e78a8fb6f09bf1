#include "core/train/setup.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/data/narx.h"
#include "core/util/status_macros.h"

namespace sparrow::core {
namespace {

data::Normalizer FitScaling(TrainConfig::Scaling scaling,
                            const std::vector<const Eigen::MatrixXd*>& blocks) {
  switch (scaling) {
    case TrainConfig::Scaling::kZScore:
      return data::Normalizer::FitZScore(blocks);
    case TrainConfig::Scaling::kMinMax:
      return data::Normalizer::FitMinMax(blocks);
    case TrainConfig::Scaling::kNone:
      break;
  }
  return data::Normalizer::Identity(
      blocks.empty() ? 0 : static_cast<int>(blocks.front()->rows()));
}

// Targets of a classification loss stay 0/1 or labels.
data::Normalizer FitOutputScaling(
    const TrainConfig& config,
    const std::vector<const Eigen::MatrixXd*>& blocks) {
  return FitScaling(IsClassification(config.loss) ? TrainConfig::Scaling::kNone
                                                  : config.scaling,
                    blocks);
}

// Normalizes every trace with the given scalings.
data::SequenceData Scaled(const data::SequenceData& seq,
                          const data::Normalizer& in,
                          const data::Normalizer& out) {
  data::SequenceData s = seq;
  for (data::Trace& t : s.traces) {
    in.Apply(&t.u);
    out.Apply(&t.y);
  }
  return s;
}

// An MLP on the rows of setup->train_table (static MLP, or NARX on its
// regressors), with the table objective.
absl::Status SetupNetwork(const TrainConfig& config, int n_in, int n_out,
                          absl::string_view name, Rng* rng, Model* model,
                          TrainSetup* setup) {
  const MlpSpec spec = NetworkSpec(config.model, n_in, n_out);
  SPARROW_RETURN_IF_ERROR(ValidateMlpSpec(spec, name));
  setup->mlp = Mlp(spec);
  model->params.resize(setup->mlp.num_params());
  setup->mlp.Initialize(config.model.init_scale, rng, model->params.data());
  setup->objective = std::make_unique<TableObjective>(
      &setup->mlp, &setup->train_table.x, &setup->train_table.y, config.loss,
      config.rho_theta, config.batch_size, config.shuffle);
  return absl::OkStatus();
}

// A softmax classifier on a single label column gets one output per class.
absl::Status OneHotOutputs(const data::TableData& t, Model* model,
                           TrainSetup* setup, int* n_out) {
  *n_out = static_cast<int>(t.y.maxCoeff()) + 1;
  SPARROW_ASSIGN_OR_RETURN(setup->train_table.y, OneHot(t.y, *n_out));
  model->output_scaling = data::Normalizer::Identity(*n_out);
  model->output_names.assign(*n_out, "");
  for (int c = 0; c < *n_out; ++c) {
    model->output_names[c] = absl::StrCat(t.output_names[0], "=", c);
  }
  return absl::OkStatus();
}

absl::Status SetupMlp(const TrainConfig& config, const TrainData& data,
                      Rng* rng, Model* model, TrainSetup* setup) {
  const data::TableData& t = data.train_table;
  if (t.num_samples() == 0)
    return absl::InvalidArgumentError("the training split is empty");
  setup->train_table = t;
  model->input_names = t.input_names;
  model->output_names = t.output_names;
  model->input_scaling = FitScaling(config.scaling, {&t.x});
  model->output_scaling = FitOutputScaling(config, {&t.y});
  model->input_scaling.Apply(&setup->train_table.x);
  model->output_scaling.Apply(&setup->train_table.y);
  int n_out = static_cast<int>(t.y.rows());
  if (config.loss.kind == LossKind::kSoftmaxCrossEntropy && n_out == 1) {
    SPARROW_RETURN_IF_ERROR(OneHotOutputs(t, model, setup, &n_out));
  }
  return SetupNetwork(config, static_cast<int>(t.x.rows()), n_out, "model.mlp",
                      rng, model, setup);
}

// Scalings fitted on the training traces; the scaled traces in the setup.
absl::Status ScaleTraces(const TrainConfig& config, const TrainData& data,
                         Model* model, TrainSetup* setup) {
  const data::SequenceData& s = data.train_seq;
  if (s.traces.empty())
    return absl::InvalidArgumentError("the training split is empty");
  model->input_names = s.input_names;
  model->output_names = s.output_names;
  std::vector<const Eigen::MatrixXd*> us, ys;
  for (const data::Trace& t : s.traces) {
    us.push_back(&t.u);
    ys.push_back(&t.y);
  }
  model->input_scaling = FitScaling(config.scaling, us);
  model->output_scaling = FitOutputScaling(config, ys);
  setup->train_seq = Scaled(s, model->input_scaling, model->output_scaling);
  return absl::OkStatus();
}

absl::Status SetupNarx(const TrainConfig& config, const TrainData& data,
                       Rng* rng, Model* model, TrainSetup* setup) {
  SPARROW_RETURN_IF_ERROR(ScaleTraces(config, data, model, setup));
  SPARROW_ASSIGN_OR_RETURN(
      setup->train_table,
      data::BuildNarxRegressors(setup->train_seq, config.model.lags));
  SPARROW_RETURN_IF_ERROR(
      SetupNetwork(config, static_cast<int>(setup->train_table.x.rows()),
                   data.train_seq.n_y, "model.narx_mlp", rng, model, setup));
  if (config.model.simulation_error) {
    setup->one_step.reset(
        static_cast<TableObjective*>(setup->objective.release()));
    setup->objective = std::make_unique<NarxSimulationObjective>(
        &setup->mlp, config.model.lags, &setup->train_seq.traces, config.loss,
        config.rho_theta, setup->one_step.get());
  }
  return absl::OkStatus();
}

// Every trace must be longer than the encoder window plus one sample.
absl::Status CheckTraceLengths(const TrainData& data, int warmup) {
  const struct {
    const data::SequenceData* part;
    const char* name;
  } parts[] = {{&data.train_seq, "training"},
               {&data.validation_seq, "validation"},
               {&data.test_seq, "test"}};
  for (const auto& [part, name] : parts) {
    for (size_t t = 0; t < part->traces.size(); ++t) {
      const int length = part->traces[t].length();
      if (length > warmup + 1) continue;
      std::string message =
          absl::StrCat(name, " trace ", t + 1, " has ", length,
                       " samples; the model needs more than ", warmup + 1);
      if (part == &data.train_seq) {
        absl::StrAppend(&message, " (the encoder uses the first ", warmup, ")");
      }
      return absl::InvalidArgumentError(message);
    }
  }
  return absl::OkStatus();
}

absl::Status SetupRnn(const TrainConfig& config, const TrainData& data,
                      Rng* rng, Model* model, TrainSetup* setup) {
  SPARROW_RETURN_IF_ERROR(ScaleTraces(config, data, model, setup));
  const data::SequenceData& s = data.train_seq;
  StateSpaceRnnSpec& spec = model->config.rnn;
  spec.nu = s.n_u;
  spec.ny = s.n_y;
  spec.num_traces = static_cast<int>(s.traces.size());
  SPARROW_RETURN_IF_ERROR(
      ValidateStateSpaceRnnSpec(spec, "model.state_space_rnn"));
  setup->rnn = StateSpaceRnn(spec);
  SPARROW_RETURN_IF_ERROR(CheckTraceLengths(data, setup->rnn.warmup()));
  model->params.resize(setup->rnn.num_params());
  setup->rnn.Initialize(config.model.init_scale, rng, model->params.data());
  setup->objective = std::make_unique<SequenceObjective>(
      &setup->rnn, &setup->train_seq.traces, config.loss, config.rho_x0,
      config.rho_theta, config.bptt_window, config.shuffle);
  // Sparsity counts network weights only: free initial states are not part
  // of the model.
  if (spec.initial_state == InitialState::kFree) {
    setup->skip = setup->rnn.x0_size();
  }
  return absl::OkStatus();
}

}  // namespace

bool IsClassification(const Loss& loss) { return loss.kind != LossKind::kMse; }

absl::StatusOr<Eigen::MatrixXd> OneHot(const Eigen::MatrixXd& labels,
                                       int classes) {
  Eigen::MatrixXd y = Eigen::MatrixXd::Zero(classes, labels.cols());
  for (Eigen::Index j = 0; j < labels.cols(); ++j) {
    const double v = labels(0, j);
    if (v < 0 || v >= classes || v != std::floor(v)) {
      return absl::InvalidArgumentError(
          absl::StrCat("softmax_cross_entropy needs integer class labels 0..",
                       classes - 1, "; sample ", j + 1, " has ", v));
    }
    y(static_cast<int>(v), j) = 1.0;
  }
  return y;
}

absl::Status BuildSetup(const TrainConfig& config, const TrainData& data,
                        Rng* rng, Model* model, TrainSetup* setup) {
  switch (config.model.kind) {
    case ModelKind::kMlp:
      return SetupMlp(config, data, rng, model, setup);
    case ModelKind::kNarxMlp:
      return SetupNarx(config, data, rng, model, setup);
    case ModelKind::kStateSpaceRnn:
      return SetupRnn(config, data, rng, model, setup);
  }
  return absl::InvalidArgumentError("unknown model kind");
}

}  // namespace sparrow::core
