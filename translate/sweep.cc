#include "translate/sweep.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/train/setup.h"
#include "core/util/status_macros.h"
#include "google/protobuf/util/json_util.h"
#include "nlohmann/json.hpp"
#include "translate/config.h"
#include "translate/json.h"
#include "translate/suggest.h"

namespace sparrow::translate {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using Json = nlohmann::ordered_json;

// Top-level fields a sweep may not vary: the data and its split are loaded
// once for every trial, the seeds are the sweep's own.
constexpr const char* kFixedFields[] = {
    "name",      "data", "split", "normalization", "validation_data",
    "test_data", "seed", "sweep", "warm_start"};

absl::Status SweepError(absl::string_view where, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("sweep.", where, ": ", what));
}

// A dotted `field` ("regularization.l1.tau", camelCase accepted) checked
// against JobSpec: its parts' proto names and the field it ends at.
struct FieldPath {
  std::vector<std::string> names;
  const FieldDescriptor* last = nullptr;
};

// Every part but the last must be a message, and the first not a fixed field.
absl::StatusOr<FieldPath> ResolveField(absl::string_view where,
                                       absl::string_view field) {
  FieldPath path;
  std::vector<std::string>& names = path.names;
  const Descriptor* type = v1::JobSpec::descriptor();
  for (absl::string_view part : absl::StrSplit(field, '.')) {
    if (type == nullptr && path.last->is_repeated()) {
      return SweepError(
          where, absl::StrCat("'", field, "' goes inside '", names.back(),
                              "', a list: a sweep sets whole fields of the "
                              "spec, not one element of a list (a staged "
                              "spec's stage settings cannot be swept)"));
    }
    if (type == nullptr) {
      return SweepError(where,
                        absl::StrCat("'", field, "' goes past '", names.back(),
                                     "', which is not a message"));
    }
    const FieldDescriptor* f = type->FindFieldByName(std::string(part));
    if (f == nullptr) f = type->FindFieldByCamelcaseName(std::string(part));
    if (f == nullptr) {
      std::vector<std::string> known;
      for (int i = 0; i < type->field_count(); ++i)
        known.push_back(type->field(i)->name());
      const std::string closest = ClosestName(part, known);
      return SweepError(
          where,
          absl::StrCat(
              "'", field, "': no field '", part, "' in ", type->name(),
              closest.empty()
                  ? absl::StrCat(" (it has ", absl::StrJoin(known, ", "), ")")
                  : absl::StrCat("; did you mean '", closest, "'?")));
    }
    names.push_back(f->name());
    path.last = f;
    type = f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE &&
                   !f->is_repeated() &&
                   !absl::StartsWith(f->message_type()->full_name(),
                                     "google.protobuf.")
               ? f->message_type()
               : nullptr;
  }
  for (const char* fixed : kFixedFields) {
    if (names.front() == fixed) {
      return SweepError(
          where,
          absl::StrCat("'", field, "': a sweep cannot vary '", fixed,
                       "' (every trial trains on the same data; use "
                       "sweep.seeds for seeds). Run separate jobs instead"));
    }
  }
  if (names == std::vector<std::string>{"stopping", "validation_metric"}) {
    return SweepError(where,
                      absl::StrCat("'", field,
                                   "': the trials track the metric the sweep "
                                   "chooses by; set sweep.metric instead"));
  }
  return path;
}

struct Setting {
  std::string where;  // "grid[0]" or "path"
  std::string field;
  std::vector<std::string> names;   // resolved proto names
  std::vector<std::string> values;  // JSON texts
};

absl::StatusOr<Setting> GridSetting(const v1::Sweep::Axis& axis, int i) {
  Setting s;
  s.where = absl::StrCat("grid[", i, "]");
  s.field = axis.field();
  SPARROW_ASSIGN_OR_RETURN(const FieldPath field,
                           ResolveField(s.where, axis.field()));
  s.names = field.names;
  if (axis.values_size() == 0) {
    return SweepError(s.where, absl::StrCat("'", axis.field(),
                                            "' has no values; list them in "
                                            "\"values\": [...]"));
  }
  for (const google::protobuf::Value& v : axis.values()) {
    std::string text;
    if (!google::protobuf::util::MessageToJsonString(v, &text).ok()) {
      return SweepError(s.where, "a value that is not JSON");
    }
    s.values.push_back(text);
  }
  return s;
}

