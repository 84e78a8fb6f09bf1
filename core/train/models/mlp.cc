// The static MLP on table rows (MlpKind): regression, or
// classification with a sigmoid or softmax output.
#include "core/train/models/mlp.h"

#include <numeric>

#include "absl/strings/str_cat.h"
#include "core/train/models/network_family.h"
#include "core/util/status_macros.h"

namespace sparrow::core {
namespace {

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

class MlpFamily : public NetworkFamily {
 public:
  const char* name() const override { return MlpKind::kName; }
  bool sequence() const override { return false; }

  absl::StatusOr<int64_t> CountParameters(const ModelConfig& config,
                                          int n_inputs,
                                          int n_outputs) const override {
    const MlpSpec spec = NetworkSpec(config, n_inputs, n_outputs);
    SPARROW_RETURN_IF_ERROR(
        ValidateMlpSpec(spec, "model.mlp", /*limit_params=*/false));
    return CountMlpParameters(spec);
  }

  double ActivationWidth(const ModelConfig& config, int inputs,
                         int outputs) const override {
    return inputs +
           std::accumulate(config.hidden.begin(), config.hidden.end(), 0.0) +
           outputs;
  }

  absl::Status Setup(const TrainConfig& config, const TrainData& data, Rng* rng,
                     Model* model, TrainSetup* setup) const override {
    const data::TableData& t = data.train_table;
    if (t.num_samples() == 0)
      return absl::InvalidArgumentError("the training split is empty");
    setup->train_table = t;
    model->input_names = t.input_names;
    model->output_names = t.output_names;
    model->input_scaling = FitInputScaling(config, {&t.x});
    model->output_scaling = FitOutputScaling(config, {&t.y});
    model->input_scaling.Apply(&setup->train_table.x);
    model->output_scaling.Apply(&setup->train_table.y);
    int n_out = static_cast<int>(t.y.rows());
    if (config.loss.OneHotTargets() && n_out == 1) {
      SPARROW_RETURN_IF_ERROR(OneHotOutputs(t, model, setup, &n_out));
    }
    return SetupNetwork(config, static_cast<int>(t.x.rows()), n_out,
                        "model.mlp", rng, model, setup);
  }

  absl::StatusOr<SequencePrediction> SimulateScaled(
      const Model&, const Eigen::MatrixXd&, const Eigen::MatrixXd&,
      ThreadPool*) const override {
    return absl::InvalidArgumentError(
        "a static MLP has no simulation; use a narx_mlp or state_space_rnn "
        "model");
  }

  absl::StatusOr<Eigen::MatrixXd> PredictRowsScaled(
      const Model& m, const Eigen::MatrixXd& x) const override {
    const Mlp mlp(NetworkSpec(m.config, static_cast<int>(x.rows()),
                              m.output_scaling.size()));
    Network::Cache cache;
    mlp.network().Forward(m.params.data(), x, &cache);
    return cache.output();
  }

  int64_t StoredParameters(ModelConfig* config, int n_inputs, int n_outputs,
                           int) const override {
    return Mlp(NetworkSpec(*config, n_inputs, n_outputs)).num_params();
  }
};

}  // namespace

const ModelFamily& MlpKind::Family() {
  static const auto* const kFamily = new MlpFamily;
  return *kFamily;
}

}  // namespace sparrow::core
