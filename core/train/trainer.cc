#include "core/train/trainer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/data/narx.h"
#include "core/metrics/metrics.h"
#include "core/train/methods.h"
#include "core/train/model_registry.h"
#include "core/train/optimizer.h"
#include "core/train/setup.h"
#include "core/train/stages.h"
#include "core/util/option_error.h"
#include "core/util/status_macros.h"
#include "core/util/thread_pool.h"

namespace sparrow::core {
namespace {

absl::Status Positive(absl::string_view field, double v) {
  if (v > 0 && std::isfinite(v)) return absl::OkStatus();
  return OptionError(field, v, "positive");
}
absl::Status NonNegative(absl::string_view field, double v) {
  if (v >= 0 && std::isfinite(v)) return absl::OkStatus();
  return OptionError(field, v, ">= 0 and finite");
}

// Wraps the user's callback: adds the validation metric, keeps the best iterate
// on validation data, and stops after `patience` reports without improvement.
// Minibatch epochs (sgd, adam) on table data also report, as extras, the
// throughput "samples_per_s" (training samples per second of optimizer time)
// and, for classifiers with a test split, "test_accuracy" (%): progress only;
// the test split never steers the run.
class ValidationMonitor : public IterationCallback {
 public:
  ValidationMonitor(Model* model, const TrainConfig& config,
                    const TrainData& data, int skip, IterationCallback* user,
                    ThreadPool* pool)
      : model_(model),
        config_(config),
        data_(data),
        user_(user),
        pool_(pool),
        skip_(skip),
        best_(config.resume_best_metric),
        since_best_(config.resume_reports_since_best),
        best_params_(config.resume_best_params) {
    const bool sequence = FamilyOf(model->config.kind).sequence();
    active_ = sequence ? !data.validation_seq.traces.empty()
                       : data.validation_table.num_samples() > 0;
    epochs_ =
        !sequence && (std::holds_alternative<SgdOptions>(config.optimizer) ||
                      std::holds_alternative<AdamOptions>(config.optimizer) ||
                      IsRls(config.optimizer));
    test_accuracy_ = epochs_ && IsClassification(config.loss) &&
                     data.test_table.num_samples() > 0;
  }
  CallbackResult OnIteration(IterationRecord* r) override {
    if (active_ && r->params != nullptr && !Validate(r)) {
      return CallbackResult::kAbort;
    }
    if (active_) {
      r->best_params = has_best() ? &best_params_ : nullptr;
      r->best_validation_metric = best_;
      r->reports_since_best = since_best_;
    }
    if (epochs_ && r->params != nullptr && !AddEpochMetrics(r)) {
      return CallbackResult::kAbort;
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
  // Makes the starting point w, whose validation score is `metric` (already
  // measured), the first candidate for the best iterate, so that a run from
  // a fitted linear model never ends worse on validation than where it
  // started. Not for a resume, whose checkpoint carries its best.
  void SeedWithStart(const Eigen::VectorXd& w, double metric) {
    if (!active_ || has_best() || !std::isfinite(metric)) return;
    best_ = metric;
    best_params_ = w;
    since_best_ = 0;
    best_is_start_ = true;
  }
  // No iterate scored better on validation than the starting point.
  bool best_is_start() const { return best_is_start_; }
  // A validation evaluation that failed; the run was aborted because of it.
  const absl::Status& error() const { return error_; }
  const Eigen::VectorXd& best_params() const { return best_params_; }

 private:
  // Sets r->validation_metric and tracks the best iterate; false when the
  // evaluation failed.
  bool Validate(IterationRecord* r) {
    model_->params = *r->params;
    Metrics m;
    error_ = Evaluate(*model_, data_, 1, &m, pool_);
    if (!error_.ok()) return false;
    r->validation_metric = ValidationError(config_, m);
    if (std::isfinite(r->validation_metric) && r->validation_metric < best_) {
      best_ = r->validation_metric;
      best_params_ = *r->params;
      since_best_ = 0;
      best_is_start_ = false;
    } else {
      ++since_best_;
    }
    return true;
  }

  // Appends samples_per_s and test_accuracy to r->extras; false when the
  // test evaluation failed.
  bool AddEpochMetrics(IterationRecord* r) {
    const double seconds = r->elapsed_seconds - last_seconds_;
    const double samples =
        static_cast<double>(data_.train_table.num_samples()) *
        (r->iteration - last_iteration_);
    if (seconds > 0) r->extras.emplace_back("samples_per_s", samples / seconds);
    last_seconds_ = r->elapsed_seconds;
    last_iteration_ = r->iteration;
    if (!test_accuracy_) return true;
    model_->params = *r->params;
    Metrics m;
    error_ = EvaluateTable(*model_, data_.test_table, 2, &m);
    if (!error_.ok()) return false;
    r->extras.emplace_back("test_accuracy", m.test_accuracy);
    return true;
  }

  Model* model_;
  const TrainConfig& config_;
  const TrainData& data_;
  IterationCallback* user_;
  ThreadPool* pool_;  // may be null
  const int skip_;    // leading parameters left out of the sparsity count
  bool active_ = false;
  bool epochs_ = false;
  bool test_accuracy_ = false;
  int last_iteration_ = 0;
  double last_seconds_ = 0.0;
  double best_;
  int since_best_;
  Eigen::VectorXd best_params_;
  bool best_is_start_ = false;
  absl::Status error_;
};

// Float32 products exist in the dense and conv layers' first-order path; the
// second-order methods' Jacobians and the recurrent layers are double only.
absl::Status CheckPrecision(const TrainConfig& c) {
  if (c.model.precision == Precision::kFloat64) return absl::OkStatus();
  if (!c.model.is<MlpKind>() && !c.model.is<CnnKind>()) {
    return absl::InvalidArgumentError(
        "model.precision \"float32\" applies to mlp and cnn models; remove "
        "it (the other kinds compute in float64)");
  }
  if (!IsFirstOrder(c.optimizer) && !IsRls(c.optimizer)) {
    return absl::InvalidArgumentError(
        "model.precision \"float32\" needs optimizer sgd, adam, lbfgs or "
        "rls; the other optimizers compute in float64, so remove it");
  }
  return absl::OkStatus();
}

absl::Status ValidateModelAndData(const TrainConfig& c) {
  SPARROW_RETURN_IF_ERROR(c.loss.Validate());
  SPARROW_RETURN_IF_ERROR(NonNegative("regularization.rho_x0", c.rho_x0));
  SPARROW_RETURN_IF_ERROR(NonNegative("regularization.rho_theta", c.rho_theta));
  SPARROW_RETURN_IF_ERROR(Positive("model.init_scale", c.model.init_scale));
  if (c.patience < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("stopping.patience is ", c.patience, "; it must be >= 0"));
  }
  if (c.batch_size < 0 || c.bptt_window < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch_size (", c.batch_size, ") and bptt_window (",
                     c.bptt_window, ") must be >= 0"));
  }
  SPARROW_RETURN_IF_ERROR(CheckPrecision(c));
  return FamilyOf(c.model.kind).Check(c);
}

std::string Describe(const std::vector<std::string>& names) {
  return absl::StrCat("[", absl::StrJoin(names, ", "), "]");
}

std::string Describe(const std::vector<ParamBlock>& blocks) {
  return absl::StrCat("[",
                      absl::StrJoin(blocks, ", ",
                                    [](std::string* out, const ParamBlock& b) {
                                      absl::StrAppend(out, b.name, " ", b.size);
                                    }),
                      "]");
}

bool SameBlocks(const std::vector<ParamBlock>& a,
                const std::vector<ParamBlock>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].name != b[i].name || a[i].size != b[i].size) return false;
  }
  return true;
}

