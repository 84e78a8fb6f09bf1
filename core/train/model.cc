#include "core/train/model.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/models/narx_mlp.h"
#include "core/optim/lbfgs/lbfgs.h"
#include "core/train/model_registry.h"
#include "core/util/status_macros.h"
#include "core/util/thread_pool.h"

namespace sparrow::core {
namespace {

absl::Status CheckSequence(const Model& m, const Eigen::MatrixXd& u,
                           const Eigen::MatrixXd& y) {
  if (u.rows() != m.input_scaling.size() ||
      y.rows() != m.output_scaling.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the model has ", m.input_scaling.size(), " inputs and ",
                     m.output_scaling.size(), " outputs; the data has ",
                     u.rows(), " and ", y.rows()));
  }
  if (u.cols() != y.cols()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "inputs have ", u.cols(), " samples but outputs have ", y.cols()));
  }
  if (!u.allFinite() || !y.allFinite()) {
    return absl::InvalidArgumentError("the data contains NaN or Inf");
  }
  return absl::OkStatus();
}

// x0 objective on the first n0 samples: (1/n0)[sum l + rho/2 |x0|^2].
class InitialStateObjective : public Objective {
 public:
  InitialStateObjective(const StateSpaceRnn& rnn, const Eigen::VectorXd& params,
                        const Eigen::MatrixXd& u, const Eigen::MatrixXd& y,
                        int n0, const Loss& loss, double rho)
      : rnn_(rnn),
        params_(params),
        u_(u),
        y_(y),
        n0_(n0),
        loss_(loss),
        rho_(rho) {}
  int num_params() const override { return rnn_.spec().nx; }
  double Evaluate(const Eigen::VectorXd& x0, Eigen::VectorXd* grad) override {
    rnn_.SimulateFrom(params_.data(), x0, u_, 0, &tape_, n0_);
    const auto target = y_.leftCols(tape_.steps);
    double value =
        loss_.Value(target, tape_.outputs()) + 0.5 * rho_ * x0.squaredNorm();
    if (grad != nullptr) {
      d_out_.resize(y_.rows(), tape_.steps);
      loss_.Gradient(target, tape_.outputs(), d_out_);
      scratch_.setZero(params_.size());
      rnn_.Backward(params_.data(), d_out_, 0, &tape_, scratch_.data(), grad);
      *grad += rho_ * x0;
      *grad /= tape_.steps;
    }
    value /= tape_.steps;
    return std::isfinite(value) ? value
                                : std::numeric_limits<double>::infinity();
  }

 private:
  const StateSpaceRnn& rnn_;
  const Eigen::VectorXd& params_;
  const Eigen::MatrixXd& u_;
  const Eigen::MatrixXd& y_;
  int n0_;
  Loss loss_;
  double rho_;
  StateSpaceRnn::Tape tape_;
  Eigen::MatrixXd d_out_;
  Eigen::VectorXd scratch_;
};

}  // namespace

NarxMlp NarxModel(const Model& m) {
  const int nu = m.input_scaling.size();
  const int ny = m.output_scaling.size();
  const data::NarxLags& lags = m.config.as<NarxMlpKind>().lags;
  return NarxMlp(lags, nu, ny,
                 NetworkSpec(m.config, lags.dimension(nu, ny), ny));
}

MlpSpec NetworkSpec(const ModelConfig& c, int n_in, int n_out) {
  MlpSpec spec{n_in, c.hidden, n_out, c.activation, c.output_activation};
  spec.bias = c.bias;
  spec.init = c.init;
  spec.precision = c.precision;
  spec.linear = c.is<NarxMlpKind>() && c.as<NarxMlpKind>().linear;
  return spec;
}

absl::StatusOr<int64_t> CountParameters(const ModelConfig& config, int n_inputs,
                                        int n_outputs) {
  return FamilyOf(config.kind).CountParameters(config, n_inputs, n_outputs);
}

