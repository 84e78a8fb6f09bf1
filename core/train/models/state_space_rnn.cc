// The state-space RNN (StateSpaceRnnKind) of Bemporad's NAILS paper:
// x+ = fx(x, u), y = fy(x, u), with a free or encoded initial state.
#include "core/train/models/state_space_rnn.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "core/sysid/subspace.h"
#include "core/train/model_registry.h"
#include "core/train/state_groups.h"
#include "core/util/status_macros.h"

namespace sparrow::core {
namespace {

const StateSpaceRnnSpec& Rnn(const ModelConfig& c) {
  return c.as<StateSpaceRnnKind>().rnn;
}
StateSpaceRnnSpec& MutableRnn(ModelConfig* c) {
  return c->as<StateSpaceRnnKind>().rnn;
}

double Sum(const std::vector<int>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0);
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

// The linear model's state at the start of each window: simulated from its
// trace's fitted x0 through the samples before the window.
std::vector<Eigen::VectorXd> WindowStates(
    const sysid::LinearStateSpace& fit, const std::vector<data::Trace>& traces,
    const std::vector<data::WindowOrigin>& origins) {
  std::vector<Eigen::VectorXd> states;
  states.reserve(origins.size());
  Eigen::VectorXd x, next;
  int trace = -1;
  int64_t at = 0;
  for (const data::WindowOrigin& o : origins) {
    if (o.trace != trace || o.start < at) {
      trace = o.trace;
      at = 0;
      x = fit.x0[trace];
    }
    for (; at < o.start; ++at) {
      next.noalias() = fit.a * x;
      next.noalias() += fit.b * traces[trace].u.col(at);
      x.swap(next);
    }
    states.push_back(x);
  }
  return states;
}

// Writes the linear model that PO-MOESP finds in the (scaled) training traces
// into the linear part of `theta`, and its initial states into the free x0s:
// training then starts at the best linear model of order nx. With windows
// (`origins` not empty) each window's x0 is the linear model's state at its
// start.
absl::Status InitializeLinearPart(
    const StateSpaceRnn& rnn, const std::vector<data::Trace>& traces,
    const std::vector<data::WindowOrigin>& origins, int block_rows,
    double* theta) {
  const StateSpaceRnnSpec& spec = rnn.spec();
  sysid::SubspaceOptions options;
  options.nx = spec.nx;
  options.block_rows = block_rows;
  options.feedthrough = spec.feedthrough;
  // An encoder starts at x0 = 0 (StateSpaceRnn::Initialize), like ZERO.
  options.fit_initial_states = spec.initial_state == InitialState::kFree;
  absl::StatusOr<sysid::LinearStateSpace> fit =
      sysid::FitSubspace(traces, options);
  if (!fit.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("model.state_space_rnn.linear: ", fit.status().message()));
  }
  const int nx = spec.nx;
  Eigen::Map<Eigen::MatrixXd> ab(theta + rnn.ab_offset(), nx, nx + spec.nu);
  ab << fit->a, fit->b;
  Eigen::Map<Eigen::MatrixXd> cd(theta + rnn.cd_offset(), spec.ny,
                                 rnn.fy().inputs());
  cd.leftCols(nx) = fit->c;
  if (spec.feedthrough) cd.rightCols(spec.nu) = fit->d;
  if (spec.initial_state == InitialState::kFree) {
    const std::vector<Eigen::VectorXd> x0 =
        origins.empty() ? fit->x0 : WindowStates(*fit, traces, origins);
    for (size_t t = 0; t < x0.size(); ++t) {
      Eigen::Map<Eigen::VectorXd>(theta + rnn.x0_offset() + t * nx, nx) = x0[t];
    }
  }
  return absl::OkStatus();
}

// A free x0 is estimated by fitting the first n0 outputs; when that fit is
// not finite from any start (outputs far outside the scaled range, say 1e160),
// EstimateInitialState falls back to x0 = 0, which must not pass for an
// estimate.
absl::Status CheckEstimateWindow(const StateSpaceRnn::Tape& tape,
                                 const Eigen::MatrixXd& y, int n0) {
  const Eigen::Index n = std::min<Eigen::Index>(
      std::max(1, n0), std::min<Eigen::Index>(y.cols(), tape.steps));
  const double squares =
      (tape.outputs().leftCols(n) - y.leftCols(n)).squaredNorm();
  if (std::isfinite(squares)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "the initial state cannot be estimated: the fit of the first ", n,
      " measured outputs is not finite (outputs far outside the range the "
      "model was trained on); check those values, or simulate from x0 = 0 or "
      "a given x0"));
}