// Starts *model at the warm start's parameters, which must be a model of the
// same kind and structure on the same channels.
absl::Status ApplyWarmStart(const TrainConfig& config, Model* model) {
  if (config.warm_start == nullptr) return absl::OkStatus();
  const Model& warm = *config.warm_start;
  const ModelFamily& family = FamilyOf(model->config.kind);
  if (warm.config.kind.index() != model->config.kind.index()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "warm_start: the model is a ", FamilyOf(warm.config.kind).name(),
        " but this spec trains a ", family.name(),
        "; start from a model of the same kind"));
  }
  if (warm.input_names != model->input_names ||
      warm.output_names != model->output_names) {
    return absl::InvalidArgumentError(absl::StrCat(
        "warm_start: the model maps inputs ", Describe(warm.input_names),
        " to outputs ", Describe(warm.output_names), ", but this job's are ",
        Describe(model->input_names), " and ", Describe(model->output_names),
        "; use the same data columns (and, for a classifier, the same "
        "classes)"));
  }
  const std::vector<ParamBlock> want = family.Blocks(*model);
  const std::vector<ParamBlock> have = family.Blocks(warm);
  if (!SameBlocks(want, have) || warm.params.size() != model->params.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "warm_start: the model's parameter blocks ", Describe(have),
        " do not match this spec's ", Describe(want),
        "; use the same model fields (and, for free initial states, the same "
        "number of training traces, or of windows)"));
  }
  if (!warm.params.allFinite()) {
    return absl::InvalidArgumentError(
        "warm_start: the model's parameters contain NaN or Inf");
  }
  model->params = warm.params;
  return absl::OkStatus();
}