Eigen::VectorXd EstimateInitialState(const StateSpaceRnn& rnn,
                                     const Eigen::VectorXd& params,
                                     const Eigen::MatrixXd& u,
                                     const Eigen::MatrixXd& y, int n0,
                                     const Loss& loss, double rho_x0,
                                     const Eigen::VectorXd* guess,
                                     ThreadPool* pool) {
  const int nx = rnn.spec().nx;
  // Multi-start local search (the paper uses a particle swarm; ALGORITHMS.md
  // §2.7 allows any robust multi-start method): x0 = 0 plus 2 nx uniform starts
  // in the paper's box [-3, 3]. With a guess only that start is refined
  // (re-fitting a known state).
  std::vector<Eigen::VectorXd> x0s;
  if (guess != nullptr) {
    x0s.push_back(*guess);
  } else {
    Rng rng(0x5eed);
    x0s.push_back(Eigen::VectorXd::Zero(nx));
    for (int start = 1; start <= 2 * nx; ++start) {
      Eigen::VectorXd x0(nx);
      for (int i = 0; i < nx; ++i) x0(i) = -3.0 + 6.0 * rng.Uniform();
      x0s.push_back(std::move(x0));
    }
  }
  LbfgsOptions options;
  options.stop.max_iterations = 100;
  options.gradient_tolerance = 1e-9;
  // The starts are independent: each part of the pool takes the next one and
  // refines it with its own objective (simulation buffers). A start's result
  // does not depend on which part ran it, so neither does the choice below.
  const int starts = static_cast<int>(x0s.size());
  std::vector<double> values(starts);
  std::atomic<int> next{0};
  auto refine = [&](int) {
    InitialStateObjective objective(rnn, params, u, y, std::max(1, n0), loss,
                                    rho_x0);
    for (int s = next++; s < starts; s = next++) {
      values[s] =
          MinimizeLbfgs(options, objective, &x0s[s], nullptr).final_loss;
    }
  };
  const int parts = pool == nullptr ? 1 : std::min(pool->threads(), starts);
  if (parts > 1) {
    pool->Run(parts, refine);
  } else {
    refine(0);
  }
  // The first start with the lowest value (a NaN value never wins).
  Eigen::VectorXd best = Eigen::VectorXd::Zero(nx);
  double best_value = std::numeric_limits<double>::infinity();
  for (int s = 0; s < starts; ++s) {
    if (values[s] < best_value) {
      best_value = values[s];
      best = x0s[s];
    }
  }
  return best;
}

absl::StatusOr<SequencePrediction> Simulate(const Model& m,
                                            const Eigen::MatrixXd& u_raw,
                                            const Eigen::MatrixXd& y_raw,
                                            ThreadPool* pool) {
  if (absl::Status s = CheckSequence(m, u_raw, y_raw); !s.ok()) return s;
  Eigen::MatrixXd u = u_raw;
  Eigen::MatrixXd y = y_raw;
  m.input_scaling.Apply(&u);
  m.output_scaling.Apply(&y);
  SPARROW_ASSIGN_OR_RETURN(
      SequencePrediction out,
      FamilyOf(m.config.kind).SimulateScaled(m, u, y, pool));
  m.output_scaling.Invert(&out.y);
  return out;
}

absl::StatusOr<SequencePrediction> SimulateFromState(
    const Model& m, const Eigen::MatrixXd& u_raw, const Eigen::VectorXd& x0) {
  if (u_raw.rows() != m.input_scaling.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the inputs have ", u_raw.rows(),
                     " channels; the model has ", m.input_scaling.size()));
  }
  if (!u_raw.allFinite()) {
    return absl::InvalidArgumentError("the data contains NaN or Inf");
  }
  Eigen::MatrixXd u = u_raw;
  m.input_scaling.Apply(&u);
  SPARROW_ASSIGN_OR_RETURN(
      SequencePrediction out,
      FamilyOf(m.config.kind).SimulateFromStateScaled(m, u, x0));
  m.output_scaling.Invert(&out.y);
  return out;
}

