#include "core/train/trainer.h"

#include <chrono>
#include <cmath>
#include <memory>

#include "absl/strings/str_cat.h"
#include "core/data/narx.h"
#include "core/metrics/metrics.h"
#include "core/optim/gauss_newton/least_squares.h"
#include "core/train/objectives.h"
#include "core/util/option_error.h"
#include "core/util/status_macros.h"

namespace sparrow::core {
namespace {

bool IsClassification(const Loss& loss) { return loss.kind != LossKind::kMse; }

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

absl::Status Positive(absl::string_view field, double v) {
  if (v > 0 && std::isfinite(v)) return absl::OkStatus();
  return OptionError(field, v, "positive");
}
absl::Status NonNegative(absl::string_view field, double v) {
  if (v >= 0 && std::isfinite(v)) return absl::OkStatus();
  return OptionError(field, v, ">= 0");
}

// Normalizes every trace in place with the given scalings.
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

// Softmax cross-entropy with a single label column: labels 0..C-1 become
// one-hot rows.
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

// Wraps the user's callback: adds the validation metric, keeps the best iterate
// on validation data, and stops after `patience` reports without improvement.
class ValidationMonitor : public IterationCallback {
 public:
  ValidationMonitor(Model* model, const TrainConfig& config,
                    const TrainData& data, IterationCallback* user)
      : model_(model), config_(config), data_(data), user_(user) {
    active_ = model->config.kind == ModelKind::kMlp
                  ? data.validation_table.num_samples() > 0
                  : !data.validation_seq.traces.empty();
  }
  CallbackResult OnIteration(IterationRecord* r) override {
    if (active_ && r->params != nullptr) {
      model_->params = *r->params;
      Metrics m;
      const absl::Status s =
          model_->config.kind == ModelKind::kMlp
              ? EvaluateTable(*model_, data_.validation_table, 1, &m)
              : EvaluateSequences(*model_, data_.validation_seq, 1, &m);
      if (!s.ok()) {
        error_ = s;
        return CallbackResult::kAbort;
      }
      r->validation_metric = IsClassification(config_.loss)
                                 ? 100.0 - m.validation_accuracy
                                 : m.validation_rmse;
      if (std::isfinite(r->validation_metric) && r->validation_metric < best_) {
        best_ = r->validation_metric;
        best_params_ = *r->params;
        since_best_ = 0;
      } else {
        ++since_best_;
      }
    }
    if (r->params != nullptr) {
      r->sparsity_pct =
          ComputeSparsity(r->params->tail(r->params->size() - skip_)).zero_pct;
    }
    CallbackResult answer =
        user_ != nullptr ? user_->OnIteration(r) : CallbackResult::kContinue;
    if (answer == CallbackResult::kContinue && config_.patience > 0 &&
        since_best_ >= config_.patience) {
      answer = CallbackResult::kFinish;
    }
    return answer;
  }
  bool has_best() const { return best_params_.size() > 0; }
  // A validation evaluation that failed; the run was aborted because of it.
  const absl::Status& error() const { return error_; }
  // Leading parameters left out of the sparsity count (free initial states).
  void set_skip(int skip) { skip_ = skip; }
  const Eigen::VectorXd& best_params() const { return best_params_; }

