#include "client/cli/job_text.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/cli/common.h"
#include "core/train/methods.h"
#include "google/protobuf/util/time_util.h"
#include "translate/config.h"
#include "translate/sweep.h"

namespace sparrow::cli {

std::string Lower(const std::string& s) { return absl::AsciiStrToLower(s); }

std::string StateName(v1::Job::State s) {
  return Lower(v1::Job::State_Name(s));
}

int ExitForState(v1::Job::State s) {
  return s == v1::Job::SUCCEEDED ? kExitOk : kExitFailed;
}

// Iterations the job will run at most (epochs, or SBDL outer iterations), for
// the ETA; 0 when unknown.
int IterationBudget(const v1::JobSpec& spec) {
  auto config = translate::ToTrainConfig(spec);
  if (!config.ok()) return 0;
  return core::IterationBudget(*config);
}

std::vector<int> TrialBudgets(const v1::JobSpec& spec) {
  std::vector<int> budgets;
  if (!spec.has_sweep()) return budgets;
  absl::StatusOr<std::vector<translate::Trial>> trials =
      translate::ExpandSweep(spec);
  if (!trials.ok()) return budgets;
  for (const translate::Trial& t : *trials) {
    budgets.push_back(IterationBudget(t.spec));
  }
  return budgets;
}

std::string FormatSeconds(double s) {
  if (!std::isfinite(s) || s < 0) return "-";
  if (s < 60) return absl::StrFormat("%.1fs", s);
  if (s < 3600) return absl::StrFormat("%dm%02ds", int(s) / 60, int(s) % 60);
  return absl::StrFormat("%dh%02dm", int(s) / 3600, (int(s) % 3600) / 60);
}

// One human-readable line of an event.
std::string EventLine(const v1::ProgressEvent& e, int budget) {
  if (e.kind() == v1::ProgressEvent::STATE) {
    return absl::StrCat("[", e.seq(), "] ", StateName(e.state()),
                        e.reason().empty() ? "" : ": ", e.reason());
  }
  if (e.kind() == v1::ProgressEvent::TRIAL_END) {
    std::string line = absl::StrFormat("[%d] trial %d ended %s", e.seq(),
                                       e.trial(), StateName(e.state()));
    if (e.has_validation_metric()) {
      absl::StrAppendFormat(&line, "  val %.5g", e.validation_metric());
    }
    if (e.has_sparsity_pct()) {
      absl::StrAppendFormat(&line, "  zeros %.1f%%", e.sparsity_pct());
    }
    if (!e.reason().empty()) absl::StrAppend(&line, ": ", e.reason());
    return line;
  }
  // A sweep job's copy of a trial's event says whose it is.
  std::string line =
      e.has_trial() ? absl::StrFormat("trial %d  ", e.trial()) : "";
  absl::StrAppend(
      &line, budget > 0 ? absl::StrFormat("iter %d/%d", e.iteration(), budget)
                        : absl::StrFormat("iter %d", e.iteration()));
  absl::StrAppendFormat(&line, "  loss %-11.5g", e.loss());
  if (e.has_validation_metric()) {
    absl::StrAppendFormat(&line, "  val %-10.5g", e.validation_metric());
  }
  if (e.has_sparsity_pct() && e.sparsity_pct() > 0) {
    absl::StrAppendFormat(&line, "  zeros %5.1f%%", e.sparsity_pct());
  }
  if (const auto stage = e.extras().find("stage"); stage != e.extras().end()) {
    absl::StrAppendFormat(&line, "  stage %d", static_cast<int>(stage->second));
  }
  absl::StrAppend(&line, "  elapsed ", FormatSeconds(e.elapsed_seconds()));
  if (budget > 0 && e.iteration() > 0) {
    const double eta = e.elapsed_seconds() / e.iteration() *
                       std::max(0, budget - e.iteration());
    absl::StrAppend(&line, "  ETA ", FormatSeconds(eta));
  }
  return line;
}

// "train_rmse 0.762, test_rmse 1.96, test_bfr 18.3, model_order 2": the
// metrics a trained model carries that are set (proto3: non-zero) and finite
// (NaN: not measured, e.g. no validation split).
std::string MetricsLine(const v1::Metrics& m) {
  std::vector<std::string> parts;
  const google::protobuf::Reflection* r = m.GetReflection();
  const google::protobuf::Descriptor* d = m.GetDescriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* f = d->field(i);
    if (f->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_DOUBLE ||
        f->is_repeated() || r->GetDouble(m, f) == 0.0 ||
        !std::isfinite(r->GetDouble(m, f))) {
      continue;
    }
    parts.push_back(absl::StrFormat("%s %.6g", f->name(), r->GetDouble(m, f)));
  }
  return absl::StrJoin(parts, ", ");
}