absl::StatusOr<SequencePrediction> PredictOneStep(
    const Model& m, const Eigen::MatrixXd& u_raw,
    const Eigen::MatrixXd& y_raw) {
  if (!m.config.is<NarxMlpKind>()) {
    return absl::InvalidArgumentError(
        "one-step prediction needs a narx_mlp model");
  }
  if (absl::Status s = CheckSequence(m, u_raw, y_raw); !s.ok()) return s;
  Eigen::MatrixXd u = u_raw;
  Eigen::MatrixXd y = y_raw;
  m.input_scaling.Apply(&u);
  m.output_scaling.Apply(&y);
  const int max_lag = m.config.as<NarxMlpKind>().lags.max_lag();
  if (u.cols() <= max_lag) {
    return absl::InvalidArgumentError(
        absl::StrCat("the sequence has ", u.cols(),
                     " samples; the model needs more than ", max_lag));
  }
  SequencePrediction out;
  out.first = max_lag;
  out.y = y;
  out.y.rightCols(u.cols() - out.first) =
      NarxModel(m).PredictOneStep(m.params.data(), u, y);
  m.output_scaling.Invert(&out.y);
  return out;
}

absl::StatusOr<IntervalPrediction> PredictOneStepWithUncertainty(
    const Model& m, const Eigen::MatrixXd& u_raw,
    const Eigen::MatrixXd& y_raw) {
  if (m.variance.size() != m.params.size()) {
    return absl::FailedPreconditionError(
        "this model has no weight variances; prediction intervals need a "
        "model trained with optimizer sbdl");
  }
  IntervalPrediction out;
  SPARROW_ASSIGN_OR_RETURN(out.mean, PredictOneStep(m, u_raw, y_raw));
  data::SequenceData seq;
  seq.n_u = static_cast<int>(u_raw.rows());
  seq.n_y = static_cast<int>(y_raw.rows());
  seq.traces.push_back({u_raw, y_raw});
  m.input_scaling.Apply(&seq.traces[0].u);
  m.output_scaling.Apply(&seq.traces[0].y);
  SPARROW_ASSIGN_OR_RETURN(
      data::TableData reg,
      data::BuildNarxRegressors(seq, m.config.as<NarxMlpKind>().lags));
  const NarxMlp narx = NarxModel(m);
  Mlp::Cache cache;
  narx.network().Forward(m.params.data(), reg.x, &cache);
  Eigen::MatrixXd var;
  narx.network().OutputVariance(m.params.data(), m.variance.data(), &cache,
                                &var);
  out.stddev.setZero(out.mean.y.rows(), out.mean.y.cols());
  // Normalized units to data units: the output scaling's factor per channel.
  const Eigen::VectorXd scale = m.output_scaling.scale.cwiseAbs();
  out.stddev.rightCols(var.cols()) =
      scale.asDiagonal() * (var.array() + m.noise_variance).sqrt().matrix();
  return out;
}

absl::StatusOr<Eigen::MatrixXd> PredictTable(const Model& m,
                                             const Eigen::MatrixXd& x_raw) {
  const ModelFamily& family = FamilyOf(m.config.kind);
  if (family.sequence()) {
    return absl::InvalidArgumentError("row-wise prediction needs an mlp model");
  }
  if (x_raw.rows() != m.input_scaling.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the model has ", m.input_scaling.size(),
                     " inputs; the data has ", x_raw.rows()));
  }
  if (!x_raw.allFinite())
    return absl::InvalidArgumentError("the data contains NaN or Inf");
  Eigen::MatrixXd x = x_raw;
  m.input_scaling.Apply(&x);
  SPARROW_ASSIGN_OR_RETURN(Eigen::MatrixXd y, family.PredictRowsScaled(m, x));
  m.output_scaling.Invert(&y);
  return y;
}

}  // namespace sparrow::core
