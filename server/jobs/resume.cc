#include "server/jobs/resume.h"

#include "core/train/resume.h"

namespace sparrow::server {
namespace {

Eigen::VectorXd Vector(const google::protobuf::RepeatedField<double>& v) {
  return Eigen::Map<const Eigen::VectorXd>(v.data(), v.size());
}

}  // namespace

absl::Status ApplyCheckpoint(const v1::JobCheckpoint& c,
                             core::TrainConfig* config) {
  core::ResumePoint point;
  point.iteration = c.iteration();
  point.elapsed_seconds = c.elapsed_seconds();
  point.params = Vector(c.params());
  point.step_size = c.step_size();
  point.state = Vector(c.optimizer_state());
  point.best_params = Vector(c.best_params());
  point.best_validation_metric = c.best_validation_metric();
  point.reports_since_best = c.reports_since_best();
  if (c.has_stall_reference()) point.stall_reference = c.stall_reference();
  point.stall_since = c.stall_since();
  if (c.has_loss()) point.loss = c.loss();
  point.stage = c.stage();
  point.stage_start_iteration = c.stage_start_iteration();
  point.stage_start_seconds = c.stage_start_seconds();
  return core::Resume(point, config);
}

}  // namespace sparrow::server
