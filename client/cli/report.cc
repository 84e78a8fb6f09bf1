#include "client/cli/report.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "translate/metrics.h"
#include "translate/sweep.h"

namespace sparrow::cli {
namespace {

bool HigherIsBetter(const std::string& metric) {
  return metric.find("bfr") != std::string::npos ||
         metric.find("accuracy") != std::string::npos ||
         metric == "sparsity_pct";
}

// {"name": [values], ...} of named columns.
nlohmann::json ColumnsJson(
    const std::vector<std::pair<std::string, std::vector<double>>>& cols) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, values] : cols) out[name] = values;
  return out;
}

nlohmann::json RunJson(const RunReport& r) {
  nlohmann::json j;
  j["seed"] = r.seed;
  if (!r.settings.empty()) {
    nlohmann::json settings = nlohmann::json::object();
    for (const auto& [field, value] : r.settings)
      settings[field] = nlohmann::json::parse(value, nullptr, false);
    j["settings"] = settings;
  }
  if (std::isfinite(r.selection.error)) j["validation"] = r.selection.error;
  for (const auto& [name, value] : r.metrics) j[name] = value;
  j["epochs"] = r.epochs;
  j["seconds"] = r.seconds;
  j["ms_per_epoch"] = r.ms_per_epoch;
  j["final_loss"] = r.final_loss;
  j["termination"] = r.termination;
  if (!r.message.empty()) j["message"] = r.message;
  if (!r.layers.empty()) {
    j["layers"] = nlohmann::json::array();
    for (const core::LayerSparsity& l : r.layers) {
      j["layers"].push_back({{"neurons", l.neurons},
                             {"inputs", l.inputs},
                             {"zeros", l.zeros},
                             {"zero_pct", l.zero_pct},
                             {"remaining_pct", l.remaining_pct}});
    }
  }
  if (!r.removed.empty()) j["removed"] = r.removed;
  if (!r.extras.empty()) {
    nlohmann::json extras = nlohmann::json::object();
    for (const auto& [name, value] : r.extras) extras[name] = value;
    j["optimizer"] = extras;
  }
  if (!r.per_epoch.empty()) j["per_epoch"] = ColumnsJson(r.per_epoch);
  if (!r.loss_history.empty()) j["loss_history"] = ColumnsJson(r.loss_history);
  return j;
}

// RunReport::loss_history of `history`: every record, or kMaxHistory evenly
// spaced ones and the last.
std::vector<std::pair<std::string, std::vector<double>>> LossHistory(
    const std::vector<core::IterationRecord>& history) {
  std::vector<std::pair<std::string, std::vector<double>>> cols = {
      {"iteration", {}}, {"loss", {}}, {"seconds", {}}, {"validation", {}}};
  const size_t n = history.size();
  const size_t stride =
      n <= kMaxHistory ? 1 : (n + kMaxHistory - 1) / kMaxHistory;
  bool validated = false;
  for (size_t i = 0; i < n; ++i) {
    if (i % stride != 0 && i + 1 != n) continue;
    const core::IterationRecord& rec = history[i];
    cols[0].second.push_back(rec.iteration);
    cols[1].second.push_back(rec.loss);
    cols[2].second.push_back(rec.elapsed_seconds);
    cols[3].second.push_back(rec.validation_metric);
    validated = validated || std::isfinite(rec.validation_metric);
  }
  if (!validated) cols.pop_back();
  if (cols[0].second.empty()) return {};
  return cols;
}

// The per-epoch metrics of the history's records (RunReport::per_epoch): the
// epoch, its mean minibatch loss, the optimizer's seconds so far, and the
// samples_per_s and test_accuracy extras.
std::vector<std::pair<std::string, std::vector<double>>> PerEpoch(
    const std::vector<core::IterationRecord>& history) {
  std::vector<std::pair<std::string, std::vector<double>>> cols = {
      {"epoch", {}},         {"loss", {}},          {"seconds", {}},
      {"samples_per_s", {}}, {"test_accuracy", {}},
  };
  constexpr size_t kFirstExtra = 3, kAccuracy = 4;
  for (const core::IterationRecord& rec : history) {
    std::vector<double> row = {static_cast<double>(rec.iteration), rec.loss,
                               rec.elapsed_seconds, NAN, NAN};
    for (const auto& [name, value] : rec.extras) {
      for (size_t c = kFirstExtra; c < cols.size(); ++c) {
        if (name == cols[c].first) row[c] = value;
      }
    }
    if (std::isnan(row[kFirstExtra])) continue;  // not a minibatch epoch's
    for (size_t c = 0; c < cols.size(); ++c) cols[c].second.push_back(row[c]);
  }
  if (cols[0].second.empty()) return {};
  if (std::all_of(cols[kAccuracy].second.begin(), cols[kAccuracy].second.end(),
                  [](double v) { return std::isnan(v); })) {
    cols.pop_back();
  }
  return cols;
}