int64_t LongestTrace(const std::vector<data::Trace>& traces) {
  int64_t longest = 0;
  for (const data::Trace& t : traces)
    longest = std::max<int64_t>(longest, t.length());
  return longest;
}

class StateSpaceRnnFamily : public ModelFamily {
 public:
  const char* name() const override { return StateSpaceRnnKind::kName; }
  bool sequence() const override { return true; }
  double SetupScratchBytes(const ModelConfig& config, int inputs,
                           int outputs) const override {
    if (!Rnn(config).linear) return 0.0;
    sysid::SubspaceOptions options;
    options.nx = Rnn(config).nx;
    options.block_rows = config.as<StateSpaceRnnKind>().linear_block_rows;
    return static_cast<double>(
        sysid::SubspaceScratchBytes(inputs, outputs, options));
  }
  bool StartsAtLinearModel(const ModelConfig& config) const override {
    return Rnn(config).linear;
  }

  absl::Status Check(const TrainConfig& config) const override {
    const int n0 = config.model.as<StateSpaceRnnKind>().x0_estimation_samples;
    if (n0 < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("model.state_space_rnn.x0_estimation_samples is ", n0,
                       "; it must be >= 1"));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<int64_t> CountParameters(const ModelConfig& config,
                                          int n_inputs,
                                          int n_outputs) const override {
    StateSpaceRnnSpec spec = Rnn(config);
    spec.nu = n_inputs;
    spec.ny = n_outputs;
    spec.num_traces = 1;  // a free x0 counted for one trace
    SPARROW_RETURN_IF_ERROR(ValidateStateSpaceRnnSpec(
        spec, "model.state_space_rnn", /*limit_params=*/false));
    return CountStateSpaceRnnParameters(spec);
  }

  double ActivationWidth(const ModelConfig& config, int inputs,
                         int outputs) const override {
    return Rnn(config).nx + Sum(Rnn(config).fx_hidden) +
           Sum(Rnn(config).fy_hidden) + outputs + inputs;
  }

  absl::Status Setup(const TrainConfig& config, const TrainData& data, Rng* rng,
                     Model* model, TrainSetup* setup) const override {
    SPARROW_RETURN_IF_ERROR(ScaleTraces(config, data, model, setup));
    const data::SequenceData& s = data.train_seq;
    const StateSpaceRnnKind& kind = config.model.as<StateSpaceRnnKind>();
    StateSpaceRnnSpec& spec = MutableRnn(&model->config);
    spec.nu = s.n_u;
    spec.ny = s.n_y;
    const int length =
        SubsequenceLength(kind, LongestTrace(setup->train_seq.traces));
    const int stride = kind.subsequence_stride > 0 ? kind.subsequence_stride
                                                   : std::max(length, 1);
    // A free x0 per window: the windows replace the traces before the model
    // is built, so it has one x0 for each. The linear fit still sees the
    // whole traces.
    std::vector<data::Trace> whole;
    std::vector<data::WindowOrigin> origins;
    const bool free_windows =
        length > 0 && spec.initial_state == InitialState::kFree;
    if (free_windows) {
      whole = std::move(setup->train_seq.traces);
      setup->train_seq.traces =
          data::Subsequences(whole, 0, length, stride, &origins);
    }
    spec.num_traces = static_cast<int>(
        free_windows ? setup->train_seq.traces.size() : s.traces.size());
    SPARROW_RETURN_IF_ERROR(
        ValidateStateSpaceRnnSpec(spec, "model.state_space_rnn"));
    setup->rnn = StateSpaceRnn(spec);
    SPARROW_RETURN_IF_ERROR(CheckTraceLengths(data, setup->rnn.warmup()));
    model->params.resize(setup->rnn.num_params());
    setup->rnn.Initialize(config.model.init_scale, rng, model->params.data());
    if (spec.linear) {
      SPARROW_RETURN_IF_ERROR(InitializeLinearPart(
          setup->rnn, free_windows ? whole : setup->train_seq.traces, origins,
          kind.linear_block_rows, model->params.data()));
    }
    if (length > 0 && !free_windows) {
      setup->train_seq.traces = data::Subsequences(
          setup->train_seq.traces, setup->rnn.warmup(), length, stride);
    }
    setup->objective = std::make_unique<SequenceObjective>(
        &setup->rnn, &setup->train_seq.traces, config.loss, config.rho_x0,
        config.rho_theta, config.bptt_window, config.shuffle);
    // Sparsity counts network weights only: free initial states are not
    // part of the model.
    if (spec.initial_state == InitialState::kFree) {
      setup->skip = setup->rnn.x0_size();
    }
    return absl::OkStatus();
  }

  absl::StatusOr<SequencePrediction> SimulateScaled(
      const Model& m, const Eigen::MatrixXd& u, const Eigen::MatrixXd& y,
      ThreadPool* pool) const override {
    const StateSpaceRnn rnn(Rnn(m.config));
    SequencePrediction out;
    out.first = rnn.warmup();
    if (u.cols() <= out.first) {
      return absl::InvalidArgumentError(
          absl::StrCat("the sequence has ", u.cols(),
                       " samples; the encoder needs more than ", out.first));
    }
    StateSpaceRnn::Tape tape;
    if (Rnn(m.config).initial_state == InitialState::kFree) {
      const int n0 = m.config.as<StateSpaceRnnKind>().x0_estimation_samples;
      const Eigen::VectorXd x0 = EstimateInitialState(
          rnn, m.params, u, y, n0, m.loss, m.rho_x0, /*guess=*/nullptr, pool);
      rnn.SimulateFrom(m.params.data(), x0, u, 0, &tape);
      SPARROW_RETURN_IF_ERROR(CheckEstimateWindow(tape, y, n0));
      out.x0 = x0;
    } else {
      rnn.Simulate(m.params.data(), u, y, 0, &tape);
    }
    out.y = y;
    out.y.rightCols(tape.steps) = tape.outputs();
    return out;
  }

  absl::StatusOr<SequencePrediction> SimulateFromStateScaled(
      const Model& m, const Eigen::MatrixXd& u,
      const Eigen::VectorXd& x0) const override {
    const StateSpaceRnn rnn(Rnn(m.config));
    if (x0.size() != Rnn(m.config).nx) {
      return absl::InvalidArgumentError(
          absl::StrCat("x0 has ", x0.size(), " values; this model's state has ",
                       Rnn(m.config).nx, " (nx)"));
    }
    if (!x0.allFinite()) {
      return absl::InvalidArgumentError("x0 contains NaN or Inf");
    }
    if (u.cols() == 0) {
      return absl::InvalidArgumentError("the sequence has no samples");
    }
    StateSpaceRnn::Tape tape;
    rnn.SimulateFrom(m.params.data(), x0, u, 0, &tape);
    SequencePrediction out;
    out.y = tape.outputs();
    out.x0 = x0;
    return out;
  }

  int64_t StoredParameters(ModelConfig* config, int n_inputs, int n_outputs,
                           int num_traces) const override {
    StateSpaceRnnSpec& s = MutableRnn(config);
    s.nu = n_inputs;
    s.ny = n_outputs;
    s.num_traces = num_traces;
    return StateSpaceRnn(s).num_params();
  }

  std::vector<ParamBlock> Blocks(const Model& m) const override {
    return StateSpaceRnn(Rnn(m.config)).blocks();
  }

  void DescribeStructure(const TrainSetup& setup, const Eigen::VectorXd& params,
                         Metrics* metrics) const override {
    metrics->model_order = ModelOrder(setup.rnn, params);
  }
};

}  // namespace

int SubsequenceLength(const StateSpaceRnnKind& kind, int64_t longest_trace) {
  if (kind.subsequence_length > 0) return kind.subsequence_length;
  if (kind.subsequence_length == 0 &&
      kind.rnn.initial_state == InitialState::kEncoder &&
      longest_trace > kAutoSubsequenceAbove) {
    return kAutoSubsequenceLength;
  }
  return 0;
}

const ModelFamily& StateSpaceRnnKind::Family() {
  static const auto* const kFamily = new StateSpaceRnnFamily;
  return *kFamily;
}

}  // namespace sparrow::core
