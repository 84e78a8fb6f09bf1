#include "core/train/resume.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "core/train/methods.h"
#include "core/train/stages.h"
#include "core/util/status_macros.h"

namespace sparrow::core {
namespace {

absl::Status CheckPoint(const ResumePoint& p, int budget) {
  const char* bad = nullptr;
  if (p.iteration < 0 || p.iteration > budget) {
    bad = "an iteration outside the job's budget";
  } else if (p.best_params.size() != 0 && p.params.size() != 0 &&
             p.best_params.size() != p.params.size()) {
    bad = "a best iterate of another size than the parameters";
  } else if (!std::isfinite(p.elapsed_seconds) || p.elapsed_seconds < 0) {
    bad = "a negative or non-finite elapsed time";
  } else if (!p.params.allFinite()) {
    bad = "non-finite parameters";
  } else if (!p.state.allFinite()) {
    bad = "a non-finite optimizer state";
  } else if (!p.best_params.allFinite() ||
             (p.best_params.size() > 0 &&
              !std::isfinite(p.best_validation_metric)) ||
             p.reports_since_best < 0) {
    bad = "an invalid best iterate on validation data";
  } else if (std::isinf(p.stall_reference) || p.stall_since < 0) {
    bad = "an invalid stall test state";
  }
  if (bad == nullptr) return absl::OkStatus();
  return absl::DataLossError(
      absl::StrCat("the job's checkpoint has ", bad,
                   "; it cannot come from a run of this job"));
}

}  // namespace

void KeepCheckpoint(const IterationRecord& r, int iterations_before,
                    double seconds_before, ResumePoint* point) {
  point->iteration = iterations_before + r.iteration;
  point->elapsed_seconds = seconds_before + r.elapsed_seconds;
  if (r.params != nullptr) point->params = *r.params;
  if (r.optimizer_state != nullptr) point->state = *r.optimizer_state;
  point->step_size = r.step_size;
  // The best iterate changes only with its metric: copy it then only.
  if (r.best_params != nullptr &&
      (point->best_params.size() == 0 ||
       r.best_validation_metric != point->best_validation_metric)) {
    point->best_params = *r.best_params;
  }
  point->best_validation_metric = r.best_validation_metric;
  point->reports_since_best = r.reports_since_best;
  point->stall_reference = r.stall_reference;
  point->stall_since = r.stall_since;
  point->loss =
      std::isfinite(r.loss) ? r.loss : std::numeric_limits<double>::quiet_NaN();
  if (r.stage_start) {  // nothing of the stage before carries over
    point->state.resize(0);
    point->best_params.resize(0);
    point->best_validation_metric = std::numeric_limits<double>::infinity();
    point->reports_since_best = 0;
  }
  point->stage = r.stage;
  point->stage_start_iteration = iterations_before + r.stage_start_iteration;
  point->stage_start_seconds = seconds_before + r.stage_start_seconds;
}

namespace {

// A multi-stage run goes on in the checkpoint's stage: the stages before it
// are done, and *local counts the iterations and seconds of that stage only.
absl::Status ResumeStage(const ResumePoint& point, TrainConfig* config,
                         ResumePoint* local) {
  if (!IsStaged(*config) && point.stage == 0) return absl::OkStatus();
  const int stages = static_cast<int>(config->stages.size());
  if (point.stage < 0 || point.stage >= stages ||
      point.stage_start_iteration < 0 ||
      point.stage_start_iteration > point.iteration ||
      !(point.stage_start_seconds >= 0) ||
      point.stage_start_seconds > point.elapsed_seconds) {
    return absl::DataLossError(
        absl::StrCat("the job's checkpoint is in stage ", point.stage + 1,
                     " at an impossible place (the job has ", stages,
                     " stages); it cannot come from a run of this job"));
  }
  if (point.stage > 0) {
    UseStage(config->stages[point.stage], config);
    config->stages.erase(config->stages.begin(),
                         config->stages.begin() + point.stage);
  }
  config->stage_offset = point.stage;
  config->stage_iterations_done = point.iteration - point.stage_start_iteration;
  config->stage_seconds_done =
      point.elapsed_seconds - point.stage_start_seconds;
  local->iteration = config->stage_iterations_done;
  local->elapsed_seconds = config->stage_seconds_done;
  return absl::OkStatus();
}

// A checkpoint at the last iteration of a stage's budget, taken before the
// next stage started: the next stage starts from the stage's model (its best
// iterate on validation data, else the last).
bool AtStageEnd(const ResumePoint& p, const TrainConfig& config) {
  const int stages = static_cast<int>(config.stages.size());
  if (!IsStaged(config) || p.stage < 0 || p.stage + 1 >= stages) return false;
  const int done = p.iteration - p.stage_start_iteration;
  return done > 0 && done >= IterationBudget(StageConfig(config, p.stage));
}

ResumePoint NextStageStart(const ResumePoint& p) {
  ResumePoint next;
  next.iteration = p.iteration;
  next.elapsed_seconds = p.elapsed_seconds;
  next.params = p.best_params.size() > 0 ? p.best_params : p.params;
  next.stage = p.stage + 1;
  next.stage_start_iteration = p.iteration;
  next.stage_start_seconds = p.elapsed_seconds;
  return next;
}

}  // namespace

absl::Status Resume(const ResumePoint& checkpoint, TrainConfig* config) {
  if (AtStageEnd(checkpoint, *config)) {
    return Resume(NextStageStart(checkpoint), config);
  }
  ResumePoint point = checkpoint;
  SPARROW_RETURN_IF_ERROR(ResumeStage(checkpoint, config, &point));
  if (IsStaged(*config) && point.iteration == 0) {
    // The start of a stage: its starting point, then the stage as it is.
    if (!point.params.allFinite()) {
      return absl::DataLossError(
          "the job's checkpoint has non-finite parameters; it cannot come "
          "from a run of this job");
    }
    config->initial_params = point.params;
    return absl::OkStatus();
  }
  int* budget = IterationBudget(config);
  if (absl::Status s = CheckPoint(point, *budget); !s.ok()) return s;
  config->initial_params = point.params;
  *budget = std::max(1, *budget - std::min(*budget, point.iteration));
  StopRules& stop = Stop(config->optimizer);
  if (stop.max_seconds > 0) {  // covers every attempt
    stop.max_seconds = std::max(1e-3, stop.max_seconds - point.elapsed_seconds);
  }
  stop.stall_reference = point.stall_reference;
  stop.stall_since = point.stall_since;
  if (std::isfinite(point.loss)) stop.resume_loss = point.loss;
  ResumeMethod(point, config);
  config->resume_best_params = point.best_params;
  config->resume_best_metric = point.best_params.size() > 0
                                   ? point.best_validation_metric
                                   : std::numeric_limits<double>::infinity();
  config->resume_reports_since_best = point.reports_since_best;
  return absl::OkStatus();
}

}  // namespace sparrow::core