// Uses config.initial_params (a resume) when given.
absl::Status ApplyInitialParams(const TrainConfig& config, Model* model) {
  const Eigen::VectorXd& best = config.resume_best_params;
  if (best.size() != 0 &&
      (best.size() != model->params.size() || !best.allFinite())) {
    return absl::InvalidArgumentError(
        "the resumed best iterate on validation data does not fit the model "
        "or is not finite; it comes from a different spec");
  }
  if (config.initial_params.size() == 0) return absl::OkStatus();
  if (config.initial_params.size() != model->params.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the initial parameters have ", config.initial_params.size(),
        " entries but the model has ", model->params.size(),
        "; they come from a different spec"));
  }
  if (!config.initial_params.allFinite()) {
    return absl::InvalidArgumentError(
        "the initial parameters contain NaN or Inf");
  }
  model->params = config.initial_params;
  return absl::OkStatus();
}

// The fit on every split of the model as initialized, when that is a fitted
// linear model (ModelFamily::StartsAtLinearModel), and its ValidationError.
absl::Status EvaluateLinearStart(const TrainConfig& config, const Model& model,
                                 const TrainData& data, ThreadPool* pool,
                                 Metrics* m, double* validation_error) {
  if (!FamilyOf(model.config.kind).StartsAtLinearModel(model.config)) {
    return absl::OkStatus();
  }
  Metrics start;
  for (int which = 0; which < 3; ++which) {
    SPARROW_RETURN_IF_ERROR(Evaluate(model, data, which, &start, pool));
  }
  *validation_error = ValidationError(config, start);
  m->linear_train_rmse = start.train_rmse;
  m->linear_validation_rmse = start.validation_rmse;
  m->linear_test_rmse = start.test_rmse;
  m->linear_train_bfr = start.train_bfr;
  m->linear_validation_bfr = start.validation_bfr;
  m->linear_test_bfr = start.test_bfr;
  return absl::OkStatus();
}

// The validation score of a warm start that is a candidate for the best
// iterate (TrainConfig::warm_start_from_path); NaN for any other start, or
// without a validation split.
absl::StatusOr<double> WarmStartValidationError(const TrainConfig& config,
                                                const Model& model,
                                                const TrainData& data,
                                                ThreadPool* pool) {
  const double none = std::numeric_limits<double>::quiet_NaN();
  const bool validation = FamilyOf(model.config.kind).sequence()
                              ? !data.validation_seq.traces.empty()
                              : data.validation_table.num_samples() > 0;
  if (config.warm_start == nullptr || config.warm_start_from_path ||
      config.initial_params.size() > 0 || !validation) {
    return none;
  }
  Metrics m;
  SPARROW_RETURN_IF_ERROR(Evaluate(model, data, 1, &m, pool));
  return ValidationError(config, m);
}

