// `sparrow`: the command-line client. Subcommands:
//   run --local SPEC.json        train in-process and print the fit
//   predict --local --model F    run a model file on new data
//   datagen SYSTEM -o FILE       generate the project's synthetic benchmark
//   data upload, submit, watch, status, list, cancel, model get, predict JOB,
//   health                       talk to sparrowd (remote.cc)
// Exit codes: 0 success, 1 the job (or local run) failed, diverged, was
// cancelled or interrupted, 2 usage or input error, 3 server or connection
// error.
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "client/cli/common.h"
#include "client/cli/data_files.h"
#include "client/cli/images.h"
#include "client/cli/model_file.h"
#include "client/cli/remote.h"
#include "client/cli/report.h"
#include "client/cli/usage_hint.h"
#include "core/data/synthetic.h"
#include "core/train/methods.h"
#include "core/train/trainer.h"
#include "core/util/status_macros.h"
#include "nlohmann/json.hpp"
#include "translate/config.h"
#include "translate/data.h"
#include "translate/images.h"
#include "translate/json.h"
#include "translate/malloc_arenas.h"
#include "translate/model.h"
#include "translate/predict.h"

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
}

// Seconds between progress lines of a local run.
constexpr double kProgressSeconds = 2.0;

// Prints a progress line to stderr every kProgressSeconds (and at the first
// and last epochs), with the time left at the rate so far; stops the run on
// SIGINT or SIGTERM.
class ProgressPrinter : public core::IterationCallback {
 public:
  // step_name labels IterationRecord::step_size: "damping" for NAILM (its
  // Levenberg-Marquardt lambda), "step" otherwise.
  ProgressPrinter(bool enabled, int max_epochs, std::string step_name)
      : enabled_(enabled),
        max_epochs_(max_epochs),
        step_name_(std::move(step_name)) {}
  core::CallbackResult OnIteration(core::IterationRecord* r) override {
    if (g_stop_signal != 0) return core::CallbackResult::kAbort;
    if (r->stage_start) return core::CallbackResult::kContinue;
    const bool due = r->iteration == 1 || r->iteration >= max_epochs_ ||
                     r->elapsed_seconds >= printed_at_ + kProgressSeconds;
    if (enabled_ && due) {
      std::cerr << Line(*r) << "\n";
      printed_at_ = r->elapsed_seconds;
    }
    return core::CallbackResult::kContinue;
  }