absl::StatusOr<Setting> PathSetting(const v1::Sweep::Path& path) {
  Setting s;
  s.where = "path";
  s.field = path.field();
  SPARROW_ASSIGN_OR_RETURN(const FieldPath field,
                           ResolveField(s.where, path.field()));
  s.names = field.names;
  const auto type = field.last->cpp_type();
  if (type != FieldDescriptor::CPPTYPE_DOUBLE &&
      type != FieldDescriptor::CPPTYPE_FLOAT) {
    return SweepError(s.where, absl::StrCat("'", path.field(),
                                            "' is not a floating-point field; "
                                            "a path varies a weight such as "
                                            "regularization.l1.tau (use a "
                                            "grid for other fields)"));
  }
  if (!(path.from() > 0) || !(path.to() > 0) || !std::isfinite(path.from()) ||
      !std::isfinite(path.to())) {
    return SweepError(s.where,
                      absl::StrFormat("from %g and to %g must both be > 0 and "
                                      "finite (a geometric grid)",
                                      path.from(), path.to()));
  }
  if (path.points() < 2 || path.points() > kMaxSweepPathPoints) {
    return SweepError(
        s.where, absl::StrFormat("points is %d; use 2 to %d", path.points(),
                                 kMaxSweepPathPoints));
  }
  // In logarithms: to / from itself can overflow (1e-300 to 1e300).
  const double log_from = std::log(path.from());
  const double log_step =
      (std::log(path.to()) - log_from) / (path.points() - 1);
  for (int k = 0; k < path.points(); ++k) {
    const double v = k == 0 ? path.from()
                     : k == path.points() - 1
                         ? path.to()
                         : std::exp(log_from + k * log_step);
    // Six significant digits: the value a trial's spec holds is the one its
    // row shows. A repeated field (optimizer.sbdl.lambda) takes the value for
    // every entry: a list of one.
    s.values.push_back(field.last->is_repeated() ? absl::StrFormat("[%.6g]", v)
                                                 : absl::StrFormat("%.6g", v));
  }
  return s;
}

// Two settings of one field, or of a field and a message around it, would
// overwrite each other.
absl::Status CheckDistinct(const std::vector<Setting>& settings) {
  for (size_t i = 0; i < settings.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      const std::vector<std::string>& a = settings[i].names;
      const std::vector<std::string>& b = settings[j].names;
      const size_t n = std::min(a.size(), b.size());
      if (std::equal(a.begin(), a.begin() + n, b.begin())) {
        return SweepError(
            settings[i].where,
            absl::StrCat("'", settings[i].field, "' and ", settings[j].where,
                         "'s '", settings[j].field,
                         "' set the same field; keep one"));
      }
    }
  }
  return absl::OkStatus();
}

// Every trial reads the data the base spec loads: the model family and the
// loss (tables or traces, one-hot targets) must stay.
absl::Status SameFamily(const v1::JobSpec& base, const v1::JobSpec& trial,
                        const std::vector<Setting>& settings) {
  if (trial.model().kind_case() == base.model().kind_case() &&
      trial.loss().kind() == base.loss().kind()) {
    return absl::OkStatus();
  }
  return SweepError(settings.front().where,
                    "a sweep cannot change the model family or the loss kind "
                    "(every trial trains on the data the spec loads); run "
                    "separate jobs instead");
}

// sweep.metric is one the trials will have (CheckValidationMetric), and the
// trials track the metric the sweep chooses by: the spec's own
// stopping.validation_metric, if set, must be the same.
absl::Status CheckMetric(const v1::JobSpec& spec) {
  const v1::Sweep::Metric metric = spec.sweep().metric();
  const v1::Sweep::Metric tracked = spec.stopping().validation_metric();
  if (tracked != v1::Sweep::METRIC_UNSPECIFIED && tracked != metric) {
    const std::string name = v1::Sweep::Metric_Name(tracked);
    return SweepError(
        "metric",
        metric == v1::Sweep::METRIC_UNSPECIFIED
            ? absl::StrCat("unset, while stopping.validation_metric is ", name,
                           "; set \"metric\": \"", name,
                           "\" in the sweep too (it chooses by it, and its "
                           "trials track it)")
            : absl::StrCat("the trials would track "
                           "stopping.validation_metric ",
                           name, " but the sweep chooses by ",
                           v1::Sweep::Metric_Name(metric),
                           "; set sweep.metric only (its trials track it)"));
  }
  return CheckValidationMetric(spec, metric, "sweep.metric");
}

