// The NARX MLP (ModelKind::kNarxMlp): an MLP on lagged inputs and outputs,
// trained one step ahead on the regressor table or on the free-run
// simulation error.
#include <numeric>

#include "absl/strings/str_cat.h"
#include "core/data/narx.h"
#include "core/train/models/network_family.h"
#include "core/util/status_macros.h"

namespace sparrow::core {
namespace {

class NarxMlpFamily : public NetworkFamily {
 public:
  const char* name() const override { return "narx_mlp"; }
  bool sequence() const override { return true; }
  bool BuildsRegressors() const override { return true; }

  absl::StatusOr<int64_t> CountParameters(const ModelConfig& config,
                                          int n_inputs,
                                          int n_outputs) const override {
    const MlpSpec spec = NetworkSpec(
        config, config.lags.dimension(n_inputs, n_outputs), n_outputs);
    SPARROW_RETURN_IF_ERROR(
        ValidateMlpSpec(spec, "model.narx_mlp", /*limit_params=*/false));
    return CountMlpParameters(spec);
  }

  double ActivationWidth(const ModelConfig& config, int inputs,
                         int outputs) const override {
    return config.lags.dimension(inputs, outputs) +
           std::accumulate(config.hidden.begin(), config.hidden.end(), 0.0) +
           outputs;
  }

  absl::Status Setup(const TrainConfig& config, const TrainData& data, Rng* rng,
                     Model* model, TrainSetup* setup) const override {
    SPARROW_RETURN_IF_ERROR(ScaleTraces(config, data, model, setup));
    SPARROW_ASSIGN_OR_RETURN(
        setup->train_table,
        data::BuildNarxRegressors(setup->train_seq, config.model.lags));
    SPARROW_RETURN_IF_ERROR(
        SetupNetwork(config, static_cast<int>(setup->train_table.x.rows()),
                     data.train_seq.n_y, "model.narx_mlp", rng, model, setup));
    if (config.model.simulation_error) {
      // The one-step objective stays, for the curvature SBDL needs.
      setup->one_step.reset(
          static_cast<TableObjective*>(setup->objective.release()));
      setup->objective = std::make_unique<NarxSimulationObjective>(
          &setup->mlp, config.model.lags, &setup->train_seq.traces, config.loss,
          config.rho_theta, setup->one_step.get());
    }
    return absl::OkStatus();
  }

  absl::StatusOr<SequencePrediction> SimulateScaled(
      const Model& m, const Eigen::MatrixXd& u,
      const Eigen::MatrixXd& y) const override {
    const data::NarxLags& lags = m.config.lags;
    if (u.cols() <= lags.max_lag()) {
      return absl::InvalidArgumentError(
          absl::StrCat("the sequence has ", u.cols(),
                       " samples; the model needs more than ", lags.max_lag()));
    }
    SequencePrediction out;
    out.y = NarxModel(m).Simulate(m.params.data(), u, y);
    out.first = lags.max_lag();
    return out;
  }

  int64_t StoredParameters(ModelConfig* config, int n_inputs, int n_outputs,
                           int) const override {
    return Mlp(NetworkSpec(*config, config->lags.dimension(n_inputs, n_outputs),
                           n_outputs))
        .num_params();
  }
};

}  // namespace

std::unique_ptr<ModelFamily> MakeNarxMlpFamily() {
  return std::make_unique<NarxMlpFamily>();
}

}  // namespace sparrow::core
