#include "core/train/stages.h"

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/util/status_macros.h"

namespace sparrow::core {
namespace {

// Puts a stage's records on the whole run's clock and marks their stage.
class StageCallback : public IterationCallback {
 public:
  StageCallback(IterationCallback* inner, int stage, int iterations_before,
                double seconds_before, int start_iteration,
                double start_seconds)
      : inner_(inner),
        stage_(stage),
        iterations_before_(iterations_before),
        seconds_before_(seconds_before),
        start_iteration_(start_iteration),
        start_seconds_(start_seconds) {}

  CallbackResult OnIteration(IterationRecord* r) override {
    if (inner_ == nullptr) return CallbackResult::kContinue;
    const int iteration = r->iteration;
    const double seconds = r->elapsed_seconds;
    r->iteration += iterations_before_;
    r->elapsed_seconds += seconds_before_;
    r->stage = stage_;
    r->stage_start_iteration = start_iteration_;
    r->stage_start_seconds = start_seconds_;
    r->extras.emplace_back("stage", stage_ + 1);
    const CallbackResult result = inner_->OnIteration(r);
    r->extras.pop_back();
    r->iteration = iteration;
    r->elapsed_seconds = seconds;
    return result;
  }

 private:
  IterationCallback* inner_;
  int stage_;
  int iterations_before_;
  double seconds_before_;
  int start_iteration_;
  double start_seconds_;
};

std::string StageName(const TrainConfig& config, int k) {
  const std::string& name = config.stages[k].name;
  return name.empty() ? absl::StrCat("stage ", config.stage_offset + k + 1)
                      : name;
}

// Adds a finished stage to the whole run's result, and its outcome to
// *reports.
// `iterations_earlier` of the stage were made before a resume.
void AddStage(const TrainConfig& stage_config, const std::string& name,
              int iterations_earlier, TrainResult stage, bool first,
              TrainResult* run, std::string* reports) {
  Summary& total = run->summary;
  const int iterations_before = total.iterations;
  const double seconds_before = total.seconds;
  for (IterationRecord& r : stage.summary.history) {
    r.iteration += iterations_before;
    r.elapsed_seconds += seconds_before;
    total.history.push_back(std::move(r));
  }
  absl::StrAppendFormat(reports, "%s%s (%s): %s after %d",
                        reports->empty() ? "" : "; ", name,
                        OptimizerName(stage_config.optimizer),
                        TerminationName(stage.summary.termination),
                        iterations_earlier + stage.summary.iterations);
  const Metrics linear = run->metrics;
  const double initial =
      first ? stage.summary.initial_loss : total.initial_loss;
  const bool resumed = first ? stage.summary.resumed : total.resumed;
  std::vector<IterationRecord> history = std::move(total.history);
  *run = std::move(stage);
  run->summary.history = std::move(history);
  run->summary.iterations += iterations_before;
  run->summary.seconds += seconds_before;
  run->summary.initial_loss = initial;
  run->summary.resumed = resumed;
  if (!first && std::isnan(run->metrics.linear_train_rmse)) {
    // The first stage started at the linear fit; later ones warm-start.
    run->metrics.linear_train_rmse = linear.linear_train_rmse;
    run->metrics.linear_validation_rmse = linear.linear_validation_rmse;
    run->metrics.linear_test_rmse = linear.linear_test_rmse;
    run->metrics.linear_train_bfr = linear.linear_train_bfr;
    run->metrics.linear_validation_bfr = linear.linear_validation_bfr;
    run->metrics.linear_test_bfr = linear.linear_test_bfr;
  }
}

// Tells the callback that stage `stage` starts from the run's model; false
// when the callback aborts the run.
bool StartStage(int stage, const TrainResult& run,
                IterationCallback* callback) {
  if (callback == nullptr) return true;
  IterationRecord r;
  r.stage_start = true;
  r.iteration = run.summary.iterations;
  r.elapsed_seconds = run.summary.seconds;
  r.params = &run.model.params;
  r.stage = stage;
  r.stage_start_iteration = r.iteration;
  r.stage_start_seconds = r.elapsed_seconds;
  return callback->OnIteration(&r) != CallbackResult::kAbort;
}

}  // namespace

bool IsStaged(const TrainConfig& config) { return !config.stages.empty(); }

void UseStage(const TrainStage& stage, TrainConfig* c) {
  c->optimizer = stage.optimizer;
  c->patience = stage.patience;
  c->batch_size = stage.batch_size;
  c->bptt_window = stage.bptt_window;
  c->shuffle = stage.shuffle;
  c->threads = stage.threads;
  c->admm = stage.admm;
  if (stage.simulation_error >= 0 && c->model.is<NarxMlpKind>()) {
    c->model.as<NarxMlpKind>().simulation_error = stage.simulation_error == 1;
  }
}

TrainConfig StageConfig(const TrainConfig& config, int k) {
  TrainConfig c = config;
  c.stages.clear();
  c.stage_offset = 0;
  c.stage_iterations_done = 0;
  c.stage_seconds_done = 0.0;
  // Stage 0's fields are the config's own (resumed, maybe).
  if (!IsStaged(config) || k == 0) return c;
  UseStage(config.stages[k], &c);
  c.warm_start_from_path = false;  // it starts from the stage before
  c.initial_params.resize(0);
  c.resume_best_params.resize(0);
  c.resume_best_metric = std::numeric_limits<double>::infinity();
  c.resume_reports_since_best = 0;
  return c;
}

absl::StatusOr<TrainResult> TrainStages(const TrainConfig& config,
                                        const TrainData& data,
                                        IterationCallback* callback) {
  TrainResult run;
  std::string reports;
  if (config.stage_offset > 0) {  // a resumed run, past its first stages
    reports = config.stage_offset == 1
                  ? std::string("stage 1 ended before a restart")
                  : absl::StrFormat("stages 1-%d ended before a restart",
                                    config.stage_offset);
  }
  std::shared_ptr<const Model> start = config.warm_start;
  for (int k = 0; k < static_cast<int>(config.stages.size()); ++k) {
    TrainConfig c = StageConfig(config, k);
    c.warm_start = start;
    const int done = run.summary.iterations;
    const double seconds = run.summary.seconds;
    if (k > 0 && !StartStage(config.stage_offset + k, run, callback)) {
      run.summary.termination = Termination::kUserAbort;
      break;
    }
    StageCallback stage_callback(callback, config.stage_offset + k, done,
                                 seconds,
                                 k == 0 ? -config.stage_iterations_done : done,
                                 k == 0 ? -config.stage_seconds_done : seconds);
    SPARROW_ASSIGN_OR_RETURN(TrainResult stage,
                             Train(c, data, &stage_callback));
    AddStage(c, StageName(config, k), k == 0 ? config.stage_iterations_done : 0,
             std::move(stage), k == 0, &run, &reports);
    const Termination end = run.summary.termination;
    if (end == Termination::kUserAbort || end == Termination::kDiverged) {
      break;
    }
    start = std::make_shared<const Model>(run.model);
  }
  // The stages' outcomes, then what the last one had to say.
  const std::string last = std::move(run.summary.message);
  run.summary.message =
      last.empty() ? reports : absl::StrCat(reports, "; ", last);
  run.train_seconds = run.summary.seconds;
  run.ms_per_epoch = run.summary.iterations > 0
                         ? 1000.0 * run.summary.seconds / run.summary.iterations
                         : 0.0;
  return run;
}

}  // namespace sparrow::core