 private:
  std::string Line(const core::IterationRecord& r) const {
    std::string line =
        absl::StrFormat("  epoch %6d  loss %-12.6g", r.iteration, r.loss);
    if (std::isfinite(r.validation_metric)) {
      absl::StrAppendFormat(&line, "  val %-10.5g", r.validation_metric);
    }
    if (std::isfinite(r.step_size) && r.step_size != 0.0) {
      absl::StrAppendFormat(&line, "  %s %-9.3g", step_name_, r.step_size);
    }
    if (std::isfinite(r.sparsity_pct) && r.sparsity_pct > 0.0) {
      absl::StrAppendFormat(&line, "  zeros %5.1f%%", r.sparsity_pct);
    }
    for (const auto& [name, value] : r.extras) {
      absl::StrAppendFormat(&line, "  %s %.6g", name, value);
    }
    absl::StrAppendFormat(&line, "  %7.2f s", r.elapsed_seconds);
    if (r.iteration > 0 && r.iteration < max_epochs_) {
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
  std::string step_name_;
  double printed_at_ = 0.0;
};

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

struct RunFlags {
  bool local = false;
  std::string spec_path;
  int seeds = 1;
  int threads = 0;
  bool json = false;
  std::string model_out;
};

// A local run's inputs: the spec, its training configuration and its data.
struct LocalRun {
  v1::JobSpec spec;
  core::TrainConfig config;
  core::TrainData data;
  translate::DataSummary data_summary;
};

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
  SPARROW_ASSIGN_OR_RETURN(run.config, translate::ToTrainConfig(run.spec));
  SPARROW_RETURN_IF_ERROR(SetLocalWarmStart(run.spec, &run.config));
  if (run.spec.data().has_images()) {
    SPARROW_ASSIGN_OR_RETURN(
        const core::data::ImageSet images,
        translate::ReadImageFiles(run.spec.data().images()));
    SPARROW_ASSIGN_OR_RETURN(
        run.data, translate::LoadImageTrainData(run.spec, run.config, images,
                                                &run.data_summary));
    return run;
  }
  SPARROW_ASSIGN_OR_RETURN(const LocalFiles files, ReadLocalFiles(run.spec));
  SPARROW_ASSIGN_OR_RETURN(
      run.data, translate::LoadTrainData(run.spec, run.config, files.View(),
                                         &run.data_summary));
  return run;
}

// Multi-start (jax-sysid's parallel_fit): trains seeds spec.seed, spec.seed +
// 1, ... in parallel on `threads` threads.
std::vector<absl::StatusOr<core::TrainResult>> TrainSeeds(const LocalRun& run,
                                                          int seeds,
                                                          int threads,
                                                          bool show_progress) {
  std::vector<absl::StatusOr<core::TrainResult>> results(
      seeds, absl::UnknownError("not run"));
  std::atomic<int> next{0};
  auto worker = [&] {
    for (int i = next++; i < seeds; i = next++) {
      if (g_stop_signal != 0) {  // stopped: start no further seeds
        results[i] = absl::CancelledError("not started");
        continue;
      }
      core::TrainConfig c = run.config;
      c.seed = run.spec.seed() + static_cast<uint64_t>(i);
      ProgressPrinter progress(
          show_progress, core::IterationBudget(c),
          run.spec.optimizer().has_nailm() ? "damping" : "step");
      results[i] = core::Train(c, run.data, &progress);
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker);
  for (std::thread& t : pool) t.join();
  return results;
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

int RunLocal(const RunFlags& f) {
  absl::StatusOr<LocalRun> run = LoadLocalRun(f);
  if (!run.ok()) return Fail(run.status());
  const v1::JobSpec& spec = run->spec;

  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  const int threads = std::max(
      1, std::min(f.seeds,
                  f.threads > 0
                      ? f.threads
                      : static_cast<int>(std::thread::hardware_concurrency())));
  const bool show_progress = !f.json && f.seeds == 1;
  if (!f.json) {
    std::cerr << absl::StrFormat(
        "sparrow: training %s (%d seed%s on %d thread%s)\n",
        spec.name().empty() ? f.spec_path : spec.name(), f.seeds,
        f.seeds > 1 ? "s" : "", threads, threads > 1 ? "s" : "");
    std::cerr << DataLine(run->data_summary, spec);
  }
  const std::vector<absl::StatusOr<core::TrainResult>> results =
      TrainSeeds(*run, f.seeds, threads, show_progress);
  // Training is over: a signal from here on kills as usual.
  const int stop_signal = g_stop_signal;
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);

  std::vector<RunReport> reports;
  std::vector<int> reported;  // index into results per report
  for (int i = 0; i < f.seeds; ++i) {
    if (stop_signal != 0 &&
        results[i].status().code() == absl::StatusCode::kCancelled) {
      continue;  // a seed the signal kept from starting
    }
    if (!results[i].ok()) return Fail(results[i].status());
    reports.push_back(MakeReport(spec.seed() + i, *results[i]));
    reported.push_back(i);
  }
  if (reports.empty()) {
    std::cerr << "sparrow: stopped by a signal before any seed started\n";
    return kExitFailed;
  }
  const int best = BestRun(reports);
  if (!f.model_out.empty()) {
    v1::TrainedModel model = translate::ToProto(spec, *results[reported[best]]);
    model.set_seed(reports[best].seed);
    if (absl::Status s = WriteModel(model, f.model_out); !s.ok())
      return Fail(s);
  }
  if (f.json) {
    nlohmann::json report = ReportJson(reports, best);
    report["data"] = DataJson(run->data_summary);
    std::cout << report.dump(2) << "\n";
  } else {
    std::cout << ReportTable(reports, best);
    if (!f.model_out.empty())
      std::cout << "model written to " << f.model_out << "\n";
  }
  if (stop_signal != 0) {
    std::cerr << absl::StrFormat(
        "sparrow: stopped by %s at the end of an iteration; the results and "
        "model above are the ones at that point (termination user_abort)%s\n",
        stop_signal == SIGTERM ? "SIGTERM" : "SIGINT",
        reports.size() < static_cast<size_t>(f.seeds)
            ? absl::StrFormat("; %d of %d seeds were not started",
                              f.seeds - static_cast<int>(reports.size()),
                              f.seeds)
            : "");
    return kExitFailed;
  }
  for (const RunReport& r : reports) {
    if (r.termination == "diverged") return kExitFailed;
  }
  return kExitOk;
}

struct PredictFlags {
  bool local = false;
  std::string job;
  bool simulate = false;
  std::string model_path;
  std::string input;
  std::string images;
  bool one_step = false;
  bool intervals = false;
  int x0_samples = 0;                // 0: the model's own count
  CLI::Option* x0_option = nullptr;  // whether --x0-samples was given
  std::string x0 = "estimate";       // --x0: estimate, zero or V1,V2,...
  std::string out;
  bool json = false;
};

// Runs a stored model on a CSV with the model's input columns (and, for
// sequence models, its output columns: the NARX history / encoder window / x0
// estimate read them).
// Runs a model file on images: the class of each.
int PredictImagesLocal(const v1::TrainedModel& model, const PredictFlags& f) {
  auto images = ReadImagesToPredict(f.images);
  if (!images.ok()) return Fail(images.status());
  auto p = PredictInBatches(*images, [&](const core::data::ImageSet& batch) {
    return translate::PredictImages(model, batch);
  });
  if (!p.ok()) return Fail(p.status());
  return PrintImagePredictions(*p, f.out, f.json);
}

// --x0-samples counts samples: left out, the model's own count is used, and a
// count below 1 given explicitly is refused rather than read as "the
// default".
absl::Status CheckX0Samples(const PredictFlags& f) {
  if (f.x0_option == nullptr || f.x0_option->count() == 0 ||
      f.x0_samples >= 1) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "--x0-samples %d: the initial state is estimated from at least 1 "
      "sample; give a count >= 1, or leave the flag out for the model's own",
      f.x0_samples));
}