// An ended job's test metric from its model: "acc 91.23%" for a classifier,
// else "rmse 0.0123 bfr 95.1" (BFR for sequence models); "" when none, and
// "(partial)" after a cancelled or failed job's model.
std::string TestMetric(const v1::Job& j) {
  if (!j.has_metrics()) return "";
  const v1::Metrics& m = j.metrics();
  std::string out;
  if (m.test_accuracy() != 0.0 && std::isfinite(m.test_accuracy())) {
    out = absl::StrFormat("acc %.2f%%", m.test_accuracy());
  } else if (m.test_rmse() != 0.0 && std::isfinite(m.test_rmse())) {
    out = absl::StrFormat("rmse %.4g", m.test_rmse());
    if (m.test_bfr() != 0.0 && std::isfinite(m.test_bfr())) {
      // An unstable model's BFR can be -1e12: 4 digits keep the column.
      if (std::abs(m.test_bfr()) < 1e4) {
        absl::StrAppendFormat(&out, " bfr %.1f", m.test_bfr());
      } else {
        absl::StrAppendFormat(&out, " bfr %.4g", m.test_bfr());
      }
    }
  }
  if (!out.empty() && j.model_partial()) absl::StrAppend(&out, " (partial)");
  return out;
}

// The value, or "-" when the job has not reported it.
std::string OrDash(bool has, double value) {
  return has ? absl::StrFormat("%.5g", value) : "-";
}

// A sweep's trials, one line each: index, settings, state, iterations,
// the validation figure the sweep chooses by, zeros, model order and test
// metric; the chosen one marked.
void PrintTrials(const v1::Job& job) {
  const v1::Sweep& sweep = job.spec().sweep();
  std::string name = "validation";
  bool ended = false, validated = false;
  for (const v1::SweepTrial& t : job.trials()) {
    if (!t.has_metrics()) continue;
    const translate::Selection s = translate::SelectionOf(sweep, t.metrics());
    name = s.name;
    ended = true;
    validated = validated || std::isfinite(s.value);
  }
  // Seeds without a validation split are chosen by their training loss.
  if (ended && !validated) name = "training loss (no validation split)";
  std::cout << absl::StrFormat("  trials (%d), by %s:\n", job.trials_size(),
                               name);
  std::cout << absl::StrFormat("  %5s  %-28s %-10s %6s %11s %7s %6s  %s\n",
                               "trial", "settings", "state", "iters",
                               "validation", "zeros", "order", "test");
  for (const v1::SweepTrial& t : job.trials()) {
    const v1::Metrics& m = t.metrics();
    const bool ended = t.has_metrics();
    const double validation = translate::SelectionOf(sweep, m).value;
    v1::Job as_job;  // for TestMetric
    *as_job.mutable_metrics() = m;
    if (!ended) as_job.clear_metrics();
    const bool chosen =
        job.has_chosen_trial() && job.chosen_trial() == t.index();
    std::cout << absl::StrFormat(
        "  %5d  %-28s %-10s %6d %11s %7s %6s  %s%s\n", t.index(), t.label(),
        StateName(t.state()), t.iterations(),
        OrDash(ended && std::isfinite(validation), validation),
        ended ? absl::StrFormat("%.1f%%", m.sparsity_pct()) : "-",
        OrDash(ended && m.model_order() > 0, m.model_order()),
        TestMetric(as_job), chosen ? "  (chosen)" : "");
  }
}

void PrintJob(const v1::Job& job) {
  std::cout << absl::StrFormat("job %s: %s", job.id(), StateName(job.state()));
  if (!job.reason().empty()) std::cout << " (" << job.reason() << ")";
  std::cout << "\n";
  if (!job.spec().name().empty())
    std::cout << "  name: " << job.spec().name() << "\n";
  std::cout << "  dataset: " << job.spec().data().dataset_id() << "\n";
  if (job.spec().has_validation_data()) {
    std::cout << "  validation dataset: "
              << job.spec().validation_data().dataset_id() << "\n";
  }
  if (job.spec().has_test_data()) {
    std::cout << "  test dataset: " << job.spec().test_data().dataset_id()
              << "\n";
  }
  if (job.iterations() > 0) {
    std::cout << absl::StrFormat("  iterations: %d  loss: %.6g",
                                 job.iterations(), job.loss());
    if (job.has_best_validation_metric()) {
      std::cout << "  best validation: " << job.best_validation_metric();
    }
    if (job.has_sparsity_pct()) {
      std::cout << absl::StrFormat("  zeros: %.1f%%", job.sparsity_pct());
    }
    std::cout << absl::StrFormat("  optimizer time: %.2f s\n",
                                 job.elapsed_seconds());
  }
  if (!job.summary().empty())
    std::cout << "  summary: " << job.summary() << "\n";
  std::cout << "  attempts: " << job.attempts()
            << "  events: " << job.last_seq();
  if (!job.replica().empty()) std::cout << "  replica: " << job.replica();
  std::cout << "\n";
  for (const auto& t : job.history()) {
    std::cout << "  " << google::protobuf::util::TimeUtil::ToString(t.time())
              << "  " << StateName(t.state()) << ": " << t.reason() << "\n";
  }
  if (!job.parent_id().empty()) {
    std::cout << absl::StrFormat("  trial %d of sweep %s\n", job.trial_index(),
                                 job.parent_id());
  }
  if (job.trials_size() > 0) PrintTrials(job);
}

}  // namespace sparrow::cli