// Every numeric field of the runs, in first-seen order.
std::vector<std::pair<std::string, std::vector<double>>> Columns(
    const std::vector<RunReport>& reports) {
  std::vector<std::pair<std::string, std::vector<double>>> cols;
  auto add = [&](const std::string& name, double v) {
    auto it = std::find_if(cols.begin(), cols.end(),
                           [&](const auto& c) { return c.first == name; });
    if (it == cols.end()) {
      cols.push_back({name, {}});
      it = cols.end() - 1;
    }
    it->second.push_back(v);
  };
  for (const RunReport& r : reports) {
    for (const auto& [name, value] : r.metrics) add(name, value);
    add("epochs", r.epochs);
    add("seconds", r.seconds);
    add("ms_per_epoch", r.ms_per_epoch);
  }
  return cols;
}

}  // namespace

RunReport MakeReport(uint64_t seed, const core::TrainResult& result,
                     const v1::Sweep& sweep) {
  RunReport r;
  r.seed = seed;
  const core::Metrics& m = result.metrics;
  const std::pair<const char*, double> all[] = {
      {"train_rmse", m.train_rmse},
      {"validation_rmse", m.validation_rmse},
      {"test_rmse", m.test_rmse},
      {"train_bfr", m.train_bfr},
      {"validation_bfr", m.validation_bfr},
      {"test_bfr", m.test_bfr},
      {"train_accuracy", m.train_accuracy},
      {"validation_accuracy", m.validation_accuracy},
      {"test_accuracy", m.test_accuracy},
      {"train_one_step_rmse", m.train_one_step_rmse},
      {"validation_one_step_rmse", m.validation_one_step_rmse},
      {"test_one_step_rmse", m.test_one_step_rmse},
      {"sparsity_pct", m.sparsity_pct},
      {"remaining_pct", m.remaining_pct},
      {"model_order", m.model_order},
      {"linear_train_rmse", m.linear_train_rmse},
      {"linear_validation_rmse", m.linear_validation_rmse},
      {"linear_test_rmse", m.linear_test_rmse},
      {"linear_train_bfr", m.linear_train_bfr},
      {"linear_validation_bfr", m.linear_validation_bfr},
      {"linear_test_bfr", m.linear_test_bfr},
  };
  for (const auto& [name, value] : all) {
    // NaN: not measured. Inf (a simulation that overflowed) is shown.
    if (!std::isnan(value)) r.metrics.push_back({name, value});
  }
  r.epochs = result.summary.iterations;
  r.seconds = result.train_seconds;
  r.ms_per_epoch = result.ms_per_epoch;
  r.final_loss = result.summary.final_loss;
  r.termination = core::TerminationName(result.summary.termination);
  r.message = result.summary.message;
  r.layers = m.layers;
  r.removed = m.removed;
  if (!result.summary.history.empty()) {
    r.extras = result.summary.history.back().extras;
  }
  r.per_epoch = PerEpoch(result.summary.history);
  r.loss_history = LossHistory(result.summary.history);
  // The returned model's own validation error (a staged run's earlier
  // stages may have reported lower ones).
  r.selection = translate::SelectionOf(sweep, translate::ToProto(m));
  return r;
}

double RunReport::Metric(const std::string& name) const {
  for (const auto& [n, v] : metrics) {
    if (n == name) return v;
  }
  return std::numeric_limits<double>::quiet_NaN();
}