// A free-run simulation that overflowed (its RMSE is Inf; NaN means not
// measured) is said in the run's message: the metric alone would read as
// missing, not as a model that is unstable when it runs on its own outputs.
void NoteUnstableSimulation(const Metrics& m, std::string* message) {
  const std::pair<const char*, double> splits[] = {
      {"training", m.train_rmse},
      {"validation", m.validation_rmse},
      {"test", m.test_rmse}};
  std::vector<std::string> unstable;
  for (const auto& [name, rmse] : splits) {
    if (std::isinf(rmse)) unstable.push_back(name);
  }
  if (unstable.empty()) return;
  absl::StrAppend(
      message, message->empty() ? "" : "; ", "the free-run simulation of the ",
      absl::StrJoin(unstable, ", "), " split", unstable.size() > 1 ? "s" : "",
      " is not finite: the model is unstable when it feeds back its own "
      "outputs; train on the simulation error (simulation_error: true, or a "
      "simulation-error stage after one-step training) or use fewer output "
      "lags");
}

// Metrics of the final model on every split, and its structure: sparsity,
// the model order of a state-space RNN, per-layer sparsity and removed units
// of an MLP.
absl::Status EvaluateAll(const TrainData& data, const TrainSetup& setup,
                         ThreadPool* pool, TrainResult* result) {
  const Model& model = result->model;
  Metrics& m = result->metrics;
  for (int which = 0; which < 3; ++which) {
    SPARROW_RETURN_IF_ERROR(Evaluate(model, data, which, &m, pool));
  }
  const Sparsity sp =
      ComputeSparsity(model.params.tail(model.params.size() - setup.skip));
  m.sparsity_pct = sp.zero_pct;
  m.remaining_pct = sp.remaining_pct;
  FamilyOf(model.config.kind).DescribeStructure(setup, model.params, &m);
  NoteUnstableSimulation(m, &result->summary.message);
  return absl::OkStatus();
}

}  // namespace

int RunThreads(const TrainConfig& config) {
  int threads = config.threads;
  if (const auto* o = std::get_if<NailsOptions>(&config.optimizer)) {
    threads = std::max(threads, o->threads);
  }
  if (const auto* o = std::get_if<NailmOptions>(&config.optimizer)) {
    threads = std::max(threads, o->threads);
  }
  return std::max(threads, 1);
}

double ValidationError(const TrainConfig& config, const Metrics& m) {
  using Metric = TrainConfig::ValidationMetric;
  switch (config.validation_metric) {
    case Metric::kRmse:
      return m.validation_rmse;
    case Metric::kOneStepRmse:
      return m.validation_one_step_rmse;
    case Metric::kBfr:
      return 100.0 - m.validation_bfr;
    case Metric::kAccuracy:
      return 100.0 - m.validation_accuracy;
    case Metric::kDefault:
      break;
  }
  return IsClassification(config.loss) ? 100.0 - m.validation_accuracy
                                       : m.validation_rmse;
}

const char* ValidationMetricNeeds(const TrainConfig& c) {
  using Metric = TrainConfig::ValidationMetric;
  const bool classifier = IsClassification(c.loss);
  const bool signal =
      (c.model.is<NarxMlpKind>() || c.model.is<StateSpaceRnnKind>()) &&
      !classifier;
  switch (c.validation_metric) {
    case Metric::kOneStepRmse:
      return c.model.is<NarxMlpKind>()
                 ? nullptr
                 : "a narx_mlp model (one step ahead from measured lags)";
    case Metric::kBfr:
      return signal ? nullptr
                    : "a narx_mlp or state_space_rnn model fitting a signal";
    case Metric::kAccuracy:
      return classifier ? nullptr
                        : "a classifier (a cross-entropy loss, or LOSS_MSE "
                          "with one_hot_targets)";
    case Metric::kDefault:
    case Metric::kRmse:
      break;
  }
  return nullptr;
}

absl::Status TrainConfig::Validate() const {
  if (const char* needs = ValidationMetricNeeds(*this)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "validation_metric needs ", needs, "; use the RMSE or the default"));
  }
  if (IsStaged(*this)) {
    if (stages.size() > kMaxStages) {
      return absl::InvalidArgumentError(
          absl::StrCat("stages has ", stages.size(), " stages; at most ",
                       kMaxStages, " are allowed"));
    }
    for (int k = 0; k < static_cast<int>(stages.size()); ++k) {
      if (absl::Status s = StageConfig(*this, k).Validate(); !s.ok()) {
        return absl::Status(s.code(), absl::StrCat("stages[", stage_offset + k,
                                                   "]: ", s.message()));
      }
    }
    return absl::OkStatus();
  }
  SPARROW_RETURN_IF_ERROR(ValidateModelAndData(*this));
  if (penalty.kind != Penalty::Kind::kNone && !UsesGaussNewton(optimizer)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "regularization.l1/l0/group_lasso/quantization/binary are solved by "
        "ADMM around optimizer nails or nailm; choose one of those",
        IsRls(optimizer) ? " (RLS has its own l1 term: optimizer.rls.l1)"
        : std::holds_alternative<SbdlOptions>(optimizer)
            ? " (SBDL has its own sparsity: optimizer.sbdl.lambda)"
            : ""));
  }
  return CheckMethod(*this);
}