// --x0: "estimate", "zero" or the state's values, comma-separated.
absl::Status ParseX0(const std::string& text,
                     translate::PredictOptions* options) {
  using InitialState = translate::PredictOptions::InitialState;
  if (text == "estimate") return absl::OkStatus();
  if (text == "zero") {
    options->initial_state = InitialState::kZero;
    return absl::OkStatus();
  }
  options->initial_state = InitialState::kGiven;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    double v = 0.0;
    if (!absl::SimpleAtod(part, &v) || !std::isfinite(v)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--x0 %s: use estimate, zero, or the initial state's nx finite "
          "values separated by commas (e.g. --x0 0.1,-0.3)",
          text));
    }
    options->x0.push_back(v);
  }
  return absl::OkStatus();
}

int Predict(const PredictFlags& f, RemoteCommands* remote) {
  if (f.one_step && f.simulate) {
    return Fail(absl::InvalidArgumentError(
        "--one-step and --simulate exclude each other"));
  }
  if (f.input.empty() == f.images.empty()) {
    return Fail(absl::InvalidArgumentError(
        "give the data to predict on: --input FILE.csv or --images "
        "FILE(.gz) (an IDX image file), not both"));
  }
  if (!f.local) {
    // `--model JOB` names the job on sparrowd, as `predict JOB` does.
    const std::string job = f.job.empty() ? f.model_path : f.job;
    if (job.empty()) {
      return Fail(absl::InvalidArgumentError(
          "name a job (sparrow predict JOB --input FILE) or a model file "
          "(sparrow predict --local --model FILE --input FILE)"));
    }
    if (absl::Status s = CheckX0Samples(f); !s.ok()) return Fail(s);
    translate::PredictOptions x0;
    if (absl::Status s = ParseX0(f.x0, &x0); !s.ok()) return Fail(s);
    RemotePredictArgs args;
    using InitialState = translate::PredictOptions::InitialState;
    args.initial_state = x0.initial_state == InitialState::kZero
                             ? v1::PredictRequest::X0_ZERO
                         : x0.initial_state == InitialState::kGiven
                             ? v1::PredictRequest::X0_GIVEN
                             : v1::PredictRequest::X0_ESTIMATE;
    args.x0 = x0.x0;
    args.job = job;
    args.input = f.input;
    args.images = f.images;
    args.one_step = f.one_step;
    args.intervals = f.intervals;
    args.x0_samples = f.x0_samples;
    args.out = f.out;
    args.json = f.json;
    return remote->Predict(args);
  }
  if (f.model_path.empty()) {
    return Fail(absl::InvalidArgumentError(
        "--local needs --model FILE (a model from `run -o` or `model get`)"));
  }
  auto proto = ReadModel(f.model_path);
  if (!proto.ok()) return Fail(proto.status());
  if (absl::Status s = CheckX0Samples(f); !s.ok()) return Fail(s);
  if (!f.images.empty()) return PredictImagesLocal(*proto, f);
  auto csv = ReadFile(f.input, "--input");
  if (!csv.ok()) return Fail(csv.status());
  translate::PredictOptions options;
  options.one_step = f.one_step;
  options.intervals = f.intervals;
  options.x0_samples = f.x0_samples;
  if (absl::Status s = ParseX0(f.x0, &options); !s.ok()) return Fail(s);
  auto output = translate::Predict(*proto, *csv, options);
  if (!output.ok()) return Fail(output.status());
  if (!f.out.empty()) {
    std::ofstream out(f.out, std::ios::binary);
    out << output->Csv();
    if (!out) return Fail(absl::InvalidArgumentError("cannot write " + f.out));
  }
  return PrintPrediction(output->y.cols(), output->bfr, output->rmse, f.out,
                         f.json, output->x0);
}

