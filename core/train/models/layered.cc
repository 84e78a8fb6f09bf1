#include "core/train/models/layered.h"

#include <algorithm>
#include <cmath>
#include <variant>

#include "absl/strings/str_cat.h"
#include "core/models/layers/recurrent.h"
#include "core/models/mlp.h"
#include "core/train/network_objective.h"
#include "core/train/setup.h"
#include "core/util/status_macros.h"

namespace sparrow::core {
namespace {

// Samples per forward pass when predicting: at most 256, and at most
// kPredictValues doubles of activations and workspaces (256 MB), since
// Predict runs inside sparrowd.
constexpr int kPredictChunk = 256;
constexpr double kPredictValues = 32.0 * 1024 * 1024;

// The targets the network fits: a classifier (softmax, or MSE with one-hot
// targets) on one label column gets one-hot columns (and output names
// "label=c"); other targets are scaled.
absl::Status Targets(const TrainConfig& config, const data::TableData& t,
                     Model* model, TrainSetup* setup) {
  if (config.loss.OneHotTargets() && t.y.rows() == 1) {
    const int classes = static_cast<int>(t.y.maxCoeff()) + 1;
    SPARROW_ASSIGN_OR_RETURN(setup->train_table.y, OneHot(t.y, classes));
    model->output_scaling = data::Normalizer::Identity(classes);
    model->output_names.assign(classes, "");
    for (int c = 0; c < classes; ++c) {
      model->output_names[c] = absl::StrCat(t.output_names[0], "=", c);
    }
    return absl::OkStatus();
  }
  model->output_names = t.output_names;
  model->output_scaling = FitOutputScaling(config, {&t.y});
  setup->train_table.y = t.y;
  model->output_scaling.Apply(&setup->train_table.y);
  return absl::OkStatus();
}

bool IsIdentity(const data::Normalizer& n) {
  return (n.mean.array() == 0.0).all() && (n.scale.array() == 1.0).all();
}

}  // namespace

absl::Status CheckLayerValues(int64_t value, const std::string& field,
                              const char* what) {
  if (value <= kMaxLayerValues) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      field, ": ", what, " would be ", value, "; a layer may have at most ",
      kMaxLayerValues, " (make it smaller)"));
}

absl::StatusOr<Network> CheckedNetwork(
    std::vector<std::shared_ptr<const Layer>> layers,
    const std::string& field) {
  int64_t params = 0;
  for (const auto& l : layers) params += l->num_params();
  if (params > kMaxNetworkParams) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, " would have ", params,
        " parameters; the library allows at most ", kMaxNetworkParams));
  }
  return Network(std::move(layers));
}

int SquareSide(int n) {
  const int side = static_cast<int>(std::lround(std::sqrt(n)));
  return side * side == n ? side : 0;
}

void ResolveImageShape(int channels, int height, int width,
                       ModelConfig* config) {
  const auto* family =
      dynamic_cast<const LayeredFamily*>(&FamilyOf(config->kind));
  if (family == nullptr) return;
  data::TableData shape;
  shape.image_channels = channels;
  shape.image_height = height;
  shape.image_width = width;
  family->Resolve(channels * height * width, &shape, config);
}

absl::Status LayeredFamily::Check(const TrainConfig& config) const {
  if (IsFirstOrder(config.optimizer) || IsRls(config.optimizer)) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("a ", name(),
                   " model trains with optimizer sgd, adam, lbfgs or rls; the "
                   "chosen optimizer supports other model kinds only"));
}

absl::StatusOr<int64_t> LayeredFamily::CountParameters(
    const ModelConfig& config, int n_inputs, int n_outputs) const {
  ModelConfig resolved = config;
  Resolve(n_inputs, nullptr, &resolved);
  SPARROW_ASSIGN_OR_RETURN(const Network net,
                           Build(resolved, n_inputs, n_outputs));
  int64_t params = 0;
  for (int i = 0; i < net.num_layers(); ++i) params += net.block(i).size;
  return params;
}