 private:
  Model* model_;
  const TrainConfig& config_;
  const TrainData& data_;
  IterationCallback* user_;
  bool active_ = false;
  double best_ = std::numeric_limits<double>::infinity();
  int since_best_ = 0;
  int skip_ = 0;
  Eigen::VectorXd best_params_;
  absl::Status error_;
};

// Stacks the predicted part of every trace and scores it.
void Score(const std::vector<Eigen::MatrixXd>& ys,
           const std::vector<Eigen::MatrixXd>& yhats, const Loss& loss,
           double* rmse, double* bfr, double* accuracy) {
  Eigen::Index cols = 0;
  for (const auto& y : ys) cols += y.cols();
  if (ys.empty() || cols == 0) return;
  Eigen::MatrixXd y(ys[0].rows(), cols), yhat(ys[0].rows(), cols);
  Eigen::Index c = 0;
  for (size_t i = 0; i < ys.size(); ++i) {
    y.middleCols(c, ys[i].cols()) = ys[i];
    yhat.middleCols(c, ys[i].cols()) = yhats[i];
    c += ys[i].cols();
  }
  if (rmse) *rmse = Rmse(y, yhat);
  // BFR compares a signal with its simulation; it means nothing for labels.
  if (bfr && !IsClassification(loss)) *bfr = Bfr(y, yhat);
  if (accuracy && IsClassification(loss)) {
    *accuracy = Accuracy(y, yhat, loss.kind == LossKind::kSoftmaxCrossEntropy);
  }
}

// Bemporad §4.2: group i of a state-space RNN is column i of the first fx and
// fy layers, row i of the last fx layer and entry i of its bias. Zeroing it
// removes state i.
std::vector<std::vector<int>> StateGroups(const StateSpaceRnn& rnn) {
  const int nx = rnn.spec().nx;
  std::vector<std::vector<int>> groups(nx);
  const Mlp::Layer& fx_first = rnn.fx().layers().front();
  const Mlp::Layer& fx_last = rnn.fx().layers().back();
  const Mlp::Layer& fy_first = rnn.fy().layers().front();
  for (int i = 0; i < nx; ++i) {
    std::vector<int>& g = groups[i];
    for (int r = 0; r < fx_first.out; ++r) {
      g.push_back(rnn.fx_offset() + fx_first.weight_offset + i * fx_first.out +
                  r);
    }
    for (int r = 0; r < fy_first.out; ++r) {
      g.push_back(rnn.fy_offset() + fy_first.weight_offset + i * fy_first.out +
                  r);
    }
    for (int c = 0; c < fx_last.in; ++c) {
      const int k =
          rnn.fx_offset() + fx_last.weight_offset + c * fx_last.out + i;
      // With no hidden layer the first and last fx layers coincide.
      if (std::find(g.begin(), g.end(), k) == g.end()) g.push_back(k);
    }
    g.push_back(rnn.fx_offset() + fx_last.bias_offset + i);
  }
  return groups;
}

double ModelOrder(const StateSpaceRnn& rnn, const Eigen::VectorXd& w) {
  int order = 0;
  for (const std::vector<int>& g : StateGroups(rnn)) {
    bool any = false;
    for (int i : g) any = any || w(i) != 0.0;
    order += any;
  }
  return order;
}

// The parameters the penalty acts on: the state groups for group Lasso, all
// network weights and biases (theta_x, theta_y) otherwise.
std::vector<int> PenaltySplit(const TrainConfig::Penalty& p,
                              const StateSpaceRnn& rnn) {
  std::vector<int> split;
  if (p.kind == TrainConfig::Penalty::Kind::kGroupLasso) {
    for (const auto& g : StateGroups(rnn))
      split.insert(split.end(), g.begin(), g.end());
    return split;
  }
  for (int i = rnn.fx_offset(); i < rnn.num_params(); ++i) split.push_back(i);
  return split;
}

absl::StatusOr<std::unique_ptr<Proximal>> MakePenalty(
    const TrainConfig::Penalty& p, const StateSpaceRnn& rnn) {
  using Kind = TrainConfig::Penalty::Kind;
  switch (p.kind) {
    case Kind::kL1:
      return MakeL1(p.tau);
    case Kind::kL0:
      return MakeL0(p.tau);
    case Kind::kGroupLasso: {
      // Positions within the split vector, which lists the groups in order.
      std::vector<std::vector<int>> groups = StateGroups(rnn);
      int next = 0;
      for (auto& g : groups) {
        for (int& i : g) i = next++;
      }
      return MakeGroupLasso(p.tau, std::move(groups));
    }
    case Kind::kQuantization:
      return MakeQuantization(p.levels);
    case Kind::kBinary:
      return MakeBinary();
    case Kind::kNone:
      break;
  }
  return absl::InvalidArgumentError("no penalty");
}

double* Field(Metrics* m, int which, double Metrics::*train,
              double Metrics::*validation, double Metrics::*test) {
  return which == 0   ? &(m->*train)
         : which == 1 ? &(m->*validation)
                      : &(m->*test);
}

}  // namespace

absl::Status TrainConfig::Validate() const {
  SPARROW_RETURN_IF_ERROR(loss.Validate());
  SPARROW_RETURN_IF_ERROR(NonNegative("regularization.rho_x0", rho_x0));
  SPARROW_RETURN_IF_ERROR(NonNegative("regularization.rho_theta", rho_theta));
  SPARROW_RETURN_IF_ERROR(Positive("model.init_scale", model.init_scale));
  if (max_epochs < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "stopping.max_epochs is ", max_epochs, "; it must be at least 1"));
  }
  SPARROW_RETURN_IF_ERROR(NonNegative("stopping.max_seconds", max_seconds));
  SPARROW_RETURN_IF_ERROR(NonNegative("stopping.tolerance", tolerance));
  if (patience < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("stopping.patience is ", patience, "; it must be >= 0"));
  }
  if (batch_size < 0 || bptt_window < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch_size (", batch_size, ") and bptt_window (",
                     bptt_window, ") must be >= 0"));
  }
  if (model.x0_estimation_samples < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("model.state_space_rnn.x0_estimation_samples is ",
                     model.x0_estimation_samples, "; it must be >= 1"));
  }
  if (model.kind == ModelKind::kNarxMlp)
    SPARROW_RETURN_IF_ERROR(data::ValidateNarxLags(model.lags));
  if (model.simulation_error && batch_size > 0) {
    return absl::InvalidArgumentError(
        "model.narx_mlp.simulation_error trains on whole traces (full batch); "
        "remove optimizer.*.batch.batch_size");
  }
  const bool gauss_newton_method =
      optimizer == OptimizerKind::kNails || optimizer == OptimizerKind::kNailm;
  if (optimizer == OptimizerKind::kSbdl) {
    if (model.kind == ModelKind::kStateSpaceRnn) {
      return absl::InvalidArgumentError(
          "optimizer.sbdl trains narx_mlp and mlp models; use nails or nailm "
          "for state_space_rnn");
    }
    if (loss.kind != LossKind::kMse) {
      return absl::InvalidArgumentError(
          "optimizer.sbdl needs loss LOSS_MSE (its likelihood is Gaussian)");
    }
    const absl::Status s =
        sbdl.Validate(static_cast<int>(model.hidden.size()) + 1);
    if (!s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("optimizer.sbdl.", s.message()));
    }
  }
  const bool bld =
      optimizer == OptimizerKind::kB2ld || optimizer == OptimizerKind::kBling;
  if (bld) {
    const char* name = optimizer == OptimizerKind::kB2ld ? "optimizer.b2ld"
                                                         : "optimizer.bling";
    if (model.kind != ModelKind::kMlp || loss.kind != LossKind::kMse) {
      return absl::InvalidArgumentError(absl::StrCat(
          name,
          " trains mlp models with loss LOSS_MSE (Palagi & Seccia's "
          "least-squares networks)"));
    }
    // Their objective has its own weight decay (optimizer.*.rho) and their
    // own stopping tests: refuse settings they would silently ignore.
    if (rho_theta != 0.0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "regularization.rho_theta is not used by ", name, "; set ", name,
          ".rho (the weight decay of its "
          "objective)"));
    }
    if (tolerance != 0.0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "stopping.tolerance is not used by ", name,
          optimizer == OptimizerKind::kB2ld
              ? "; use optimizer.b2ld.relative_decrease and gradient_tolerance"
              : "; BLInG stops on max_epochs or max_seconds"));
    }
    const absl::Status s =
        optimizer == OptimizerKind::kB2ld ? b2ld.Validate() : bling.Validate();
    if (!s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(name, ".", s.message()));
    }
  }
  if (gauss_newton_method && model.kind != ModelKind::kStateSpaceRnn) {
    return absl::InvalidArgumentError(
        "optimizer.nails/nailm train state_space_rnn models; use lbfgs or adam "
        "for mlp and narx_mlp");
  }
  if (penalty.kind != Penalty::Kind::kNone) {
    if (!gauss_newton_method) {
      return absl::InvalidArgumentError(
          "regularization.l1/l0/group_lasso/quantization/binary are solved by "
          "ADMM around optimizer nails or nailm; choose one of those");
    }
    SPARROW_RETURN_IF_ERROR(NonNegative("regularization.*.tau", penalty.tau));
    SPARROW_RETURN_IF_ERROR(admm.Validate());
  }
  static constexpr const char* kNames[] = {"sgd",   "adam", "lbfgs", "nails",
                                           "nailm", "sbdl", "b2ld",  "bling"};
  const absl::Status options =
      optimizer == OptimizerKind::kSbdl || bld ? absl::OkStatus()
      : optimizer == OptimizerKind::kLbfgs     ? lbfgs.Validate()
      : gauss_newton_method                    ? gauss_newton.Validate()
                                               : first_order.Validate();
  if (!options.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("optimizer.", kNames[static_cast<int>(optimizer)], ".",
                     options.message()));
  }
  return absl::OkStatus();
}