struct DatagenFlags {
  std::string system;
  double noise = 0.0;
  int samples = 0;
  uint64_t seed = 1;
  std::string out;
  bool json = false;
};

int Datagen(const DatagenFlags& f) {
  absl::StatusOr<core::data::SyntheticSequence> seq;
  if (f.system == "cascaded-tanks") {
    core::data::CascadedTanksOptions o;
    if (f.samples != 0) o.samples = f.samples;
    o.noise_std = f.noise;
    o.seed = f.seed;
    seq = core::data::GenerateCascadedTanks(o);
  } else {
    core::data::BinarySystemOptions o;
    if (f.samples != 0) o.samples = f.samples;
    o.noise_std = f.noise;
    o.seed = f.seed;
    seq = core::data::GenerateBinarySystem(o);
  }
  if (!seq.ok()) return Fail(seq.status());
  std::ofstream out(f.out, std::ios::binary);
  if (!out) return Fail(absl::InvalidArgumentError("cannot write " + f.out));
  std::string header;
  for (const auto& n : seq->input_names) header += n + ",";
  for (const auto& n : seq->output_names) header += n + ",";
  header.pop_back();
  out << header << "\n";
  for (Eigen::Index t = 0; t < seq->u.cols(); ++t) {
    std::string line;
    for (Eigen::Index i = 0; i < seq->u.rows(); ++i)
      line += absl::StrFormat("%.17g,", seq->u(i, t));
    for (Eigen::Index i = 0; i < seq->y.rows(); ++i)
      line += absl::StrFormat("%.17g,", seq->y(i, t));
    line.back() = '\n';
    out << line;
  }
  out.close();
  if (!out) return Fail(absl::InvalidArgumentError("cannot write " + f.out));
  if (f.json) {
    nlohmann::json j = {{"system", f.system},       {"file", f.out},
                        {"samples", seq->u.cols()}, {"noise", f.noise},
                        {"seed", f.seed},           {"columns", header}};
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << absl::StrFormat("wrote %d samples of %s (columns %s) to %s\n",
                                 seq->u.cols(), f.system, header, f.out);
  }
  return kExitOk;
}