// Every layer's output and about two more buffers of its size (pre-
// activations, deltas, gate values) per sample.
double LayeredFamily::ActivationWidth(const ModelConfig& config, int inputs,
                                      int outputs) const {
  ModelConfig resolved = config;
  Resolve(inputs, nullptr, &resolved);
  const absl::StatusOr<Network> net = Build(resolved, inputs, outputs);
  if (!net.ok()) return inputs + outputs;
  double width = inputs;
  for (int i = 0; i < net->num_layers(); ++i) {
    const Layer& l = net->layer(i);
    width += 3.0 * l.output_shape().size() + l.input_shape().size();
    // Float32 products: float copies of a dense layer's input and deltas.
    if (config.precision == Precision::kFloat32) {
      width += l.input_shape().size() + l.output_shape().size();
    }
    // Gates, cell states and their gradients at every step.
    if (const auto* r = dynamic_cast<const RecurrentLayer*>(&l)) {
      width += 12.0 * r->steps() * r->hidden();
    }
  }
  return width;
}

absl::Status LayeredFamily::Setup(const TrainConfig& config,
                                  const TrainData& data, Rng* rng, Model* model,
                                  TrainSetup* setup) const {
  const data::TableData& t = data.train_table;
  if (t.num_samples() == 0) {
    return absl::InvalidArgumentError("the training split is empty");
  }
  const int n_in = static_cast<int>(t.x.rows());
  Resolve(n_in, &t, &model->config);
  model->input_names = t.input_names;
  model->input_scaling = FitInputScaling(config, {&t.x});
  // Unscaled inputs (images in [0, 1]) are used in place: no copy of the
  // largest array of the run.
  const Eigen::MatrixXd* x = &t.x;
  if (!IsIdentity(model->input_scaling)) {
    setup->train_table.x = t.x;
    model->input_scaling.Apply(&setup->train_table.x);
    x = &setup->train_table.x;
  }
  SPARROW_RETURN_IF_ERROR(Targets(config, t, model, setup));
  const int n_out = static_cast<int>(setup->train_table.y.rows());
  SPARROW_ASSIGN_OR_RETURN(setup->network, Build(model->config, n_in, n_out));
  model->params.resize(setup->network.num_params());
  setup->network.Initialize(config.model.init_scale, rng, model->params.data());
  setup->objective = std::make_unique<NetworkObjective>(
      &setup->network, x, &setup->train_table.y, config.loss, config.rho_theta,
      config.batch_size, config.shuffle, config.threads);
  return absl::OkStatus();
}

absl::StatusOr<Eigen::MatrixXd> LayeredFamily::PredictRowsScaled(
    const Model& m, const Eigen::MatrixXd& x) const {
  const int n_in = static_cast<int>(x.rows());
  SPARROW_ASSIGN_OR_RETURN(const Network net,
                           Build(m.config, n_in, m.output_scaling.size()));
  Eigen::MatrixXd y(net.outputs(), x.cols());
  Network::Cache cache;
  const double width = ActivationWidth(m.config, n_in, m.output_scaling.size());
  const Eigen::Index chunk = static_cast<Eigen::Index>(
      std::clamp(kPredictValues / width, 1.0, double{kPredictChunk}));
  for (Eigen::Index begin = 0; begin < x.cols(); begin += chunk) {
    const Eigen::Index cols = std::min(chunk, x.cols() - begin);
    net.Forward(m.params.data(), x.middleCols(begin, cols), &cache);
    y.middleCols(begin, cols) = cache.output();
  }
  return y;
}

int64_t LayeredFamily::StoredParameters(ModelConfig* config, int n_inputs,
                                        int n_outputs, int) const {
  Resolve(n_inputs, nullptr, config);
  const absl::StatusOr<Network> net = Build(*config, n_inputs, n_outputs);
  return net.ok() ? net->num_params() : -1;
}

std::vector<ParamBlock> LayeredFamily::Blocks(const Model& m) const {
  const absl::StatusOr<Network> net =
      Build(m.config, m.input_scaling.size(), m.output_scaling.size());
  if (!net.ok()) return ModelFamily::Blocks(m);
  const std::vector<std::string> names = LayerNames(m.config);
  std::vector<ParamBlock> blocks;
  for (int i = 0; i < net->num_layers(); ++i) {
    if (net->block(i).size == 0) continue;
    blocks.push_back({names[i], net->block(i).offset, net->block(i).size});
  }
  return blocks;
}

}  // namespace sparrow::core
