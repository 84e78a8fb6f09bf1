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
#include <filesystem>
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
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/cli/common.h"
#include "client/cli/data_files.h"
#include "client/cli/images.h"
#include "client/cli/local_run.h"
#include "client/cli/model_file.h"
#include "client/cli/remote.h"
#include "client/cli/report.h"
#include "client/cli/usage_hint.h"
#include "core/data/synthetic.h"
#include "core/train/methods.h"
#include "core/train/trainer.h"
#include "core/util/eigen_blocking.h"
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
  std::error_code same_ec;
  if (!f.out.empty() &&
      std::filesystem::equivalent(f.out, f.input.empty() ? f.images : f.input,
                                  same_ec)) {
    return Fail(absl::InvalidArgumentError(absl::StrCat(
        "-o ", f.out,
        " is the input file: the predictions would overwrite the data; "
        "write them to another file")));
  }
  if (!f.local) {
    // `--model JOB` names the job on sparrowd, as `predict JOB` does.
    const std::string job = f.job.empty() ? f.model_path : f.job;
    if (job.empty()) {
      return Fail(absl::InvalidArgumentError(
          "name a job (sparrow predict JOB --input FILE) or a model file "
          "(sparrow predict --local --model FILE --input FILE)"));
    }
    std::error_code ec;
    if (std::filesystem::is_regular_file(job, ec)) {
      return Fail(absl::InvalidArgumentError(absl::StrCat(
          "'", job,
          "' is a file here, not a job id: to run a model file in this "
          "process, add --local (sparrow predict --local --model ",
          job, " --input FILE)")));
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
  if (!f.job.empty()) {
    return Fail(absl::InvalidArgumentError(absl::StrCat(
        "--local runs the model file --model ", f.model_path,
        " in this process, so the job id '", f.job,
        "' would be ignored: give one of them (without --local, sparrowd "
        "runs the job's model)")));
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
  } else if (f.system == "narx-lags") {
    core::data::NarxLagsOptions o;
    if (f.samples != 0) o.samples = f.samples;
    o.noise_std = f.noise;
    o.seed = f.seed;
    seq = core::data::GenerateNarxLags(o);
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
    if (f.system == "narx-lags") {
      j["true_lags"] = core::data::kNarxLagsTrueLags;
      j["equation"] = "y(t) = 0.7 y(t-1) + tanh(2 u(t-1)) - 0.5 u(t-3)^2";
    }
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << absl::StrFormat("wrote %d samples of %s (columns %s) to %s\n",
                                 seq->u.cols(), f.system, header, f.out);
    if (f.system == "narx-lags") {
      std::cout << "true lags: "
                << absl::StrJoin(core::data::kNarxLagsTrueLags, ", ") << "\n";
    }
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
                    "Train in this process (required: `run` trains locally; "
                    "to train on sparrowd, use `sparrow submit SPEC --watch`)");
  run_cmd
      ->add_option("spec", run.spec_path, "Job spec (JSON, sparrow.v1.JobSpec)")
      ->required();
  run_cmd
      ->add_option(
          "--seeds", run.seeds,
          "Independent initializations (seed, seed+1, ...), run in parallel: "
          "a sweep of seeds (the spec's sweep.seeds)")
      ->capture_default_str();
  run_cmd->add_option("--threads", run.threads,
                      "Trials trained at once (0 = the spec's "
                      "sweep.max_parallel, else all cores)");
  run_cmd->add_flag("--json", run.json,
                    "Print one JSON object instead of a table");
  AddOutputFileOption(run_cmd, &run.model_out,
                      "Write the trained model (the chosen seed or sweep "
                      "trial) here: .json for JSON, else protobuf");
  run_cmd
      ->add_option("--max-memory", run.max_memory_gib,
                   "Refuse a run whose memory estimate passes this many GiB "
                   "(0 = the machine's memory, ulimit -v or the container's "
                   "limit, whichever is least)")
      ->check(CLI::NonNegativeNumber);
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
  gen_cmd
      ->add_option("system", gen.system,
                   "cascaded-tanks | binary-system | narx-lags (y(t) = 0.7 "
                   "y(t-1) + tanh(2 u(t-1)) - 0.5 u(t-3)^2)")
      ->required()
      ->check(CLI::IsMember({"cascaded-tanks", "binary-system", "narx-lags"}));
  gen_cmd->add_option("--noise", gen.noise,
                      "Noise standard deviation (tanks: on y; binary: "
                      "sigma_n on the state and the output; narx-lags: on y)");
  gen_cmd->add_option("--samples", gen.samples,
                      "Number of samples (default 1024 tanks, 2000 binary and "
                      "narx-lags)");
  gen_cmd->add_option("--seed", gen.seed, "Random seed")->capture_default_str();
  AddOutputFileOption(gen_cmd, &gen.out, "Output CSV file")->required();
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
  AddOutputFileOption(pred_cmd, &pred.out,
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
  if (run_cmd->parsed()) {
    // Before sparrowd existed `run` was the only way to train; now a plain
    // `run` could mean either, so the local one is asked for by name.
    if (!run.local) {
      return Fail(absl::InvalidArgumentError(absl::StrCat(
          "`sparrow run` trains in this process and takes --local to say so: "
          "sparrow run --local ",
          run.spec_path, " (to train on sparrowd: sparrow submit ",
          run.spec_path, " --watch)")));
    }
    return RunLocal(run);
  }
  if (gen_cmd->parsed()) return Datagen(gen);
  if (pred_cmd->parsed()) return Predict(pred, &remote);
  const int code = remote.Run();
  return code >= 0 ? code : kExitUsage;
}

}  // namespace
}  // namespace sparrow::cli

int main(int argc, char** argv) {
  // Both before any thread starts.
  sparrow::translate::UseOneMallocArena();
  sparrow::core::PinEigenBlocking();  // results independent of the CPU's caches
  return sparrow::cli::Main(argc, argv);
}