// The flags of `sparrow run`.
CLI::App* AddRunCommand(CLI::App* app, RunFlags* flags) {
  RunFlags& run = *flags;
  CLI::App* run_cmd = app->add_subcommand(
      "run",
      "Train a job spec.\n"
      "Example: sparrow run --local examples/damper_adam.json --seeds 5 "
      "--threads 2 --json");
  run_cmd->add_flag("--local", run.local,
                    "Train in this process: what `run` always does (to train "
                    "on sparrowd, use `sparrow submit SPEC --watch`)");
  run_cmd
      ->add_option("spec", run.spec_path, "Job spec (JSON, sparrow.v1.JobSpec)")
      ->required();
  run_cmd
      ->add_option(
          "--seeds", run.seeds,
          "Independent initializations (seed, seed+1, ...), run in parallel")
      ->capture_default_str();
  run_cmd->add_option("--threads", run.threads,
                      "Worker threads for --seeds (0 = all cores)");
  run_cmd->add_flag("--json", run.json,
                    "Print one JSON object instead of a table");
  run_cmd->add_option("-o,--output", run.model_out,
                      "Write the trained model (best seed) here: .json for "
                      "JSON, else protobuf");
  return run_cmd;
}

// The flags of `sparrow datagen`.
CLI::App* AddDatagenCommand(CLI::App* app, DatagenFlags* flags) {
  DatagenFlags& gen = *flags;
  CLI::App* gen_cmd =
      app->add_subcommand("datagen",
                          "Generate synthetic benchmark data as CSV.\n"
                          "Example: sparrow datagen cascaded-tanks --samples "
                          "2048 --seed 1 -o tanks.csv");
  gen_cmd->add_option("system", gen.system, "cascaded-tanks | binary-system")
      ->required()
      ->check(CLI::IsMember({"cascaded-tanks", "binary-system"}));
  gen_cmd->add_option("--noise", gen.noise,
                      "Noise standard deviation (tanks: on y; binary: "
                      "sigma_n on the state and the output)");
  gen_cmd->add_option("--samples", gen.samples,
                      "Number of samples (default 1024 tanks, 2000 binary)");
  gen_cmd->add_option("--seed", gen.seed, "Random seed")->capture_default_str();
  gen_cmd->add_option("-o,--output", gen.out, "Output CSV file")->required();
  gen_cmd->add_flag("--json", gen.json, "Print a JSON summary");
  return gen_cmd;
}