absl::Status EvaluateSequences(const Model& model,
                               const data::SequenceData& data, int which,
                               Metrics* metrics) {
  if (data.traces.empty()) return absl::OkStatus();
  std::vector<Eigen::MatrixXd> ys, sims, ones;
  const bool narx = model.config.kind == ModelKind::kNarxMlp;
  for (size_t t = 0; t < data.traces.size(); ++t) {
    const data::Trace& tr = data.traces[t];
    SequencePrediction p;
    const bool learned_x0 =
        which == 0 && model.config.kind == ModelKind::kStateSpaceRnn &&
        model.config.rnn.initial_state == InitialState::kFree &&
        static_cast<int>(data.traces.size()) == model.config.rnn.num_traces;
    if (learned_x0) {
      // Training traces keep the x0 learned with the model.
      const StateSpaceRnn rnn(model.config.rnn);
      Eigen::MatrixXd u = tr.u;
      model.input_scaling.Apply(&u);
      StateSpaceRnn::Tape tape;
      // A free x0 reads no measured outputs: pass the inputs as the unused
      // output argument rather than scaling a copy of y for nothing.
      rnn.Simulate(model.params.data(), u, /*y=*/u, static_cast<int>(t), &tape);
      p.y = tape.outputs();
      model.output_scaling.Invert(&p.y);
    } else {
      SPARROW_ASSIGN_OR_RETURN(p, Simulate(model, tr.u, tr.y));
      p.y = p.y.rightCols(p.y.cols() - p.first).eval();
    }
    ys.push_back(tr.y.rightCols(p.y.cols()));
    sims.push_back(p.y);
    if (narx && which != 1) {
      SPARROW_ASSIGN_OR_RETURN(SequencePrediction one,
                               PredictOneStep(model, tr.u, tr.y));
      ones.push_back(one.y.rightCols(one.y.cols() - one.first));
    }
  }
  Score(ys, sims, model.loss,
        Field(metrics, which, &Metrics::train_rmse, &Metrics::validation_rmse,
              &Metrics::test_rmse),
        Field(metrics, which, &Metrics::train_bfr, &Metrics::validation_bfr,
              &Metrics::test_bfr),
        Field(metrics, which, &Metrics::train_accuracy,
              &Metrics::validation_accuracy, &Metrics::test_accuracy));
  if (!ones.empty()) {
    Score(ys, ones, model.loss,
          which == 0 ? &metrics->train_one_step_rmse
                     : &metrics->test_one_step_rmse,
          nullptr, nullptr);
  }
  return absl::OkStatus();
}

