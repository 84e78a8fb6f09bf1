#include "client/cli/job_list.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/cli/job_text.h"
#include "nlohmann/json.hpp"
#include "sparrow/v1/job_state.h"
#include "translate/json.h"
#include "translate/sweep.h"

namespace sparrow::cli {
namespace {

using nlohmann::json;

// A job's metrics with the figures it did not measure (NaN) left out, so
// that --json has no "NaN" strings (proto3 JSON's way of writing them).
void DropUnmeasured(nlohmann::ordered_json* j) {
  if (j->is_array()) {
    for (nlohmann::ordered_json& e : *j) DropUnmeasured(&e);
    return;
  }
  if (!j->is_object()) return;
  for (auto it = j->begin(); it != j->end();) {
    if (it.key() == "metrics" && it->is_object()) {
      for (auto m = it->begin(); m != it->end();) {
        m = m->is_string() && *m == "NaN" ? it->erase(m) : std::next(m);
      }
    }
    DropUnmeasured(&*it);
    ++it;
  }
}

bool IsSweepParent(const v1::Job& j) {
  return j.spec().has_sweep() && j.parent_id().empty();
}

// The page's jobs in the order `list` prints them: each sweep followed by
// its trials on the page (by index); a trial whose sweep is on another page
// stays where it is.
std::vector<const v1::Job*> ListOrder(const v1::ListJobsResponse& page) {
  absl::flat_hash_map<std::string, std::vector<const v1::Job*>> trials;
  for (const v1::Job& j : page.jobs()) {
    if (!j.parent_id().empty()) trials[j.parent_id()].push_back(&j);
  }
  absl::flat_hash_set<std::string> parents;
  for (const v1::Job& j : page.jobs()) {
    if (trials.contains(j.id())) parents.insert(j.id());
  }
  std::vector<const v1::Job*> out;
  for (const v1::Job& j : page.jobs()) {
    if (parents.contains(j.parent_id())) continue;  // printed below its sweep
    out.push_back(&j);
    auto it = trials.find(j.id());
    if (it == trials.end()) continue;
    std::vector<const v1::Job*> ts = it->second;
    std::sort(ts.begin(), ts.end(), [](const v1::Job* a, const v1::Job* b) {
      return a->trial_index() < b->trial_index();
    });
    out.insert(out.end(), ts.begin(), ts.end());
  }
  return out;
}

// The BEST_VAL `list` shows, NaN for none: a job's best validation figure
// so far; a sweep's chosen trial's once it has chosen, else the best of its
// trials on the page so far.
double ListValidation(const v1::Job& job,
                      const std::vector<const v1::Job*>& rows) {
  constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  if (!IsSweepParent(job)) {
    return job.has_best_validation_metric() ? job.best_validation_metric()
                                            : kNone;
  }
  if (job.has_metrics() && job.has_chosen_trial()) {
    const double v =
        translate::SelectionOf(job.spec().sweep(), job.metrics()).value;
    if (std::isfinite(v)) return v;
  }
  double best = kNone;
  for (const v1::Job* t : rows) {
    if (t->parent_id() == job.id() && t->has_best_validation_metric() &&
        !(t->best_validation_metric() >= best)) {
      best = t->best_validation_metric();
    }
  }
  return best;
}

// The zero weights `list` shows, in %: the final model's once the job has
// ended with one (its best iterate on validation data, as `status` shows),
// else the latest progress event's; NaN for none.
double ZeroPercent(const v1::Job& j) {
  if (v1::IsFinal(j.state()) && j.has_metrics()) {
    return j.metrics().sparsity_pct();
  }
  return j.has_sparsity_pct() ? j.sparsity_pct()
                              : std::numeric_limits<double>::quiet_NaN();
}
std::string Zeros(const v1::Job& j) {
  const double pct = ZeroPercent(j);
  return std::isnan(pct) ? "-" : absl::StrFormat("%.1f%%", pct);
}
json ZeroPct(const v1::Job& j) {
  const double pct = ZeroPercent(j);
  return std::isnan(pct) ? json(nullptr) : json(pct);
}

void ListJson(const v1::ListJobsResponse& page,
              const std::vector<const v1::Job*>& rows) {
  json jobs = json::array();
  for (const v1::Job& j : page.jobs()) {
    const double val = ListValidation(j, rows);
    jobs.push_back(
        {{"job_id", j.id()},
         {"name", j.spec().name()},
         {"state", v1::Job::State_Name(j.state())},
         {"iterations",
          IsSweepParent(j) ? json(nullptr) : json(j.iterations())},
         {"loss", j.iterations() > 0 ? json(j.loss()) : json(nullptr)},
         {"best_validation_metric",
          std::isnan(val) ? json(nullptr) : json(val)},
         {"sparsity_pct", ZeroPct(j)},
         {"elapsed_seconds", j.elapsed_seconds()},
         {"test", TestMetric(j)},
         {"reason", j.reason()},
         {"sweep", IsSweepParent(j)},
         {"parent_id",
          j.parent_id().empty() ? json(nullptr) : json(j.parent_id())},
         {"trial_index",
          j.parent_id().empty() ? json(nullptr) : json(j.trial_index())}});
  }
  std::cout << json{{"jobs", jobs}, {"next_page_token", page.next_page_token()}}
                   .dump(2)
            << "\n";
}

}  // namespace

std::string JobJson(const v1::Job& job) {
  // Ordered: the fields stay in the API's order, as translate::ToJson has it.
  nlohmann::ordered_json j =
      nlohmann::ordered_json::parse(translate::ToJson(job));
  DropUnmeasured(&j);
  // Proto JSON leaves out zeros; a trial's index, its iterations and a
  // model's zero weights are values, not absent.
  auto zeros = [](const v1::Metrics& m, nlohmann::ordered_json* metrics) {
    if (!metrics->contains("sparsity_pct")) {
      (*metrics)["sparsity_pct"] = m.sparsity_pct();
    }
  };
  if (job.has_metrics()) zeros(job.metrics(), &j["metrics"]);
  for (int k = 0; k < job.trials_size(); ++k) {
    const v1::SweepTrial& t = job.trials(k);
    nlohmann::ordered_json& trial = j["trials"][k];
    trial["index"] = t.index();
    trial["iterations"] = t.iterations();
    if (t.has_metrics()) zeros(t.metrics(), &trial["metrics"]);
  }
  return j.dump(1);
}

void PrintJobListJson(const v1::ListJobsResponse& page) {
  ListJson(page, ListOrder(page));
}

void PrintJobList(const v1::ListJobsResponse& page) {
  const std::vector<const v1::Job*> rows = ListOrder(page);
  if (rows.empty()) std::cout << "no jobs\n";
  constexpr char kRow[] = "%-*s %-10s %6s %-11s %-11s %6s %-20s  %-30s %s\n";
  int width = 22;  // job ids; a sweep's trials have longer ones, indented
  for (const v1::Job* j : rows) {
    width = std::max(width, static_cast<int>(j->id().size()) +
                                (j->parent_id().empty() ? 0 : 2));
  }
  if (!rows.empty()) {
    std::cout << absl::StrFormat(kRow, width, "JOB", "STATE", "ITER", "LOSS",
                                 "BEST_VAL", "ZEROS", "TEST", "NAME", "REASON");
  }
  for (const v1::Job* j : rows) {
    const std::string test = TestMetric(*j);
    // A sweep trains nothing itself: its trials' rows follow it.
    const bool sweep = IsSweepParent(*j);
    const double val = ListValidation(*j, rows);
    std::cout << absl::StrFormat(
        kRow, width,
        j->parent_id().empty() ? j->id() : absl::StrCat("  ", j->id()),
        StateName(j->state()), sweep ? "-" : absl::StrCat(j->iterations()),
        OrDash(!sweep && j->iterations() > 0, j->loss()),
        OrDash(!std::isnan(val), val), Zeros(*j), test.empty() ? "-" : test,
        j->spec().name(), j->reason());
  }
  if (!page.next_page_token().empty()) {
    std::cout << "more: sparrow list --page-token " << page.next_page_token()
              << "\n";
  }
}

}  // namespace sparrow::cli
