#include "server/http/views.h"

#include <algorithm>
#include <cmath>
#include <variant>

#include "core/train/methods.h"
#include "core/train/model_registry.h"
#include "core/util/status_macros.h"
#include "google/protobuf/util/time_util.h"
#include "server/http/event_text.h"
#include "server/http/proto_json.h"
#include "translate/config.h"
#include "translate/data.h"
#include "translate/model.h"

namespace sparrow::server::http {
namespace {

using nlohmann::json;

json Number(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

// The spec's iteration budget (0 when the spec no longer translates).
int MaxIterations(const v1::JobSpec& spec) {
  auto config = translate::ToTrainConfig(spec);
  return config.ok() ? core::IterationBudget(*config) : 0;
}

void AddProgress(const v1::Job& job, json* j) {
  const double elapsed =
      job.last_seq() > 0 ? job.elapsed_seconds() : std::nan("");
  const int max_it = MaxIterations(job.spec());
  (*j)["max_iterations"] = max_it > 0 ? json(max_it) : json(nullptr);
  (*j)["elapsed_seconds"] = Number(elapsed);
  double eta = std::nan("");
  if (job.state() == v1::Job::RUNNING && job.iterations() > 0 && max_it > 0) {
    eta = elapsed * std::max(0, max_it - job.iterations()) / job.iterations();
  }
  (*j)["eta_seconds"] = Number(eta);
  const double nan = std::nan("");
  (*j)["best_validation_metric"] = Number(
      job.has_best_validation_metric() ? job.best_validation_metric() : nan);
  (*j)["sparsity_pct"] =
      Number(job.has_sparsity_pct() ? job.sparsity_pct() : nan);
}

}  // namespace

json JobSummary(const v1::Job& job) {
  json j = {{"id", job.id()},
            {"name", job.spec().name()},
            {"state", v1::Job::State_Name(job.state())},
            {"reason", job.reason()},
            {"optimizer", OneofName(job.spec().optimizer())},
            {"model", OneofName(job.spec().model())},
            {"dataset_id", job.spec().data().dataset_id()},
            {"iterations", job.iterations()},
            {"loss", job.last_seq() > 0 ? Number(job.loss()) : json(nullptr)},
            {"create_time", TimeJson(job.create_time())},
            {"start_time", TimeJson(job.start_time())},
            {"end_time", TimeJson(job.end_time())},
            {"last_seq", job.last_seq()},
            {"attempts", job.attempts()},
            {"replica", job.replica()},
            {"summary", job.summary()}};
  AddProgress(job, &j);
  return j;
}

json SeriesJson(const Series& s) {
  json iteration = json::array(), elapsed = json::array(), loss = json::array(),
       validation = json::array(), sparsity = json::array(),
       step = json::array();
  const double nan = std::nan("");
  for (const v1::SeriesPoint& p : s.points) {
    iteration.push_back(p.iteration());
    elapsed.push_back(Number(p.elapsed_seconds()));
    loss.push_back(Number(p.loss()));
    validation.push_back(
        Number(p.has_validation_metric() ? p.validation_metric() : nan));
    sparsity.push_back(Number(p.has_sparsity_pct() ? p.sparsity_pct() : nan));
    step.push_back(Number(p.has_step_size() ? p.step_size() : nan));
  }
  json states = json::array();
  for (const StateMark& m : s.states) {
    states.push_back(json{
        {"seq", m.seq},
        {"state", v1::Job::State_Name(static_cast<v1::Job::State>(m.state))},
        {"time", FormatTime(m.unix_nanos)},
        {"reason", m.reason}});
  }
  const v1::SeriesBlock& t = s.total;
  const bool any = t.count() > 0;
  auto optional = [](bool has, double v) {
    return has ? Number(v) : json(nullptr);
  };
  return {{"last_seq", s.last_seq},
          {"count", t.count()},
          {"downsampled", static_cast<int64_t>(s.points.size()) < t.count()},
          {"iteration", std::move(iteration)},
          {"elapsed_seconds", std::move(elapsed)},
          {"loss", std::move(loss)},
          {"validation_metric", std::move(validation)},
          {"sparsity_pct", std::move(sparsity)},
          {"step_size", std::move(step)},
          {"states", std::move(states)},
          {"best",
           {{"loss", optional(any, t.min().loss())},
            {"validation_metric", optional(t.has_best_validation_metric(),
                                           t.best_validation_metric())}}},
          {"final",
           {{"loss", optional(any, t.last().loss())},
            {"validation_metric", optional(t.has_last_validation_metric(),
                                           t.last_validation_metric())},
            {"sparsity_pct",
             optional(t.has_last_sparsity_pct(), t.last_sparsity_pct())}}}};
}

}  // namespace sparrow::server::http