// The spec with each setting's field at values[choice[i]] and the seed set.
absl::StatusOr<v1::JobSpec> TrialSpec(const Json& base,
                                      const std::vector<Setting>& settings,
                                      const std::vector<int>& choice,
                                      uint64_t seed) {
  Json spec = base;
  for (size_t i = 0; i < settings.size(); ++i) {
    const Setting& s = settings[i];
    Json* node = &spec;
    for (const std::string& name : s.names) {
      if (!node->is_object()) *node = Json::object();
      node = &(*node)[name];
    }
    *node =
        Json::parse(s.values[choice[i]], nullptr, /*allow_exceptions=*/false);
    if (node->is_discarded()) {
      return SweepError(
          s.where, absl::StrCat("'", s.field, "' value ", s.values[choice[i]],
                                " is not a JSON value"));
    }
  }
  spec["seed"] = std::to_string(seed);
  absl::StatusOr<v1::JobSpec> parsed = ParseJobSpecJson(spec.dump());
  if (parsed.ok()) return parsed;
  std::string what;
  for (size_t i = 0; i < settings.size(); ++i) {
    absl::StrAppend(&what, i > 0 ? ", " : "", settings[i].field, " = ",
                    settings[i].values[choice[i]]);
  }
  return SweepError(
      settings.back().where,
      absl::StrCat("the trial with ", what,
                   " is not a valid spec: ", parsed.status().message()));
}

