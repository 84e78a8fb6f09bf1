#include "core/train/setup.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/models/pruning.h"
#include "core/train/model_registry.h"
#include "core/train/network_objective.h"
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

}  // namespace

namespace {

// A warm start's scaling, when it has the data's channel count (the trainer
// then checks that the channels are the same ones, by name).
const data::Normalizer* WarmScaling(
    const data::Normalizer* scaling,
    const std::vector<const Eigen::MatrixXd*>& blocks) {
  if (scaling == nullptr || blocks.empty() ||
      scaling->size() != blocks.front()->rows()) {
    return nullptr;
  }
  return scaling;
}

}  // namespace

data::Normalizer FitInputScaling(
    const TrainConfig& config,
    const std::vector<const Eigen::MatrixXd*>& blocks) {
  const Model* warm = config.warm_start.get();
  if (auto* s = WarmScaling(warm ? &warm->input_scaling : nullptr, blocks)) {
    return *s;
  }
  return FitScaling(config.scaling, blocks);
}

// Targets of a classification loss stay 0/1 or labels.
data::Normalizer FitOutputScaling(
    const TrainConfig& config,
    const std::vector<const Eigen::MatrixXd*>& blocks) {
  if (IsClassification(config.loss)) {
    return FitScaling(TrainConfig::Scaling::kNone, blocks);
  }
  const Model* warm = config.warm_start.get();
  if (auto* s = WarmScaling(warm ? &warm->output_scaling : nullptr, blocks)) {
    return *s;
  }
  return FitScaling(config.scaling, blocks);
}

namespace {

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

}  // namespace

// An MLP on the rows of setup->train_table (static MLP, or NARX on its
// regressors), with the table objective; first-order methods on several
// threads, and RLS, get the threaded NetworkObjective over the same network.
absl::Status SetupNetwork(const TrainConfig& config, int n_in, int n_out,
                          absl::string_view name, Rng* rng, Model* model,
                          TrainSetup* setup) {
  const MlpSpec spec = NetworkSpec(config.model, n_in, n_out);
  SPARROW_RETURN_IF_ERROR(ValidateMlpSpec(spec, name));
  setup->mlp = Mlp(spec);
  model->params.resize(setup->mlp.num_params());
  setup->mlp.Initialize(config.model.init_scale, rng, model->params.data());
  const bool threaded = config.threads > 1 && IsFirstOrder(config.optimizer);
  if ((threaded || IsRls(config.optimizer)) && config.model.is<MlpKind>()) {
    setup->objective = std::make_unique<NetworkObjective>(
        &setup->mlp.network(), &setup->train_table.x, &setup->train_table.y,
        config.loss, config.rho_theta, config.batch_size, config.shuffle,
        config.threads);
    return absl::OkStatus();
  }
  setup->objective = std::make_unique<TableObjective>(
      &setup->mlp, &setup->train_table.x, &setup->train_table.y, config.loss,
      config.rho_theta, config.batch_size, config.shuffle);
  return absl::OkStatus();
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
  model->input_scaling = FitInputScaling(config, us);
  model->output_scaling = FitOutputScaling(config, ys);
  setup->train_seq = Scaled(s, model->input_scaling, model->output_scaling);
  return absl::OkStatus();
}

bool IsClassification(const Loss& loss) {
  return loss.kind != LossKind::kMse || loss.one_hot;
}

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

void DescribeNetwork(const TrainSetup& setup, const Eigen::VectorXd& params,
                     Metrics* metrics) {
  metrics->layers = WeightSparsity(setup.mlp.network(), params.data());
  metrics->removed = DeadUnitNames(FindDeadUnits(setup.mlp, params.data()),
                                   setup.train_table.input_names);
}

absl::Status BuildSetup(const TrainConfig& config, const TrainData& data,
                        Rng* rng, Model* model, TrainSetup* setup) {
  return FamilyOf(config.model.kind).Setup(config, data, rng, model, setup);
}

}  // namespace sparrow::core
