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

// The last value of a column that is a number (NaN when none is).
double LastNumber(const std::vector<double>& v) {
  for (auto it = v.rbegin(); it != v.rend(); ++it) {
    if (!std::isnan(*it)) return *it;
  }
  return std::nan("");
}

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

json Column(const std::vector<double>& v, const std::vector<size_t>& keep) {
  json out = json::array();
  for (size_t i : keep) out.push_back(Number(v[i]));
  return out;
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
            {"summary", job.summary()}};
  AddProgress(job, &j);
  return j;
}

json SeriesJson(const SeriesColumns& s, int points) {
  const std::vector<size_t> keep = DownsampleMinMax(s.loss, points);
  json iteration = json::array();
  for (size_t i : keep) iteration.push_back(s.iteration[i]);
  json states = json::array();
  for (const StateMark& m : s.states) {
    states.push_back(json{
        {"seq", m.seq},
        {"state", v1::Job::State_Name(static_cast<v1::Job::State>(m.state))},
        {"time", FormatTime(m.unix_nanos)},
        {"reason", m.reason}});
  }
  const bool any = s.size() > 0;
  return {{"last_seq", s.last_seq},
          {"count", s.size()},
          {"downsampled", keep.size() < s.size()},
          {"iteration", std::move(iteration)},
          {"elapsed_seconds", Column(s.elapsed_seconds, keep)},
          {"loss", Column(s.loss, keep)},
          {"validation_metric", Column(s.validation_metric, keep)},
          {"sparsity_pct", Column(s.sparsity_pct, keep)},
          {"step_size", Column(s.step_size, keep)},
          {"states", std::move(states)},
          {"best",
           {{"loss", Number(s.best_loss)},
            {"validation_metric", Number(s.best_validation)}}},
          {"final",
           {{"loss", any ? Number(s.loss.back()) : json(nullptr)},
            {"validation_metric", Number(LastNumber(s.validation_metric))},
            {"sparsity_pct", Number(LastNumber(s.sparsity_pct))}}}};
}

}  // namespace sparrow::server::http