absl::Status EvaluateTable(const Model& model, const data::TableData& data,
                           int which, Metrics* metrics) {
  if (data.num_samples() == 0) return absl::OkStatus();
  SPARROW_ASSIGN_OR_RETURN(Eigen::MatrixXd yhat, PredictTable(model, data.x));
  Eigen::MatrixXd y = data.y;
  if (model.loss.kind == LossKind::kSoftmaxCrossEntropy && y.rows() == 1) {
    SPARROW_ASSIGN_OR_RETURN(y, OneHot(data.y, static_cast<int>(yhat.rows())));
  }
  Score({y}, {yhat}, model.loss,
        Field(metrics, which, &Metrics::train_rmse, &Metrics::validation_rmse,
              &Metrics::test_rmse),
        nullptr,
        Field(metrics, which, &Metrics::train_accuracy,
              &Metrics::validation_accuracy, &Metrics::test_accuracy));
  return absl::OkStatus();
}

absl::StatusOr<TrainResult> Train(const TrainConfig& config,
                                  const TrainData& data,
                                  IterationCallback* callback) {
  SPARROW_RETURN_IF_ERROR(config.Validate());
  TrainResult result;
  Model& model = result.model;
  model.config = config.model;
  model.loss = config.loss;
  model.rho_x0 = config.rho_x0;
  Rng rng(config.seed);

  // Owned per-kind state that the objective points into; it must outlive the
  // optimizer run.
  data::SequenceData train_seq;
  data::TableData train_table;
  Mlp mlp;
  StateSpaceRnn rnn;
  std::unique_ptr<Objective> objective;
  std::unique_ptr<TableObjective>
      one_step;  // the curvature of a simulation fit
  // An MLP on the rows of train_table (static MLP, or NARX on its regressors).
  auto setup_network = [&](int n_in, int n_out,
                           absl::string_view name) -> absl::Status {
    const MlpSpec spec = NetworkSpec(config.model, n_in, n_out);
    SPARROW_RETURN_IF_ERROR(ValidateMlpSpec(spec, name));
    mlp = Mlp(spec);
    model.params.resize(mlp.num_params());
    mlp.Initialize(config.model.init_scale, &rng, model.params.data());
    objective = std::make_unique<TableObjective>(
        &mlp, &train_table.x, &train_table.y, config.loss, config.rho_theta,
        config.batch_size, config.shuffle);
    return absl::OkStatus();
  };

  if (config.model.kind == ModelKind::kMlp) {
    const data::TableData& t = data.train_table;
    if (t.num_samples() == 0)
      return absl::InvalidArgumentError("the training split is empty");
    train_table = t;
    model.input_names = t.input_names;
    model.output_names = t.output_names;
    model.input_scaling = FitScaling(config.scaling, {&t.x});
    model.output_scaling = FitOutputScaling(config, {&t.y});
    model.input_scaling.Apply(&train_table.x);
    model.output_scaling.Apply(&train_table.y);
    int n_out = static_cast<int>(t.y.rows());
    if (config.loss.kind == LossKind::kSoftmaxCrossEntropy && n_out == 1) {
      n_out = static_cast<int>(t.y.maxCoeff()) + 1;
      SPARROW_ASSIGN_OR_RETURN(train_table.y, OneHot(t.y, n_out));
      model.output_scaling = data::Normalizer::Identity(n_out);
      model.output_names.assign(n_out, "");
      for (int c = 0; c < n_out; ++c) {
        model.output_names[c] = absl::StrCat(t.output_names[0], "=", c);
      }
    }
    SPARROW_RETURN_IF_ERROR(
        setup_network(static_cast<int>(t.x.rows()), n_out, "model.mlp"));
  } else {
    const data::SequenceData& s = data.train_seq;
    if (s.traces.empty())
      return absl::InvalidArgumentError("the training split is empty");
    model.input_names = s.input_names;
    model.output_names = s.output_names;
    std::vector<const Eigen::MatrixXd*> us, ys;
    for (const data::Trace& t : s.traces) {
      us.push_back(&t.u);
      ys.push_back(&t.y);
    }
    model.input_scaling = FitScaling(config.scaling, us);
    model.output_scaling = FitOutputScaling(config, ys);
    train_seq = Scaled(s, model.input_scaling, model.output_scaling);
    if (config.model.kind == ModelKind::kNarxMlp) {
      SPARROW_ASSIGN_OR_RETURN(
          train_table, data::BuildNarxRegressors(train_seq, config.model.lags));
      SPARROW_RETURN_IF_ERROR(setup_network(
          static_cast<int>(train_table.x.rows()), s.n_y, "model.narx_mlp"));
      if (config.model.simulation_error) {
        one_step.reset(static_cast<TableObjective*>(objective.release()));
        objective = std::make_unique<NarxSimulationObjective>(
            &mlp, config.model.lags, &train_seq.traces, config.loss,
            config.rho_theta, one_step.get());
      }
    } else {
      StateSpaceRnnSpec& spec = model.config.rnn;
      spec.nu = s.n_u;
      spec.ny = s.n_y;
      spec.num_traces = static_cast<int>(s.traces.size());
      SPARROW_RETURN_IF_ERROR(
          ValidateStateSpaceRnnSpec(spec, "model.state_space_rnn"));
      rnn = StateSpaceRnn(spec);
      for (size_t t = 0; t < s.traces.size(); ++t) {
        if (s.traces[t].length() <= rnn.warmup() + 1) {
          return absl::InvalidArgumentError(absl::StrCat(
              "training trace ", t + 1, " has ", s.traces[t].length(),
              " samples; the model needs more than ", rnn.warmup() + 1,
              " (the encoder uses the first ", rnn.warmup(), ")"));
        }
      }
      for (const auto* part : {&data.validation_seq, &data.test_seq}) {
        for (size_t t = 0; t < part->traces.size(); ++t) {
          if (part->traces[t].length() <= rnn.warmup() + 1) {
            return absl::InvalidArgumentError(absl::StrCat(
                part == &data.test_seq ? "test" : "validation", " trace ",
                t + 1, " has ", part->traces[t].length(),
                " samples; the model needs more than ", rnn.warmup() + 1));
          }
        }
      }
      model.params.resize(rnn.num_params());
      rnn.Initialize(config.model.init_scale, &rng, model.params.data());
      objective = std::make_unique<SequenceObjective>(
          &rnn, &train_seq.traces, config.loss, config.rho_x0, config.rho_theta,
          config.bptt_window, config.shuffle);
    }
  }

  // Sparsity counts network weights only: free initial states are not part of
  // the model.
  const int x0 = config.model.kind == ModelKind::kStateSpaceRnn &&
                         model.config.rnn.initial_state == InitialState::kFree
                     ? rnn.x0_size()
                     : 0;
  if (config.initial_params.size() > 0) {
    if (config.initial_params.size() != model.params.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the initial parameters have ", config.initial_params.size(),
          " entries but the model has ", model.params.size(),
          "; they come from a different spec"));
    }
    if (!config.initial_params.allFinite()) {
      return absl::InvalidArgumentError(
          "the initial parameters contain NaN or Inf");
    }
    model.params = config.initial_params;
  }
  ValidationMonitor monitor(&model, config, data, callback);
  monitor.set_skip(x0);
  Eigen::VectorXd w = model.params;
  if (config.optimizer == OptimizerKind::kNails ||
      config.optimizer == OptimizerKind::kNailm) {
    GaussNewtonOptions o = config.gauss_newton;
    o.method = config.optimizer == OptimizerKind::kNails
                   ? GaussNewtonOptions::Method::kLineSearch
                   : GaussNewtonOptions::Method::kLevenbergMarquardt;
    o.max_epochs = config.max_epochs;
    o.max_seconds = config.max_seconds;
    o.report_every = config.report_every;
    SequenceLeastSquares problem(&rnn, &train_seq.traces, config.loss,
                                 config.rho_x0, config.rho_theta,
                                 config.threads);
    // stopping.tolerance is in the mean units every optimizer reports;
    // epsilon_v in the sum units of the least-squares problem.
    if (config.tolerance > 0) {
      o.epsilon_v = config.tolerance * problem.num_samples();
    }
    if (config.penalty.kind == TrainConfig::Penalty::Kind::kNone) {
      result.summary = MinimizeGaussNewton(o, problem, &w, &monitor);
    } else {
      SPARROW_ASSIGN_OR_RETURN(std::unique_ptr<Proximal> g,
                               MakePenalty(config.penalty, rnn));
      AdmmOptions a = config.admm;
      a.max_seconds = config.max_seconds;
      a.report_every = config.report_every;
      result.summary = MinimizeAdmm(
          a, o, problem, *g, PenaltySplit(config.penalty, rnn), &w, &monitor);
      if (model.config.rnn.initial_state == InitialState::kFree) {
        // The model is nu (Bemporad §4): re-fit the training initial states
        // for it, starting from those learned with theta.
        const int nx = model.config.rnn.nx;
        for (size_t t = 0; t < train_seq.traces.size(); ++t) {
          const data::Trace& tr = train_seq.traces[t];
          const Eigen::VectorXd guess = w.segment(t * nx, nx);
          w.segment(t * nx, nx) =
              EstimateInitialState(rnn, w, tr.u, tr.y, tr.length(), config.loss,
                                   config.rho_x0, &guess);
        }
      }
    }
  } else if (config.optimizer == OptimizerKind::kSbdl) {
    const std::vector<DenseBlock> layers = DenseBlocks(mlp.network());
    SbdlOptions o = config.sbdl;
    o.max_seconds = config.max_seconds;
    o.seed = config.seed;
    SbdlResult r;
    result.summary = MinimizeSbdl(
        o, layers, static_cast<SbdlObjective&>(*objective), &w, &r, &monitor);
    model.mask = r.mask;
    model.variance = r.variance;
    model.noise_variance = r.noise_variance;
  } else if (config.optimizer == OptimizerKind::kB2ld ||
             config.optimizer == OptimizerKind::kBling) {
    const double rho = config.bld_rho == 0.0 ? 1e-3 / mlp.num_params()
                                             : std::max(0.0, config.bld_rho);
    auto layered = std::make_unique<LayeredObjective>(
        &mlp.network(), &train_table.x, &train_table.y, rho);
    LayeredObjective* f = layered.get();
    objective = std::move(layered);  // the reported objective is f
    if (config.optimizer == OptimizerKind::kB2ld) {
      B2ldOptions o = config.b2ld;
      o.max_sweeps = config.max_epochs;
      o.max_seconds = config.max_seconds;
      o.report_every = config.report_every;
      o.seed = config.seed;
      result.summary = MinimizeB2ld(o, *f, &w, &monitor);
    } else {
      BlingOptions o = config.bling;
      o.max_epochs = config.max_epochs;
      o.max_seconds = config.max_seconds;
      o.report_every = config.report_every;
      o.seed = config.seed;
      result.summary = MinimizeBling(o, *f, &w, &monitor);
    }
  } else if (config.optimizer == OptimizerKind::kLbfgs) {
    LbfgsOptions o = config.lbfgs;
    o.max_iterations = config.max_epochs;
    o.max_seconds = config.max_seconds;
    o.tolerance = config.tolerance;
    o.report_every = config.report_every;
    result.summary = MinimizeLbfgs(o, *objective, &w, &monitor);
  } else {
    FirstOrderOptions o = config.first_order;
    o.method = config.optimizer == OptimizerKind::kSgd
                   ? FirstOrderOptions::Method::kSgd
                   : FirstOrderOptions::Method::kAdam;
    o.max_epochs = config.max_epochs;
    o.max_seconds = config.max_seconds;
    o.tolerance = config.tolerance;
    o.report_every = config.report_every;
    o.seed = config.seed;
    result.summary = MinimizeFirstOrder(o, *objective, &w, &monitor);
  }
  result.train_seconds = result.summary.seconds;
  result.ms_per_epoch =
      result.summary.iterations > 0
          ? 1000.0 * result.summary.seconds / result.summary.iterations
          : 0.0;
  SPARROW_RETURN_IF_ERROR(monitor.error());
  model.params = w;
  if (monitor.has_best() && config.optimizer != OptimizerKind::kSbdl) {
    // The best iterate on validation data is the model; report its objective.
    // (SBDL returns its best outer iterate itself, with the matching mask.)
    model.params = monitor.best_params();
    result.summary.final_loss = objective->Evaluate(model.params, nullptr);
  }

  Metrics& m = result.metrics;
  if (config.model.kind == ModelKind::kMlp) {
    SPARROW_RETURN_IF_ERROR(EvaluateTable(model, data.train_table, 0, &m));
    SPARROW_RETURN_IF_ERROR(EvaluateTable(model, data.validation_table, 1, &m));
    SPARROW_RETURN_IF_ERROR(EvaluateTable(model, data.test_table, 2, &m));
  } else {
    SPARROW_RETURN_IF_ERROR(EvaluateSequences(model, data.train_seq, 0, &m));
    SPARROW_RETURN_IF_ERROR(
        EvaluateSequences(model, data.validation_seq, 1, &m));
    SPARROW_RETURN_IF_ERROR(EvaluateSequences(model, data.test_seq, 2, &m));
  }
  const Sparsity sp =
      ComputeSparsity(model.params.tail(model.params.size() - x0));
  m.sparsity_pct = sp.zero_pct;
  m.remaining_pct = sp.remaining_pct;
  if (config.model.kind == ModelKind::kStateSpaceRnn) {
    m.model_order = ModelOrder(rnn, model.params);
  } else {
    m.layers = WeightSparsity(mlp.network(), model.params.data());
    m.removed = DeadUnitNames(FindDeadUnits(mlp.network(), model.params.data()),
                              train_table.input_names);
  }
  return result;
}

}  // namespace sparrow::core
