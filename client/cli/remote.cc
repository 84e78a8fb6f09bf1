#include "client/cli/remote.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "client/cli/data_files.h"
#include "client/cli/images.h"
#include "client/cli/job_list.h"
#include "client/cli/job_text.h"
#include "client/cli/model_file.h"
#include "core/train/methods.h"
#include "core/util/status_macros.h"
#include "google/protobuf/util/time_util.h"
#include "nlohmann/json.hpp"
#include "sparrow/v1/job_state.h"
#include "translate/config.h"
#include "translate/data.h"
#include "translate/images.h"
#include "translate/json.h"
#include "translate/model.h"
#include "translate/suggest.h"

namespace sparrow::cli {
namespace {

using nlohmann::json;

json ToJsonObject(const google::protobuf::Message& message) {
  return json::parse(translate::ToJson(message));
}

absl::StatusOr<v1::Job::State> ParseState(const std::string& name) {
  if (name.empty()) return v1::Job::STATE_UNSPECIFIED;
  v1::Job::State state;
  if (!v1::Job::State_Parse(absl::AsciiStrToUpper(name), &state) ||
      state == v1::Job::STATE_UNSPECIFIED) {
    const std::string closest =
        translate::ClosestName(name, {"queued", "running", "cancelling",
                                      "succeeded", "failed", "cancelled"});
    return absl::InvalidArgumentError(absl::StrCat(
        "--state '", name, "' is not a job state",
        closest.empty() ? "." : absl::StrCat("; did you mean '", closest, "'?"),
        " Use queued, running, cancelling, succeeded, failed or cancelled"));
  }
  return state;
}

// "1000 rows, columns u, y" or "70000 images of 1 x 28 x 28".
std::string Contents(const v1::Dataset& d) {
  if (d.format() == v1::DATASET_FORMAT_IMAGES) {
    const v1::ImageShape& s = d.image_shape();
    return absl::StrFormat(
        "%d images of %d x %d x %d (channels x rows x "
        "columns), labeled",
        d.rows(), s.channels(), s.height(), s.width());
  }
  return absl::StrFormat("%d rows, columns %s", d.rows(),
                         absl::StrJoin(d.columns(), ", "));
}

}  // namespace

void RemoteCommands::AddTo(CLI::App* app) {
  AddSubmitCommands(app);
  AddJobCommands(app);
  AddModelCommands(app);
}

void RemoteCommands::AddSubmitCommands(CLI::App* app) {
  upload_ = app->add_subcommand(
      "upload",
      "Upload a CSV dataset, or IDX image files with their label files, to "
      "sparrowd (skipped when the server already has the same bytes); prints "
      "its id.\n"
      "Examples:\n"
      "  sparrow upload ../shared/data/mr_damper/mrdamper.csv\n"
      "  sparrow upload --images train-images-idx3-ubyte.gz --labels "
      "train-labels-idx1-ubyte.gz --images t10k-images-idx3-ubyte.gz "
      "--labels t10k-labels-idx1-ubyte.gz --name fashion-mnist");
  upload_->add_option("file", file_, "CSV file with a header row");
  upload_->add_option("--images", images_,
                      "IDX image file (gzip'd or not); repeat for more, each "
                      "with its --labels; packed in order into one image "
                      "dataset");
  upload_->add_option("--labels", labels_,
                      "IDX label file of the --images file at the same place");
  upload_->add_option("--name", name_, "Display name (default: the file name)");
  upload_->add_flag("--json", json_, "Print {\"dataset_id\": ...} only");
  upload_connection_.AddTo(upload_);

  submit_ = app->add_subcommand(
      "submit",
      "Submit a job spec to sparrowd. The spec's data.csv_path (or --data), "
      "validation_data.csv_path and test_data.csv_path are uploaded and "
      "replaced by their dataset ids.\n"
      "Example: sparrow submit examples/damper_nailm.json --watch");
  submit_->add_option("spec", spec_path_, "Job spec (JSON, sparrow.v1.JobSpec)")
      ->required();
  submit_->add_option("--data", data_path_,
                      "CSV to train on (instead of the spec's data.csv_path)");
  submit_->add_flag("--watch", submit_watch_,
                    "Then watch the job to its end (exit 1 unless it "
                    "succeeds)");
  submit_->add_option("--priority", priority_, "Higher runs first (default 0)");
  submit_->add_option("--request-id", request_id_,
                      "Idempotency key: submitting again with it returns the "
                      "same job");
  submit_->add_flag("--json", json_,
                    "Print {\"job_id\": ...} (with --watch: then one JSON "
                    "object per event)");
  submit_connection_.AddTo(submit_);
}

void RemoteCommands::AddJobCommands(CLI::App* app) {
  watch_ = app->add_subcommand(
      "watch",
      "Follow a job's progress live until it ends; survives server restarts. "
      "Exit 0 if it succeeded, 1 if it failed or was cancelled.\n"
      "Example: sparrow watch job-1a2b3c4d5e6f7a8b");
  watch_->add_option("job", job_, "Job id")->required();
  watch_->add_option("--after", after_,
                     "Show only events after this seq (resume a watch)");
  watch_->add_flag("--json", json_, "Print one JSON object per event");
  watch_connection_.AddTo(watch_);

  status_ = app->add_subcommand(
      "status",
      "Show a job: state, progress, history.\n"
      "Example: sparrow status job-1a2b3c4d5e6f7a8b --json");
  status_->add_option("job", job_, "Job id")->required();
  status_->add_flag("--json", json_, "Print the job as JSON");
  status_connection_.AddTo(status_);

  list_ = app->add_subcommand("list",
                              "List your jobs, oldest first.\n"
                              "Example: sparrow list --state running");
  list_->add_option("--state", state_,
                    "Only jobs in this state (queued, running, cancelling, "
                    "succeeded, failed, cancelled)");
  list_->add_option("--page-size", page_size_,
                    "Jobs per page (default 50, at most 1000)");
  list_->add_option("--page-token", page_token_,
                    "Continue a listing (from the previous next_page_token)");
  list_->add_flag("--json", json_, "Print {\"jobs\": [...], ...} as JSON");
  list_connection_.AddTo(list_);

  cancel_ = app->add_subcommand("cancel",
                                "Cancel a queued or running job.\n"
                                "Example: sparrow cancel job-1a2b3c4d5e6f7a8b");
  cancel_->add_option("job", job_, "Job id")->required();
  cancel_->add_flag("--json", json_, "Print the job as JSON");
  cancel_connection_.AddTo(cancel_);
}

void RemoteCommands::AddModelCommands(CLI::App* app) {
  model_ = app->add_subcommand(
      "model",
      "Trained models of ended jobs: download or export them.\n"
      "Example: sparrow model get job-1a2b3c4d5e6f7a8b -o model.json");
  model_->require_subcommand(1);
  model_get_ = model_->add_subcommand(
      "get",
      "Download the trained model of an ended job (.json: JSON, else "
      "binary protobuf). A cancelled or failed job's is the model it had "
      "reached, marked partial.\n"
      "Example: sparrow model get job-1a2b3c4d5e6f7a8b -o model.json");
  model_get_->add_option("job", job_, "Job id")->required();
  AddOutputFileOption(model_get_, &model_out_, "model.pb or model.json")
      ->required();
  model_get_->add_flag("--json", json_, "Print a JSON summary");
  model_connection_.AddTo(model_get_);
  model_export_.AddTo(model_);

  health_ = app->add_subcommand(
      "health",
      "Check that sparrowd is up (grpc.health.v1); exit 3 when it is not.\n"
      "Example: sparrow health --server 127.0.0.1:50051");
  health_->add_flag("--json", json_, "Print {\"status\": ...}");
  health_connection_.AddTo(health_);
}

int RemoteCommands::Run() {
  if (upload_->parsed()) return Upload();
  if (submit_->parsed()) return Submit();
  if (watch_->parsed()) {
    auto client = watch_connection_.Connect();
    if (!client.ok()) return Fail(client.status());
    return Watch(job_, after_, json_, client->get());
  }
  if (status_->parsed()) return Status();
  if (list_->parsed()) return List();
  if (cancel_->parsed()) return Cancel();
  if (model_get_->parsed()) return ModelGet();
  if (model_export_.parsed()) return model_export_.Run();
  if (health_->parsed()) return Health();
  return -1;
}

// The bytes to upload and their display name: the CSV file, or the packed
// --images / --labels files.
absl::StatusOr<std::pair<std::string, std::string>> UploadContent(
    const std::string& file, const std::vector<std::string>& images,
    const std::vector<std::string>& labels, const std::string& name) {
  if (file.empty() == images.empty()) {
    return absl::InvalidArgumentError(
        "give a CSV file or --images FILE --labels FILE, not both");
  }
  const std::string& first = file.empty() ? images.front() : file;
  std::string shown =
      name.empty() ? first.substr(first.find_last_of('/') + 1) : name;
  if (!file.empty()) {
    SPARROW_ASSIGN_OR_RETURN(std::string bytes, ReadFile(file, "the dataset"));
    return std::make_pair(std::move(bytes), std::move(shown));
  }
  SPARROW_ASSIGN_OR_RETURN(std::string bytes, PackImageFiles(images, labels));
  return std::make_pair(std::move(bytes), std::move(shown));
}

int RemoteCommands::Upload() {
  auto content = UploadContent(file_, images_, labels_, name_);
  if (!content.ok()) return Fail(content.status());
  auto client = upload_connection_.Connect();
  if (!client.ok()) return Fail(client.status());
  const std::string* bytes = &content->first;
  const std::string& name = content->second;
  bool existed = false;
  auto dataset = (*client)->Upload(*bytes, name, &existed);
  if (!dataset.ok()) return Fail(dataset.status());
  if (json_) {
    json j = {{"dataset_id", dataset->id()},
              {"already_existed", existed},
              {"rows", dataset->rows()},
              {"size_bytes", dataset->size_bytes()},
              {"columns", std::vector<std::string>(dataset->columns().begin(),
                                                   dataset->columns().end())}};
    if (dataset->has_image_shape()) {
      const v1::ImageShape& shape = dataset->image_shape();
      j["image_shape"] = {shape.channels(), shape.height(), shape.width()};
    }
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << dataset->id() << "\n";
    std::cerr << absl::StrFormat("%s: %s%s\n", name, Contents(*dataset),
                                 existed ? " (already on the server)" : "");
  }
  return kExitOk;
}

int RemoteCommands::Submit() {
  auto text = ReadFile(spec_path_, "the job spec");
  if (!text.ok()) return Fail(text.status());
  auto spec = translate::ParseJobSpecJson(*text);
  if (!spec.ok()) return Fail(spec.status());
  if (absl::Status s = InlineWarmStart(&*spec); !s.ok()) return Fail(s);
  auto client = submit_connection_.Connect();
  if (!client.ok()) return Fail(client.status());
  std::string csv_path = data_path_;
  if (csv_path.empty() &&
      spec->data().source_case() == v1::DataSource::kCsvPath) {
    csv_path = spec->data().csv_path();
  }
  if (!csv_path.empty()) {
    auto bytes =
        ReadFile(csv_path, data_path_.empty() ? "data.csv_path" : "--data");
    if (!bytes.ok()) return Fail(bytes.status());
    auto dataset = (*client)->Upload(
        *bytes, csv_path.substr(csv_path.find_last_of('/') + 1));
    if (!dataset.ok()) {  // the server's message does not know the field
      return Fail(absl::Status(
          dataset.status().code(),
          absl::StrCat(data_path_.empty() ? "data.csv_path" : "--data", " '",
                       csv_path, "': ", dataset.status().message())));
    }
    spec->mutable_data()->set_dataset_id(dataset->id());
  } else if (spec->data().has_images()) {
    auto images = translate::ReadImageFiles(spec->data().images());
    if (!images.ok()) return Fail(images.status());
    auto dataset =
        (*client)->Upload(translate::PackImageDataset(*images),
                          spec->name().empty() ? "images" : spec->name());
    if (!dataset.ok()) return Fail(dataset.status());
    spec->mutable_data()->set_dataset_id(dataset->id());
  } else if (spec->data().source_case() != v1::DataSource::kDatasetId) {
    return Fail(absl::InvalidArgumentError(
        "the spec has no data: set data.csv_path, data.images or "
        "data.dataset_id, or pass --data FILE.csv"));
  }
  if (absl::Status s = UploadRecordFiles(client->get(), &*spec); !s.ok()) {
    return Fail(s);
  }
  auto job = (*client)->Submit(*spec, request_id_, priority_);
  if (!job.ok()) return Fail(job.status());
  if (json_) {
    json j = {{"job_id", job->id()},
              {"state", v1::Job::State_Name(job->state())},
              {"dataset_id", job->spec().data().dataset_id()}};
    std::cout << j.dump(submit_watch_ ? -1 : 2) << "\n" << std::flush;
  } else {
    std::cout << job->id() << "\n" << std::flush;
  }
  if (!submit_watch_) return kExitOk;
  return Watch(job->id(), 0, json_, client->get());
}

int RemoteCommands::Watch(const std::string& job_id, int64_t after,
                          bool as_json, client::Client* client) {
  if (after < 0) {
    return Fail(absl::InvalidArgumentError("--after must be >= 0"));
  }
  auto job = client->GetJob(job_id);
  if (!job.ok()) return Fail(job.status());
  const int job_budget = IterationBudget(job->spec());
  const std::vector<int> trial_budgets = TrialBudgets(job->spec());
  // A sweep's copy of a trial's event counts against that trial's budget.
  auto line_of = [&](const v1::ProgressEvent& e) {
    const bool trial = e.has_trial() && e.trial() >= 0 &&
                       e.trial() < static_cast<int>(trial_budgets.size());
    return EventLine(e, trial ? trial_budgets[e.trial()] : job_budget);
  };
  const bool tty = !as_json && isatty(STDOUT_FILENO);
  absl::Time last_print = absl::InfinitePast();
  bool line_open = false;       // a \r progress line is on screen
  v1::ProgressEvent unprinted;  // the last iteration not shown (non-TTY)
  bool have_unprinted = false;
  auto on_event = [&](const v1::ProgressEvent& e) {
    if (as_json) {
      std::cout << ToJsonObject(e).dump() << "\n" << std::flush;
      return true;
    }
    // State changes and a sweep's trial ends get a line of their own.
    if (e.kind() == v1::ProgressEvent::STATE ||
        e.kind() == v1::ProgressEvent::TRIAL_END) {
      if (line_open) std::cout << "\n";
      line_open = false;
      if (have_unprinted && v1::IsFinalEvent(e)) {
        std::cout << line_of(unprinted) << "\n";
      }
      if (e.kind() == v1::ProgressEvent::STATE) have_unprinted = false;
      std::cout << line_of(e) << "\n" << std::flush;
      return true;
    }
    const absl::Time now = absl::Now();
    if (tty) {
      if (now - last_print >= absl::Milliseconds(100)) {
        std::cout << "\r\033[K" << line_of(e) << std::flush;
        line_open = true;
        last_print = now;
      }
    } else if (now - last_print >= absl::Seconds(1)) {
      std::cout << line_of(e) << "\n" << std::flush;
      last_print = now;
      have_unprinted = false;
    } else {
      unprinted = e;
      have_unprinted = true;
    }
    return true;
  };
  auto done = client->Watch(job_id, after, on_event);
  if (line_open) std::cout << "\n";
  if (!done.ok()) return Fail(done.status());
  if (!as_json && done->state() == v1::Job::SUCCEEDED &&
      !done->summary().empty()) {
    std::cout << done->summary() << "\n";
  }
  if (!as_json && done->has_metrics()) {  // the ended job's model's fit
    std::cout << "metrics: " << MetricsLine(done->metrics())
              << (done->model_partial() ? " (partial model)" : "") << "\n";
  }
  return ExitForState(done->state());
}

int RemoteCommands::Status() {
  auto client = status_connection_.Connect();
  if (!client.ok()) return Fail(client.status());
  auto job = (*client)->GetJob(job_);
  if (!job.ok()) return Fail(job.status());
  // An ended job's record carries its model's metrics; a record stored
  // before it did needs the model itself.
  if (v1::IsFinal(job->state()) && !job->has_metrics()) {
    auto model = (*client)->GetModel(job->id());
    if (model.ok()) {
      *job->mutable_metrics() = model->metrics();
      job->set_model_partial(model->partial());
    }
  }
  if (json_) {
    std::cout << JobJson(*job) << "\n";
    return kExitOk;
  }
  PrintJob(*job);
  if (job->has_metrics()) {
    std::cout << "  metrics: " << MetricsLine(job->metrics()) << "\n";
  }
  if (job->model_partial()) {
    std::cout << absl::StrFormat(
        "  model: partial (the one reached after %d epochs)\n",
        job->iterations());
  }
  return kExitOk;
}

int RemoteCommands::List() {
  auto state = ParseState(state_);
  if (!state.ok()) return Fail(state.status());
  auto client = list_connection_.Connect();
  if (!client.ok()) return Fail(client.status());
  auto page = (*client)->ListJobs(*state, page_size_, page_token_);
  if (!page.ok()) return Fail(page.status());
  if (json_) {
    PrintJobListJson(*page);
  } else {
    PrintJobList(*page);
  }
  return kExitOk;
}

int RemoteCommands::Cancel() {
  auto client = cancel_connection_.Connect();
  if (!client.ok()) return Fail(client.status());
  auto job = (*client)->CancelJob(job_);
  if (!job.ok()) return Fail(job.status());
  if (json_) {
    std::cout << JobJson(*job) << "\n";
  } else {
    std::cout << absl::StrFormat("job %s: %s\n", job->id(),
                                 StateName(job->state()));
  }
  return kExitOk;
}

int RemoteCommands::ModelGet() {
  auto client = model_connection_.Connect();
  if (!client.ok()) return Fail(client.status());
  const bool as_json = translate::HasJsonSuffix(model_out_);
  auto exported =
      (*client)->ExportModel(job_, as_json ? v1::ExportModelRequest::JSON
                                           : v1::ExportModelRequest::PROTO);
  if (!exported.ok()) return Fail(exported.status());
  return WriteExported(
      *exported,
      absl::StrCat(as_json ? "JSON" : "binary protobuf", " model of ", job_,
                   as_json ? "" : " (a name ending in .json writes JSON)"),
      model_out_, {{"job_id", job_}, {"format", as_json ? "json" : "protobuf"}},
      json_);
}

// The answer of ModelService.Predict for images, as translate's.
translate::ImagePredictions FromResponse(const v1::PredictResponse& r) {
  translate::ImagePredictions p;
  const int classes = r.images().empty() ? 0 : r.images(0).probabilities_size();
  p.probabilities.resize(classes, r.images_size());
  for (int j = 0; j < r.images_size(); ++j) {
    const v1::ImagePrediction& image = r.images(j);
    p.labels.push_back(image.label());
    for (int c = 0; c < classes && c < image.probabilities_size(); ++c) {
      p.probabilities(c, j) = image.probabilities(c);
    }
  }
  return p;
}

int RemoteCommands::PredictImages(const RemotePredictArgs& a,
                                  client::Client* client) {
  auto images = ReadImagesToPredict(a.images);
  if (!images.ok()) return Fail(images.status());
  auto p = PredictInBatches(
      *images,
      [&](const core::data::ImageSet& batch)
          -> absl::StatusOr<translate::ImagePredictions> {
        v1::PredictRequest request;
        request.set_job_id(a.job);
        request.set_images(core::data::SerializeIdxImages(batch));
        SPARROW_ASSIGN_OR_RETURN(v1::PredictResponse response,
                                 client->Predict(request));
        return FromResponse(response);
      });
  if (!p.ok()) return Fail(p.status());
  return PrintImagePredictions(*p, a.out, a.json);
}

int RemoteCommands::Predict(const RemotePredictArgs& a) {
  auto client = predict_connection_.Connect();
  if (!client.ok()) return Fail(client.status());
  if (!a.images.empty()) return PredictImages(a, client->get());
  auto csv = ReadFile(a.input, "--input");
  if (!csv.ok()) return Fail(csv.status());
  v1::PredictRequest request;
  request.set_job_id(a.job);
  request.set_csv(*csv);
  request.set_one_step(a.one_step);
  request.set_intervals(a.intervals);
  request.set_x0_samples(a.x0_samples);
  request.set_initial_state(a.initial_state);
  request.mutable_x0()->Add(a.x0.begin(), a.x0.end());
  auto response = (*client)->Predict(request);
  if (!response.ok()) return Fail(response.status());
  if (!a.out.empty()) {
    std::ofstream out(a.out, std::ios::binary);
    out << response->csv();
    if (!out) {
      return Fail(absl::InvalidArgumentError("cannot write " + a.out));
    }
  }
  std::optional<double> bfr, rmse;
  if (response->has_bfr()) bfr = response->bfr();
  if (response->has_rmse()) rmse = response->rmse();
  return PrintPrediction(
      response->samples(), bfr, rmse, a.out, a.json,
      std::vector<double>(response->x0().begin(), response->x0().end()));
}

int RemoteCommands::Health() {
  auto client = health_connection_.Connect();
  absl::StatusOr<std::string> status =
      client.ok() ? (*client)->Health() : client.status();
  const std::string address = health_connection_.Address();
  if (!status.ok()) {
    // With --json the answer is JSON whether or not the server answered, so
    // a probe script parses one format; the exit code still says it failed.
    const absl::StatusCode code = status.status().code();
    const bool unreachable = code == absl::StatusCode::kUnavailable ||
                             code == absl::StatusCode::kDeadlineExceeded;
    if (json_) {
      std::cout << json{{"status", unreachable ? "UNREACHABLE" : "ERROR"},
                        {"server", address},
                        {"code", absl::StatusCodeToString(code)},
                        {"error", status.status().message()}}
                       .dump(2, ' ', false, json::error_handler_t::replace)
                << "\n";
    }
    return Fail(status.status());
  }
  if (json_) {
    std::cout << json{{"status", *status}, {"server", address}}.dump(
                     2, ' ', false, json::error_handler_t::replace)
              << "\n";
  } else {
    std::cout << address << ": " << Lower(*status) << "\n";
  }
  return *status == "SERVING" ? kExitOk : kExitServer;
}

}  // namespace sparrow::cli