nlohmann::json ReportJson(const std::vector<RunReport>& reports, int best,
                          bool several) {
  if (!several) return RunJson(reports[0]);
  nlohmann::json j;
  j["runs"] = nlohmann::json::array();
  for (const RunReport& r : reports) {
    nlohmann::json run = RunJson(r);
    run["trial"] = r.trial;
    j["runs"].push_back(std::move(run));
  }
  j["best_seed"] = reports[best].seed;
  j["chosen"] = best;
  j["chosen_trial"] = reports[best].trial;
  if (!reports[best].choice.empty()) j["choice"] = reports[best].choice;
  if (!reports[best].settings.empty()) return j;  // a grid or path
  nlohmann::json summary;
  for (auto& [name, values] : Columns(reports)) {
    const double n = static_cast<double>(values.size());
    double mean = 0.0;
    for (double v : values) mean += v / n;
    double var = 0.0;
    for (double v : values) var += (v - mean) * (v - mean) / n;
    std::vector<double> sorted = values;
    std::sort(sorted.begin(), sorted.end());
    const size_t k = sorted.size();
    const double median =
        k % 2 ? sorted[k / 2] : 0.5 * (sorted[k / 2 - 1] + sorted[k / 2]);
    const bool up = HigherIsBetter(name);
    const bool cost =
        name == "seconds" || name == "ms_per_epoch" || name == "epochs";
    nlohmann::json s = {
        {"mean", mean}, {"std", std::sqrt(var)}, {"median", median}};
    if (!cost) s["best"] = up ? sorted.back() : sorted.front();
    summary[name] = s;
  }
  j["summary"] = summary;
  return j;
}

namespace {

// "tau" for "regularization.l1.tau".
std::string ShortName(const std::string& field) {
  const size_t dot = field.rfind('.');
  return dot == std::string::npos ? field : field.substr(dot + 1);
}

}  // namespace

// "seed 3", or for a sweep's trial "trial 2 (tau=0.1 seed=3)".
std::string RunLabel(const RunReport& r) {
  if (r.settings.empty()) return absl::StrFormat("seed %d", r.seed);
  std::string label = absl::StrFormat("trial %d (", r.trial);
  for (const auto& [field, value] : r.settings) {
    absl::StrAppend(&label, ShortName(field), "=", value, " ");
  }
  return absl::StrCat(label, "seed=", r.seed, ")");
}

std::string ReportTable(const std::vector<RunReport>& reports, int best) {
  const auto cols = Columns(reports);
  const bool sweep = !reports[0].settings.empty();
  std::string out;
  for (const auto& [field, value] : reports[0].settings)
    out += absl::StrFormat("%-12s ", ShortName(field));  // values fit: %.6g
  out += absl::StrFormat("%-6s", "seed");
  for (const auto& c : cols) out += absl::StrFormat(" %14s", c.first);
  out += "  termination\n";
  for (size_t i = 0; i < reports.size(); ++i) {
    for (const auto& [field, value] : reports[i].settings)
      out += absl::StrFormat("%-12s ", value);
    out += absl::StrFormat("%-6d", reports[i].seed);
    for (const auto& c : cols) {
      out += i < c.second.size() ? absl::StrFormat(" %14.6g", c.second[i])
                                 : absl::StrFormat(" %14s", "-");
    }
    const bool marked = static_cast<int>(i) == best && reports.size() > 1;
    out += "  " + reports[i].termination +
           (marked ? (sweep ? "  (chosen)" : "  (best)") : "") + "\n";
  }
  if (reports.size() > 1 && !sweep) {
    out += absl::StrFormat("%-6s", "mean");
    for (const auto& c : cols) {
      double mean = 0.0;
      for (double v : c.second) mean += v / c.second.size();
      out += absl::StrFormat(" %14.6g", mean);
    }
    out += "\n";
  }
  for (const RunReport& r : reports) {
    if (!r.message.empty())
      out += absl::StrFormat("%s: %s\n", RunLabel(r), r.message);
  }
  if (best < 0) return out;  // nothing chosen
  const RunReport& b = reports[best];
  if (reports.size() > 1 && !b.choice.empty()) {
    out += absl::StrFormat("chosen: %s: %s\n", RunLabel(b), b.choice);
  }
  if (!b.layers.empty() &&
      std::any_of(b.layers.begin(), b.layers.end(),
                  [](const core::LayerSparsity& l) { return l.zeros > 0; })) {
    out += absl::StrFormat("%s weights remaining per layer:", RunLabel(b));
    for (const core::LayerSparsity& l : b.layers) {
      out += absl::StrFormat(" %dx%d %.1f%%", l.neurons, l.inputs,
                             l.remaining_pct);
    }
    out += "\n";
  }
  if (!b.removed.empty()) {
    // The full list is in --json and in the stored model.
    constexpr size_t kShown = 12;
    const std::vector<std::string> shown(
        b.removed.begin(),
        b.removed.begin() + std::min(kShown, b.removed.size()));
    out += absl::StrFormat("%s removed %d units: %s%s\n", RunLabel(b),
                           b.removed.size(), absl::StrJoin(shown, ", "),
                           b.removed.size() > kShown ? ", ..." : "");
  }
  return out;
}

}  // namespace sparrow::cli
