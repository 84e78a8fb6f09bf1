#include "client/cli/local_run.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/cli/common.h"
#include "client/cli/data_files.h"
#include "client/cli/images.h"
#include "client/cli/local_memory.h"
#include "client/cli/model_file.h"
#include "client/cli/report.h"
#include "core/train/methods.h"
#include "core/train/models/layered.h"
#include "core/train/trainer.h"
#include "core/util/status_macros.h"
#include "nlohmann/json.hpp"
#include "translate/config.h"
#include "translate/data.h"
#include "translate/images.h"
#include "translate/json.h"
#include "translate/metrics.h"
#include "translate/model.h"
#include "translate/sweep.h"

namespace sparrow::cli {
namespace {
// The signal that stopped a local run (SIGINT from Ctrl-C, SIGTERM from
// `timeout`, SLURM or Kubernetes), 0 while none has arrived. The first one
// finishes the current epoch and reports the model as it is then; the handler
// then gives way to the default, so a second signal kills at once.
std::atomic<int> g_stop_signal{0};

void OnSignal(int signal) {
  g_stop_signal = signal;
  std::signal(signal, SIG_DFL);
  // At once, since one iteration can take minutes; write(2) is
  // async-signal-safe, streams are not.
  static constexpr char kMessage[] =
      "sparrow: stopping at the end of the current iteration; send the "
      "signal again to stop at once, without results\n";
  [[maybe_unused]] const ssize_t n =
      write(STDERR_FILENO, kMessage, sizeof(kMessage) - 1);
}

// Before training starts (reading the data, checking memory) there is nothing
// to finish or report: say so and end as the signal would.
void OnSignalBeforeTraining(int signal) {
  static constexpr char kMessage[] =
      "sparrow: stopped before training started (while reading the data); "
      "nothing was trained\n";
  [[maybe_unused]] const ssize_t n =
      write(STDERR_FILENO, kMessage, sizeof(kMessage) - 1);
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

// Seconds between progress lines of a local run.
constexpr double kProgressSeconds = 2.0;

// Prints a progress line to stderr every kProgressSeconds (and at the first
// and last epochs), with the time left at the rate so far; stops the run on
// SIGINT or SIGTERM.
class ProgressPrinter : public core::IterationCallback {
 public:
  // step_names[s] labels IterationRecord::step_size of stage s (StepNames).
  ProgressPrinter(bool enabled, int max_epochs,
                  std::vector<std::string> step_names)
      : enabled_(enabled),
        max_epochs_(max_epochs),
        step_names_(std::move(step_names)) {}
  core::CallbackResult OnIteration(core::IterationRecord* r) override {
    const core::CallbackResult go = g_stop_signal != 0
                                        ? core::CallbackResult::kAbort
                                        : core::CallbackResult::kContinue;
    if (r->stage_start) return go;
    const bool due = r->iteration == 1 || r->iteration >= max_epochs_ ||
                     r->elapsed_seconds >= printed_at_ + kProgressSeconds;
    if (!enabled_) return go;
    if (due) {
      std::cerr << Line(*r) << "\n";
      printed_at_ = r->elapsed_seconds;
      unprinted_ = false;
    } else {
      last_ = *r;  // printed by Flush if it is the run's last
      last_.params = last_.optimizer_state = last_.best_params = nullptr;
      unprinted_ = true;
    }
    return go;
  }

  // After the run: its last epoch's line, when a tolerance, the stall test,
  // a deadline or a signal ended it between two printed lines.
  void Flush() {
    if (enabled_ && unprinted_) std::cerr << Line(last_, true) << "\n";
    unprinted_ = false;
  }

 private:
  // `last`: the run's last epoch, which has no time left.
  std::string Line(const core::IterationRecord& r, bool last = false) const {
    std::string line =
        absl::StrFormat("  epoch %6d  loss %-12.6g", r.iteration, r.loss);
    if (std::isfinite(r.validation_metric)) {
      absl::StrAppendFormat(&line, "  val %-10.5g", r.validation_metric);
    }
    if (std::isfinite(r.step_size) && r.step_size != 0.0) {
      const size_t stage =
          std::min<size_t>(std::max(r.stage, 0), step_names_.size() - 1);
      absl::StrAppendFormat(&line, "  %s %-9.3g", step_names_[stage],
                            r.step_size);
    }
    if (std::isfinite(r.sparsity_pct) && r.sparsity_pct > 0.0) {
      absl::StrAppendFormat(&line, "  zeros %5.1f%%", r.sparsity_pct);
    }
    for (const auto& [name, value] : r.extras) {
      absl::StrAppendFormat(&line, "  %s %.6g", name, value);
    }
    absl::StrAppendFormat(&line, "  %7.2f s", r.elapsed_seconds);
    if (!last && r.iteration > 0 && r.iteration < max_epochs_) {
      const double left =
          r.elapsed_seconds / r.iteration * (max_epochs_ - r.iteration);
      absl::StrAppendFormat(&line, "  eta %s", Duration(left));
    }
    return line;
  }

  // "42 s", "3 min 05 s", "2 h 10 min": the epoch budget's upper bound (a
  // tolerance may end the run sooner).
  static std::string Duration(double seconds) {
    const long s = std::lround(seconds);
    if (s < 60) return absl::StrFormat("%d s", s);
    if (s < 3600) return absl::StrFormat("%d min %02d s", s / 60, s % 60);
    return absl::StrFormat("%d h %02d min", s / 3600, (s % 3600) / 60);
  }

  bool enabled_;
  int max_epochs_;
  std::vector<std::string> step_names_;  // never empty
  double printed_at_ = 0.0;
  core::IterationRecord last_;
  bool unprinted_ = false;
};

// What a stage's step_size is: "damping" for NAILM (its Levenberg-Marquardt
// lambda), "step" otherwise; one name per stage (one for a single-stage spec).
std::vector<std::string> StepNames(const v1::JobSpec& spec) {
  auto name = [](const v1::OptimizerSpec& o) {
    return std::string(o.has_nailm() ? "damping" : "step");
  };
  if (spec.stages().empty()) return {name(spec.optimizer())};
  std::vector<std::string> names;
  for (const v1::Stage& stage : spec.stages()) {
    names.push_back(name(stage.optimizer()));
  }
  return names;
}

// "sparrow: data: 41757 of 43824 rows (2067 dropped for missing values);
// 33406 train / 8351 test; 48 inputs, 1 output".
std::string DataLine(const translate::DataSummary& d, const v1::JobSpec& spec) {
  std::string line = absl::StrFormat("sparrow: data: %d rows", d.file_rows);
  if (spec.data().drop_missing()) {
    line = absl::StrFormat(
        "sparrow: data: %d of %d rows (%d dropped for missing values)",
        d.file_rows - d.dropped_rows, d.file_rows, d.dropped_rows);
  }
  absl::StrAppendFormat(&line, "; %d train", d.train_rows);
  if (d.validation_rows > 0) {
    absl::StrAppendFormat(
        &line, " / %d validation%s", d.validation_rows,
        spec.has_validation_data() ? " (validation_data's file)" : "");
  }
  if (d.test_rows > 0) {
    absl::StrAppendFormat(&line, " / %d test%s", d.test_rows,
                          spec.has_test_data() ? " (test_data's file)" : "");
  }
  absl::StrAppendFormat(&line, "; %d input%s, %d output%s\n", d.inputs,
                        d.inputs == 1 ? "" : "s", d.outputs,
                        d.outputs == 1 ? "" : "s");
  return line;
}

nlohmann::json DataJson(const translate::DataSummary& d) {
  return {{"file_rows", d.file_rows},   {"dropped_rows", d.dropped_rows},
          {"train_rows", d.train_rows}, {"validation_rows", d.validation_rows},
          {"test_rows", d.test_rows},   {"inputs", d.inputs},
          {"outputs", d.outputs}};
}

// A local run's inputs: the spec, its training configuration and its data.
struct LocalRun {
  v1::JobSpec spec;
  std::vector<translate::Trial> trials;  // ExpandSweep(spec)
  core::TrainConfig config;
  core::TrainData data;
  translate::DataSummary data_summary;
  LocalDataSize size;                       // for the memory estimate
  int channels = 0, height = 0, width = 0;  // image data's shape
};

// Refuses a sweep any of whose trials would be refused, before any trains.
absl::Status CheckTrials(const std::vector<translate::Trial>& trials) {
  if (trials.size() == 1) return absl::OkStatus();  // the spec's own check
  for (const translate::Trial& t : trials) {
    absl::StatusOr<core::TrainConfig> c = translate::ToTrainConfig(t.spec);
    if (!c.ok()) {
      return absl::Status(
          c.status().code(),
          absl::StrCat("sweep trial ", t.index, " (", translate::TrialLabel(t),
                       "): ", c.status().message()));
    }
  }
  return absl::OkStatus();
}

LocalDataSize DataSize(const translate::DataSummary& d, int64_t rows,
                       int64_t bytes) {
  return {d.inputs, d.outputs, rows, bytes};
}

// Checks the flags, then reads the spec and the CSV or IDX files it names.
absl::StatusOr<LocalRun> LoadLocalRun(const RunFlags& f) {
  if (f.seeds < 1)
    return absl::InvalidArgumentError("--seeds must be at least 1");
  if (f.threads < 0)
    return absl::InvalidArgumentError("--threads must be >= 0");
  LocalRun run;
  SPARROW_ASSIGN_OR_RETURN(std::string text,
                           ReadFile(f.spec_path, "the job spec"));
  SPARROW_ASSIGN_OR_RETURN(run.spec, translate::ParseJobSpecJson(text));
  if (f.seeds > 1 && run.spec.sweep().seeds() > 0) {
    return absl::InvalidArgumentError(
        "--seeds and the spec's sweep.seeds both set the seeds; keep one");
  }
  if (f.seeds > 1) {
    // A sweep of seeds, chosen by the metric the runs track.
    v1::Sweep* sweep = run.spec.mutable_sweep();
    sweep->set_seeds(f.seeds);
    if (sweep->metric() == v1::Sweep::METRIC_UNSPECIFIED) {
      sweep->set_metric(run.spec.stopping().validation_metric());
    }
  }
  SPARROW_ASSIGN_OR_RETURN(run.trials, translate::ExpandSweep(run.spec));
  SPARROW_RETURN_IF_ERROR(CheckTrials(run.trials));
  SPARROW_ASSIGN_OR_RETURN(run.config, translate::ToTrainConfig(run.spec));
  SPARROW_RETURN_IF_ERROR(SetLocalWarmStart(run.spec, &run.config));
  if (run.spec.data().has_images()) {
    SPARROW_ASSIGN_OR_RETURN(
        const core::data::ImageSet images,
        translate::ReadImageFiles(run.spec.data().images()));
    SPARROW_ASSIGN_OR_RETURN(
        run.data, translate::LoadImageTrainData(run.spec, run.config, images,
                                                &run.data_summary));
    run.channels = images.channels;
    run.height = images.height;
    run.width = images.width;
    run.size = DataSize(run.data_summary, images.size(),
                        images.pixels.size() + images.labels.size());
    return run;
  }
  SPARROW_ASSIGN_OR_RETURN(const LocalFiles files, ReadLocalFiles(run.spec));
  SPARROW_ASSIGN_OR_RETURN(
      run.data, translate::LoadTrainData(run.spec, run.config, files.View(),
                                         &run.data_summary));
  run.size =
      DataSize(run.data_summary,
               run.data_summary.file_rows + run.data_summary.validation_rows +
                   run.data_summary.test_rows,
               files.data.size() + files.validation.size() + files.test.size());
  return run;
}

// The trials' memory estimates (local_memory.h), `threads` trials at a time,
// with an image model's input shape filled in as training fills it.
absl::Status CheckMemory(const LocalRun& run, int threads, double max_gib) {
  std::vector<core::TrainConfig> configs;
  std::vector<std::string> labels;
  for (const translate::Trial& t : run.trials) {
    SPARROW_ASSIGN_OR_RETURN(core::TrainConfig c,
                             translate::ToTrainConfig(t.spec));
    if (run.channels > 0) {
      core::ResolveImageShape(run.channels, run.height, run.width, &c.model);
    }
    configs.push_back(std::move(c));
    labels.push_back(run.trials.size() == 1
                         ? ""
                         : absl::StrCat("sweep trial ", t.index, " (",
                                        translate::TrialLabel(t), "): "));
  }
  return CheckLocalMemory(configs, labels, threads, run.size,
                          LocalMemoryLimit(max_gib));
}

using TrainOutcome = absl::StatusOr<core::TrainResult>;

// The chains of a sweep: each trial with the trials that start from its
// model after it (a path), in order; independent of each other.
std::vector<std::vector<int>> Chains(const std::vector<translate::Trial>& t) {
  std::vector<std::vector<int>> chains;
  for (const translate::Trial& trial : t) {
    if (trial.warm_from >= 0 && !chains.empty() &&
        chains.back().back() == trial.warm_from) {
      chains.back().push_back(trial.index);
    } else {
      chains.push_back({trial.index});
    }
  }
  return chains;
}

// Trains one trial; a path point starts from the model of the point before.
TrainOutcome TrainTrial(const LocalRun& run, const translate::Trial& trial,
                        const std::vector<TrainOutcome>& results,
                        bool show_progress) {
  SPARROW_ASSIGN_OR_RETURN(core::TrainConfig c,
                           translate::ToTrainConfig(trial.spec));
  c.warm_start = run.config.warm_start;
  if (trial.warm_from >= 0) {
    const TrainOutcome& before = results[trial.warm_from];
    if (!before.ok()) {
      return absl::AbortedError(
          absl::StrCat("not run: the path's point before failed: ",
                       before.status().message()));
    }
    c.warm_start = std::make_shared<const core::Model>(before->model);
    c.warm_start_from_path = true;
  }
  ProgressPrinter progress(show_progress, core::IterationBudget(c),
                           StepNames(trial.spec));
  try {
    TrainOutcome outcome = core::Train(c, run.data, &progress);
    progress.Flush();
    return outcome;
  } catch (const std::bad_alloc&) {
    // The estimate checked before training is not a bound (local_memory.h).
    return absl::ResourceExhaustedError(
        "ran out of memory while training (an allocation failed); use a "
        "smaller model or less data, or train fewer trials at once "
        "(--threads)");
  }
}

// Multi-start and sweeps (jax-sysid's parallel_fit, a regularization path):
// trains the trials of run.trials, the chains in parallel on `threads`
// threads, each chain's trials in order.
// "sparrow: trial 3 (seed=4) converged after 230 epochs, loss 0.00357, 12.3 s
// (4 of 10 trials done)": one line per finished trial of a several-trial run,
// whose epochs print no progress lines.
std::string TrialDoneLine(const LocalRun& run, int t,
                          const TrainOutcome& outcome, int done) {
  const std::string head = absl::StrFormat(
      "sparrow: trial %d (%s)", t, translate::TrialLabel(run.trials[t]));
  const std::string tail =
      absl::StrFormat(" (%d of %d trials done)\n", done, run.trials.size());
  if (!outcome.ok()) {
    return absl::StrCat(head, " failed: ", outcome.status().message(), tail);
  }
  const core::Summary& s = outcome->summary;
  return absl::StrCat(head,
                      absl::StrFormat(" %s after %d epochs, loss %.6g, %.1f s",
                                      core::TerminationName(s.termination),
                                      s.iterations, s.final_loss, s.seconds),
                      tail);
}

// progress: every epoch's progress lines (one trial); trial_lines: a line
// per finished trial (several).
std::vector<TrainOutcome> TrainTrials(const LocalRun& run, int threads,
                                      bool progress, bool trial_lines) {
  std::vector<TrainOutcome> results(run.trials.size(),
                                    absl::UnknownError("not run"));
  const std::vector<std::vector<int>> chains = Chains(run.trials);
  std::atomic<size_t> next{0};
  std::mutex print;
  int done = 0;  // under print
  auto worker = [&] {
    for (size_t i = next++; i < chains.size(); i = next++) {
      for (int t : chains[i]) {
        if (g_stop_signal != 0) {  // stopped: start no further trials
          results[t] = absl::CancelledError("not started");
          continue;
        }
        results[t] = TrainTrial(run, run.trials[t], results, progress);
        if (trial_lines) {
          std::lock_guard<std::mutex> lock(print);
          std::cerr << TrialDoneLine(run, t, results[t], ++done);
        }
      }
    }
  };
  std::vector<std::thread> pool;
  const int n = std::min<int>(threads, static_cast<int>(chains.size()));
  for (int t = 0; t < n; ++t) pool.emplace_back(worker);
  for (std::thread& t : pool) t.join();
  return results;
}

int Threads(const RunFlags& f, const v1::JobSpec& spec) {
  if (f.threads > 0) return f.threads;
  if (spec.sweep().max_parallel() > 0) return spec.sweep().max_parallel();
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

// Writes the model to `path`: JSON for a .json name, else binary protobuf.
absl::Status WriteModel(const v1::TrainedModel& model,
                        const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  if (translate::HasJsonSuffix(path)) {
    out << translate::ToJson(model);
  } else {
    model.SerializeToOstream(&out);
  }
  if (!out) {
    return absl::InvalidArgumentError("cannot write the model to " + path);
  }
  return absl::OkStatus();
}

// The reports of the trials that ran (a signal keeps the rest from starting)
// and their indices into run.trials. A trial that failed is left out and
// named in *failed; a single run's failure is the error.
absl::Status Reports(const LocalRun& run,
                     const std::vector<TrainOutcome>& results, bool stopped,
                     std::vector<RunReport>* reports, std::vector<int>* ran,
                     std::vector<std::string>* failed) {
  for (size_t i = 0; i < results.size(); ++i) {
    if (stopped && results[i].status().code() == absl::StatusCode::kCancelled) {
      continue;
    }
    if (!results[i].ok()) {
      if (run.trials.size() == 1) return results[i].status();
      failed->push_back(
          absl::StrCat("trial ", i, " (", translate::TrialLabel(run.trials[i]),
                       ") failed: ", results[i].status().message()));
      continue;
    }
    RunReport r = MakeReport(run.trials[i].seed, *results[i], run.spec.sweep());
    r.trial = static_cast<int>(i);
    r.settings = run.trials[i].settings;
    reports->push_back(std::move(r));
    ran->push_back(static_cast<int>(i));
  }
  return absl::OkStatus();
}

// The chosen report's index; sets its `choice` (why) when there were several.
absl::StatusOr<int> Chosen(const v1::JobSpec& spec,
                           std::vector<RunReport>* reports) {
  // One run is its own result, even one that ended diverged or with a
  // non-finite validation error: there is nothing to choose among.
  if (!spec.has_sweep() && reports->size() == 1) return 0;
  std::vector<translate::TrialScore> scores;
  for (const RunReport& r : *reports) {
    scores.push_back({true, r.selection.error, r.final_loss,
                      r.Metric("sparsity_pct"), r.Metric("model_order"),
                      r.trial});
  }
  const int chosen = translate::ChooseTrial(spec.sweep(), scores);
  if (chosen < 0) {
    return absl::FailedPreconditionError(
        "no trial has a finite validation error (or, without a validation "
        "split, training loss) to choose by; check the validation split and "
        "the trials' terminations above");
  }
  RunReport& c = (*reports)[chosen];
  c.choice = translate::ChoiceBasis(spec.sweep(), scores, chosen, c.selection);
  return chosen;
}

void PrintStopped(int signal, size_t ran, size_t trials) {
  std::cerr << absl::StrFormat(
      "sparrow: stopped by %s at the end of an iteration; the results and "
      "model above are the ones at that point (termination user_abort)%s\n",
      signal == SIGTERM ? "SIGTERM" : "SIGINT",
      ran < trials ? absl::StrFormat("; %d of %d trials were not started",
                                     trials - ran, trials)
                   : "");
}

}  // namespace

int RunLocal(const RunFlags& f) {
  std::signal(SIGINT, OnSignalBeforeTraining);
  std::signal(SIGTERM, OnSignalBeforeTraining);
  absl::StatusOr<LocalRun> run = LoadLocalRun(f);
  if (!run.ok()) return Fail(run.status());
  const v1::JobSpec& spec = run->spec;
  const size_t trials = run->trials.size();

  const int threads = std::max(
      1,
      std::min(Threads(f, spec), static_cast<int>(Chains(run->trials).size())));
  if (absl::Status s = CheckMemory(*run, threads, f.max_memory_gib); !s.ok()) {
    return Fail(s);
  }
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  if (!f.json) {
    std::cerr << absl::StrFormat(
        "sparrow: training %s (%d %s on %d thread%s)\n",
        spec.name().empty() ? f.spec_path : spec.name(), trials,
        spec.sweep().grid_size() > 0 || spec.sweep().has_path()
            ? (trials > 1 ? "trials" : "trial")
            : (trials > 1 ? "seeds" : "seed"),
        threads, threads > 1 ? "s" : "");
    std::cerr << DataLine(run->data_summary, spec);
  }
  const std::vector<TrainOutcome> results =
      TrainTrials(*run, threads, !f.json && trials == 1, !f.json && trials > 1);
  // Training is over: a signal from here on kills as usual.
  const int stop_signal = g_stop_signal;
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);

  std::vector<RunReport> reports;
  std::vector<int> ran;  // index into results per report
  std::vector<std::string> failed;
  if (absl::Status s =
          Reports(*run, results, stop_signal != 0, &reports, &ran, &failed);
      !s.ok()) {
    return Fail(s);
  }
  for (const std::string& f : failed) std::cerr << "sparrow: " << f << "\n";
  if (reports.empty()) {
    if (f.json) {  // still one JSON object on stdout
      std::cout << nlohmann::json{{"runs", nlohmann::json::array()},
                                  {"failed", failed}}
                       .dump(2)
                << "\n";
    }
    std::cerr
        << (failed.empty()
                ? "sparrow: stopped by a signal before any trial started\n"
                : "sparrow: every trial failed\n");
    return kExitFailed;
  }
  absl::StatusOr<int> chosen = Chosen(spec, &reports);
  if (!chosen.ok()) {
    std::cout << ReportTable(reports, -1);
    return Fail(chosen.status());
  }
  const int best = *chosen;
  if (!f.model_out.empty()) {
    const translate::Trial& trial = run->trials[ran[best]];
    v1::TrainedModel model =
        translate::ToProto(trial.spec, *results[ran[best]]);
    model.set_seed(trial.seed);
    if (spec.has_sweep()) {
      *model.mutable_sweep_trial() =
          translate::TrialOrigin(trial, static_cast<int>(trials));
    }
    if (absl::Status s = WriteModel(model, f.model_out); !s.ok())
      return Fail(s);
  }
  if (f.json) {
    nlohmann::json report = ReportJson(reports, best, trials > 1);
    report["data"] = DataJson(run->data_summary);
    if (!failed.empty()) report["failed"] = failed;
    std::cout << report.dump(2) << "\n";
  } else {
    std::cout << ReportTable(reports, best);
    if (!f.model_out.empty())
      std::cout << "model written to " << f.model_out << "\n";
  }
  if (stop_signal != 0) {
    PrintStopped(stop_signal, reports.size(), trials);
    return kExitFailed;
  }
  if (!failed.empty()) return kExitFailed;
  for (const RunReport& r : reports) {
    if (r.termination == "diverged") return kExitFailed;
  }
  return kExitOk;
}

}  // namespace sparrow::cli
