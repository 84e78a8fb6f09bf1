// The NARX MLP (NarxMlpKind): an MLP on lagged inputs and outputs,
// trained one step ahead on the regressor table or on the free-run
// simulation error.
#include "core/train/models/narx_mlp.h"

#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "core/data/narx.h"
#include "core/train/models/network_family.h"
#include "core/util/status_macros.h"

namespace sparrow::core {
namespace {

// The least-squares ARX start is a one-step fit; in free run it can diverge,
// and then no optimizer can take a step from it.
absl::Status CheckLinearStartSimulates(TrainSetup& setup, const Model& model) {
  if (std::isfinite(setup.objective->Evaluate(model.params, nullptr))) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      "model.narx_mlp.linear: the least-squares ARX start diverges in "
      "free-run simulation on the training traces; train one step ahead "
      "first (\"simulation_error\": false, or a one-step stage before a "
      "simulation-error stage), use fewer output_lags, or leave out linear");
}

class NarxMlpFamily : public NetworkFamily {
 public:
  const char* name() const override { return NarxMlpKind::kName; }
  bool sequence() const override { return true; }
  bool BuildsRegressors() const override { return true; }
  bool StartsAtLinearModel(const ModelConfig& config) const override {
    return config.as<NarxMlpKind>().linear;
  }

  absl::Status Check(const TrainConfig& config) const override {
    const NarxMlpKind& narx = config.model.as<NarxMlpKind>();
    SPARROW_RETURN_IF_ERROR(data::ValidateNarxLags(narx.lags));
    if (narx.simulation_error && config.batch_size > 0) {
      return absl::InvalidArgumentError(
          "model.narx_mlp.simulation_error trains on whole traces (full "
          "batch); remove optimizer.*.batch.batch_size");
    }
    return absl::OkStatus();
  }

  absl::StatusOr<int64_t> CountParameters(const ModelConfig& config,
                                          int n_inputs,
                                          int n_outputs) const override {
    const MlpSpec spec = NetworkSpec(
        config, config.as<NarxMlpKind>().lags.dimension(n_inputs, n_outputs),
        n_outputs);
    SPARROW_RETURN_IF_ERROR(
        ValidateMlpSpec(spec, "model.narx_mlp", /*limit_params=*/false));
    return CountMlpParameters(spec);
  }

  double ActivationWidth(const ModelConfig& config, int inputs,
                         int outputs) const override {
    return config.as<NarxMlpKind>().lags.dimension(inputs, outputs) +
           std::accumulate(config.hidden.begin(), config.hidden.end(), 0.0) +
           outputs;
  }

  absl::Status Setup(const TrainConfig& config, const TrainData& data, Rng* rng,
                     Model* model, TrainSetup* setup) const override {
    const NarxMlpKind& narx = config.model.as<NarxMlpKind>();
    SPARROW_RETURN_IF_ERROR(ScaleTraces(config, data, model, setup));
    SPARROW_ASSIGN_OR_RETURN(
        setup->train_table,
        data::BuildNarxRegressors(setup->train_seq, narx.lags));
    SPARROW_RETURN_IF_ERROR(
        SetupNetwork(config, static_cast<int>(setup->train_table.x.rows()),
                     data.train_seq.n_y, "model.narx_mlp", rng, model, setup));
    if (narx.linear) {
      SPARROW_RETURN_IF_ERROR(FitLinearTerm(setup->mlp, setup->train_table.x,
                                            setup->train_table.y,
                                            model->params.data()));
    }
    if (narx.simulation_error) {
      // The one-step objective stays, for the curvature SBDL needs.
      setup->one_step.reset(
          static_cast<TableObjective*>(setup->objective.release()));
      setup->objective = std::make_unique<NarxSimulationObjective>(
          &setup->mlp, narx.lags, &setup->train_seq.traces, config.loss,
          config.rho_theta, setup->one_step.get());
      if (narx.linear && config.warm_start == nullptr) {
        SPARROW_RETURN_IF_ERROR(CheckLinearStartSimulates(*setup, *model));
      }
    }
    return absl::OkStatus();
  }

  absl::StatusOr<SequencePrediction> SimulateScaled(
      const Model& m, const Eigen::MatrixXd& u, const Eigen::MatrixXd& y,
      ThreadPool*) const override {
    const data::NarxLags& lags = m.config.as<NarxMlpKind>().lags;
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
    const data::NarxLags& lags = config->as<NarxMlpKind>().lags;
    return Mlp(NetworkSpec(*config, lags.dimension(n_inputs, n_outputs),
                           n_outputs))
        .num_params();
  }
};

}  // namespace

const ModelFamily& NarxMlpKind::Family() {
  static const auto* const kFamily = new NarxMlpFamily;
  return *kFamily;
}

}  // namespace sparrow::core