// The sweep's own numbers: seeds, max_parallel, within_pct.
absl::Status CheckSweepNumbers(const v1::Sweep& sweep) {
  if (sweep.seeds() < 0) {
    return SweepError("seeds", absl::StrCat("is ", sweep.seeds(),
                                            "; it must be >= 0 (0 means 1)"));
  }
  if (sweep.max_parallel() < 0) {
    return SweepError(
        "max_parallel",
        absl::StrCat(
            "is ", sweep.max_parallel(),
            "; it must be >= 0 (0 = as many as the workers or cores allow)"));
  }
  if (!(sweep.within_pct() >= 0) || !std::isfinite(sweep.within_pct())) {
    return SweepError("within_pct",
                      absl::StrCat("is ", sweep.within_pct(),
                                   "; it must be >= 0 and finite"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<Trial>> ExpandSweep(const v1::JobSpec& spec) {
  const v1::Sweep& sweep = spec.sweep();
  SPARROW_RETURN_IF_ERROR(CheckSweepNumbers(sweep));
  std::vector<Setting> settings;
  for (int i = 0; i < sweep.grid_size(); ++i) {
    SPARROW_ASSIGN_OR_RETURN(Setting s, GridSetting(sweep.grid(i), i));
    settings.push_back(std::move(s));
  }
  const bool path = sweep.has_path();
  if (path) {
    SPARROW_ASSIGN_OR_RETURN(Setting s, PathSetting(sweep.path()));
    settings.push_back(std::move(s));
  }
  SPARROW_RETURN_IF_ERROR(CheckDistinct(settings));
  if (spec.has_sweep()) SPARROW_RETURN_IF_ERROR(CheckMetric(spec));
  if (!settings.empty() && !HasValidation(spec)) {
    return SweepError(
        settings.front().where,
        "a grid or path is chosen on validation data, never on the test "
        "split; set split.validation (rows), split.validation_fraction or "
        "validation_data");
  }
  const int64_t seeds = std::max(1, sweep.seeds());
  double total = static_cast<double>(seeds);  // a double cannot overflow
  for (const Setting& s : settings) total *= s.values.size();
  // Named after what makes the count: the seeds alone, else the first axis.
  const std::string count_field =
      settings.empty() || seeds > 1 ? "seeds" : settings.front().where;
  if (total > kMaxSweepTrials) {
    return SweepError(count_field,
                      absl::StrFormat("the sweep has %.0f trials (seeds x grid "
                                      "values x path points); at most %d. Use "
                                      "fewer seeds or values",
                                      total, kMaxSweepTrials));
  }
  v1::JobSpec base_spec = spec;
  base_spec.clear_sweep();
  // Each trial keeps the best iterate by the metric the sweep chooses by.
  if (spec.has_sweep()) {
    base_spec.mutable_stopping()->set_validation_metric(sweep.metric());
  }
  const std::string base_json = ToJson(base_spec);
  // Every trial holds its own copy of the spec, on the server several times
  // over (the jobs, their records, each status reply's description).
  if (total * base_json.size() > kMaxSweepSpecBytes) {
    return SweepError(
        count_field,
        absl::StrFormat("its %.0f trials would hold %.0f MiB of specs (%d "
                        "bytes each); at most %d MiB. Shorten the spec (its "
                        "name, description or inline values) or use fewer "
                        "trials",
                        total, total * base_json.size() / (1 << 20),
                        base_json.size(), kMaxSweepSpecBytes >> 20));
  }
  const Json base = Json::parse(base_json);
  const int grid_axes = static_cast<int>(settings.size()) - (path ? 1 : 0);
  const int path_points = path ? sweep.path().points() : 1;
  std::vector<Trial> trials;
  std::vector<int> choice(settings.size(), 0);
  // Odometer over the grid axes; for each grid point, each seed's path.
  for (bool more = true; more;) {
    for (int64_t s = 0; s < seeds; ++s) {
      for (int p = 0; p < path_points; ++p) {
        if (path) choice.back() = p;
        Trial t;
        t.index = static_cast<int>(trials.size());
        t.seed = spec.seed() + static_cast<uint64_t>(s);
        for (size_t i = 0; i < settings.size(); ++i) {
          t.settings.emplace_back(settings[i].field,
                                  settings[i].values[choice[i]]);
        }
        if (p > 0 && !sweep.path().cold_start()) t.warm_from = t.index - 1;
        SPARROW_ASSIGN_OR_RETURN(t.spec,
                                 TrialSpec(base, settings, choice, t.seed));
        SPARROW_RETURN_IF_ERROR(SameFamily(spec, t.spec, settings));
        trials.push_back(std::move(t));
      }
    }
    more = false;
    for (int a = grid_axes - 1; a >= 0 && !more; --a) {
      if (++choice[a] < static_cast<int>(settings[a].values.size())) {
        more = true;
      } else {
        choice[a] = 0;
      }
    }
  }
  return trials;
}

std::string TrialLabel(const Trial& trial) {
  std::string label;
  for (const auto& [field, value] : trial.settings) {
    const size_t dot = field.rfind('.');
    absl::StrAppend(&label,
                    field.substr(dot == std::string::npos ? 0 : dot + 1), "=",
                    value, " ");
  }
  absl::StrAppend(&label, "seed=", trial.seed);
  return label;
}

v1::SweepTrialOrigin TrialOrigin(const Trial& trial, int trials) {
  v1::SweepTrialOrigin origin;
  origin.set_index(trial.index);
  origin.set_trials(trials);
  origin.set_label(TrialLabel(trial));
  for (const auto& [field, value] : trial.settings) {
    v1::SweepTrialOrigin::Setting* s = origin.add_settings();
    s->set_field(field);
    s->set_value(value);
  }
  return origin;
}

Selection SelectionOf(const v1::Sweep& sweep, const v1::Metrics& m) {
  Selection s;
  bool higher_is_better = false;
  switch (sweep.metric()) {
    case v1::Sweep::METRIC_ONE_STEP_RMSE:
      // Absent (not 0) in the metrics of a sparrowd that predates it.
      s = {"validation_one_step_rmse",
           m.has_validation_one_step_rmse()
               ? m.validation_one_step_rmse()
               : std::numeric_limits<double>::quiet_NaN()};
      break;
    case v1::Sweep::METRIC_BFR:
      s = {"validation_bfr", m.validation_bfr()};
      higher_is_better = true;
      break;
    case v1::Sweep::METRIC_ACCURACY:
      s = {"validation_accuracy", m.validation_accuracy()};
      higher_is_better = true;
      break;
    case v1::Sweep::METRIC_RMSE:
      s = {"validation_rmse", m.validation_rmse()};
      break;
    default:  // a classifier's accuracy, else the RMSE
      if (std::isfinite(m.validation_accuracy())) {
        s = {"validation_accuracy", m.validation_accuracy()};
        higher_is_better = true;
      } else {
        s = {"validation_rmse", m.validation_rmse()};
      }
  }
  s.error = higher_is_better ? 100.0 - s.value : s.value;
  s.higher_is_better = higher_is_better;
  return s;
}

// a is sparser than b: a lower model order when both have one (states are
// what a state-space model's group Lasso removes), else more zero weights.
bool Sparser(const TrialScore& a, const TrialScore& b) {
  const bool orders = std::isfinite(a.model_order) &&
                      std::isfinite(b.model_order) && a.model_order > 0 &&
                      b.model_order > 0;
  if (orders && a.model_order != b.model_order) {
    return a.model_order < b.model_order;
  }
  return a.sparsity_pct > b.sparsity_pct;
}

int ChooseTrial(const v1::Sweep& sweep, const std::vector<TrialScore>& scores) {
  bool validated = false;
  for (const TrialScore& s : scores)
    validated = validated || (s.ok && std::isfinite(s.validation));
  // A grid or path compares settings: training loss cannot stand in.
  if (!validated && (sweep.grid_size() > 0 || sweep.has_path())) return -1;
  auto error = [&](const TrialScore& s) {
    const double v = validated ? s.validation : s.train_loss;
    return s.ok && std::isfinite(v) ? v
                                    : std::numeric_limits<double>::infinity();
  };
  int best = -1;
  for (int i = 0; i < static_cast<int>(scores.size()); ++i) {
    if (std::isfinite(error(scores[i])) &&
        (best < 0 || error(scores[i]) < error(scores[best]))) {
      best = i;
    }
  }
  if (best < 0 || sweep.select() != v1::Sweep::RULE_SPARSEST_WITHIN) {
    return best;
  }
  const double pct = sweep.within_pct() > 0 ? sweep.within_pct() : 1.0;
  const double bound = error(scores[best]) * (1.0 + pct / 100.0);
  int chosen = best;
  for (int i = 0; i < static_cast<int>(scores.size()); ++i) {
    const double e = error(scores[i]);
    if (e > bound) continue;
    const bool tie = !Sparser(scores[i], scores[chosen]) &&
                     !Sparser(scores[chosen], scores[i]);
    if (Sparser(scores[i], scores[chosen]) ||
        (tie && e < error(scores[chosen]))) {
      chosen = i;
    }
  }
  return chosen;
}

std::string ChoiceBasis(const v1::Sweep& sweep,
                        const std::vector<TrialScore>& scores, int chosen,
                        const Selection& selection) {
  const TrialScore& c = scores[chosen];
  if (!std::isfinite(c.validation)) {
    return absl::StrFormat(
        "the lowest final training loss, %.6g (no validation split)",
        c.train_loss);
  }
  auto value = [&](double error) {
    return selection.higher_is_better ? 100.0 - error : error;
  };
  const std::string figure =
      absl::StrFormat("%s %.6g", selection.name, value(c.validation));
  if (sweep.select() != v1::Sweep::RULE_SPARSEST_WITHIN) {
    return absl::StrCat("the best ", figure);
  }
  const double pct = sweep.within_pct() > 0 ? sweep.within_pct() : 1.0;
  int best = chosen;
  for (int i = 0; i < static_cast<int>(scores.size()); ++i) {
    const TrialScore& s = scores[i];
    if (s.ok && std::isfinite(s.validation) &&
        s.validation < scores[best].validation) {
      best = i;
    }
  }
  if (best == chosen) {
    return absl::StrFormat("the best %s, and the sparsest within %g %% of it",
                           figure, pct);
  }
  return absl::StrFormat(
      "the sparsest within %g %% of the best %s (%.6g, trial %d): %s", pct,
      selection.name, value(scores[best].validation), scores[best].trial,
      figure);
}

}  // namespace sparrow::translate