absl::StatusOr<TrainResult> Train(const TrainConfig& config,
                                  const TrainData& data,
                                  IterationCallback* callback) {
  if (IsStaged(config)) return TrainStages(config, data, callback);
  if (config.warm_start != nullptr && !Stop(config.optimizer).warm_start) {
    // The end-of-run message then speaks of the model the run started from.
    TrainConfig warm = config;
    Stop(warm.optimizer).warm_start = true;
    return Train(warm, data, callback);
  }
  SPARROW_RETURN_IF_ERROR(config.Validate());
  TrainResult result;
  Model& model = result.model;
  model.config = config.model;
  model.loss = config.loss;
  model.rho_x0 = config.rho_x0;
  Rng rng(config.seed);
  TrainSetup setup;
  SPARROW_RETURN_IF_ERROR(BuildSetup(config, data, &rng, &model, &setup));
  // The scores between iterations and at the end run on the run's threads
  // (a free x0's estimate starts in parallel) while the method's own threads
  // wait; the method keeps its pool to itself, hence a second one.
  std::unique_ptr<ThreadPool> pool;
  if (RunThreads(config) > 1 && FamilyOf(model.config.kind).sequence()) {
    pool = std::make_unique<ThreadPool>(RunThreads(config));
  }
  double start_error = std::numeric_limits<double>::quiet_NaN();
  if (config.warm_start == nullptr) {
    SPARROW_RETURN_IF_ERROR(EvaluateLinearStart(config, model, data, pool.get(),
                                                &result.metrics, &start_error));
  }
  SPARROW_RETURN_IF_ERROR(ApplyWarmStart(config, &model));
  SPARROW_RETURN_IF_ERROR(ApplyInitialParams(config, &model));
  if (config.warm_start != nullptr) {
    SPARROW_ASSIGN_OR_RETURN(
        start_error, WarmStartValidationError(config, model, data, pool.get()));
  }

  ValidationMonitor monitor(&model, config, data, setup.skip, callback,
                            pool.get());
  // A linear-plus-neural model's fitted linear start is a model in its own
  // right, and so is a warm start's model (not a sweep path's point before,
  // trained with another weight); EvaluateLinearStart or
  // WarmStartValidationError scored it on the validation split (the score is
  // NaN for any other start).
  if (config.initial_params.size() == 0) {
    monitor.SeedWithStart(model.params, start_error);
  }
  Eigen::VectorXd w = model.params;
  SPARROW_ASSIGN_OR_RETURN(MethodResult run,
                           RunMethod(config, &setup, &w, &monitor, &model));
  result.summary = std::move(run.summary);
  result.train_seconds = result.summary.seconds;
  result.ms_per_epoch =
      result.summary.iterations > 0
          ? 1000.0 * result.summary.seconds / result.summary.iterations
          : 0.0;
  SPARROW_RETURN_IF_ERROR(monitor.error());
  model.params = w;
  if (monitor.has_best() && !run.returns_best) {
    // The best iterate on validation data is the model; report its objective.
    model.params = monitor.best_params();
    result.summary.final_loss =
        setup.objective->Evaluate(model.params, nullptr);
    if (monitor.best_is_start()) {
      absl::StrAppend(
          &result.summary.message, result.summary.message.empty() ? "" : "; ",
          "no iterate scored better on the validation split than the starting "
          "point (",
          config.warm_start != nullptr ? "the model it started from"
                                       : "the fitted linear model",
          "), which is the model");
    }
  }
  SPARROW_RETURN_IF_ERROR(EvaluateAll(data, setup, pool.get(), &result));
  return result;
}

}  // namespace sparrow::core