// The flags of `sparrow predict` (its connection flags are RemoteCommands').
CLI::App* AddPredictCommand(CLI::App* app, PredictFlags* flags) {
  PredictFlags& pred = *flags;
  CLI::App* pred_cmd = app->add_subcommand(
      "predict",
      "Run a trained model on new data: the model of a job on sparrowd, or a "
      "model file with --local (free-run simulation for sequence models "
      "unless --one-step).\n"
      "Examples:\n"
      "  sparrow predict job-1a2b3c4d5e6f7a8b --input new.csv -o pred.csv\n"
      "  sparrow predict --local --model damper.json --input new.csv -o "
      "pred.csv\n"
      "  sparrow predict job-1a2b3c4d5e6f7a8b --images "
      "t10k-images-idx3-ubyte.gz --json\n"
      "With --images (classifiers trained with softmax cross-entropy), one "
      "line per image: INDEX CLASS PROBABILITY.");
  pred_cmd->add_option("job", pred.job, "Job whose model to run (on sparrowd)");
  pred_cmd->add_flag("--local", pred.local,
                     "Run a model file in this process instead (--model)");
  pred_cmd->add_option(
      "--model", pred.model_path,
      "With --local: model file from `run -o` or `model get` (.json or "
      "binary protobuf); without --local: the job on sparrowd, like JOB");
  pred_cmd->add_option(
      "--input", pred.input,
      "CSV with the model's input columns (sequence models: and its output "
      "columns, read for the initial state / NARX history, and for the fit "
      "only with --x0 zero or values)");
  pred_cmd->add_option("--images", pred.images,
                       "Instead of --input: an IDX image file (gzip'd or not) "
                       "or an image dataset; prints each image's class");
  pred_cmd->add_flag("--simulate", pred.simulate,
                     "Free-run simulation (the default for sequence models)");
  pred_cmd->add_flag(
      "--one-step", pred.one_step,
      "NARX models: one-step-ahead prediction instead of simulation");
  pred_cmd->add_flag("--intervals", pred.intervals,
                     "With --one-step, for SBDL models: add 95 % prediction "
                     "interval columns (<output>_lower95, <output>_upper95) "
                     "from the weight variances");
  pred.x0_option = pred_cmd->add_option(
      "--x0-samples", pred.x0_samples,
      "Samples used to estimate a free initial state (default: the model's)");
  pred_cmd->add_option(
      "--x0", pred.x0,
      "state_space_rnn: where the simulation starts: estimate (from the "
      "first --x0-samples measured outputs; the default), zero, or the "
      "state's nx values, e.g. 0.1,-0.3 (as a previous prediction printed "
      "it). zero and values read the inputs alone");
  pred_cmd->add_option("-o,--output", pred.out,
                       "Write the predictions to this CSV (images: index, "
                       "class, probability, p0, p1, ...)");
  pred_cmd->add_flag("--json", pred.json, "Print a JSON summary");
  return pred_cmd;
}

int Main(int argc, char** argv) {
  CLI::App app{
      "sparrow: train state-space RNNs, NARX and feedforward networks with "
      "NAILS/NAILM (Gauss-Newton / Levenberg-Marquardt), SBDL, L-BFGS, "
      "Adam/AMSGrad and SGD, locally or on sparrowd.\n"
      "Examples:\n"
      "  sparrow run --local examples/damper_adam.json --seeds 5 --json\n"
      "  sparrow submit examples/demo.json --watch --server 127.0.0.1:50051\n"
      "Remote subcommands read the server address and token from --server / "
      "--token or SPARROW_ADDR / SPARROW_TOKEN.\n"
      "Exit codes: 0 success, 1 the job failed or was cancelled, 2 usage or "
      "input error, 3 server or connection error."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "sparrow 0.1.0");

  RunFlags run;
  CLI::App* run_cmd = AddRunCommand(&app, &run);
  DatagenFlags gen;
  CLI::App* gen_cmd = AddDatagenCommand(&app, &gen);
  PredictFlags pred;
  CLI::App* pred_cmd = AddPredictCommand(&app, &pred);
  RemoteCommands remote;
  remote.predict_connection().AddTo(pred_cmd);
  remote.AddTo(&app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const std::string hint =
        e.get_exit_code() == 0 ? "" : UsageHint(app, argc, argv);
    if (hint.empty()) {
      const int code = app.exit(e);
      return code == 0 ? kExitOk : kExitUsage;
    }
    std::cerr << "sparrow: " << hint << "\nRun with --help for more "
              << "information.\n";
    return kExitUsage;
  }
  if (run_cmd->parsed()) return RunLocal(run);
  if (gen_cmd->parsed()) return Datagen(gen);
  if (pred_cmd->parsed()) return Predict(pred, &remote);
  const int code = remote.Run();
  return code >= 0 ? code : kExitUsage;
}

}  // namespace
}  // namespace sparrow::cli

int main(int argc, char** argv) {
  sparrow::translate::UseOneMallocArena();  // before any thread starts
  return sparrow::cli::Main(argc, argv);
}
