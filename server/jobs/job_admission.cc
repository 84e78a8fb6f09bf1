// JobManager, admission: a submission's checks (spec, dataset, limits, the
// memory it will need) and its place in the queue.
#include <mutex>
#include <optional>
#include <random>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/data/csv.h"
#include "core/data/dataset.h"
#include "core/train/models/layered.h"
#include "core/train/trainer.h"
#include "core/util/status_macros.h"
#include "server/jobs/job_manager.h"
#include "spdlog/spdlog.h"
#include "translate/config.h"
#include "translate/data.h"
#include "translate/json.h"
#include "translate/model.h"
#include "translate/text.h"
#include "translate/warm_start.h"

namespace sparrow::server {
namespace {

std::string NewJobId() {
  static std::mutex mu;
  static std::mt19937_64 rng(std::random_device{}());
  std::lock_guard<std::mutex> lock(mu);
  return absl::StrFormat("job-%016x", rng());
}

// The job an earlier submission with the same request_id created, or
// ALREADY_EXISTS when the request differs (AIP-155).
absl::StatusOr<v1::Job> SameRequest(const v1::Job& earlier,
                                    const v1::SubmitJobRequest& request) {
  if (earlier.spec().SerializeAsString() !=
          request.spec().SerializeAsString() ||
      earlier.priority() != request.priority()) {
    return absl::AlreadyExistsError(absl::StrCat(
        "request_id '", translate::ForMessage(request.request_id()),
        "' was used for job ", earlier.id(),
        " with a different spec or priority; use a new request_id for a new "
        "job"));
  }
  return earlier;
}

// Model inputs and outputs of a submission, as far as the dataset's metadata
// tells.
struct Channels {
  int inputs = 0, outputs = 0;
};

// A CSV dataset: the spec's columns resolved against its header and its
// row ranges against its rows.
absl::StatusOr<Channels> CsvChannels(const v1::JobSpec& spec,
                                     const v1::Dataset& dataset) {
  Channels out;
  const std::vector<std::string> header(dataset.columns().begin(),
                                        dataset.columns().end());
  auto resolve = [&](const google::protobuf::RepeatedPtrField<std::string>& f,
                     const char* name) -> absl::StatusOr<int> {
    const std::vector<std::string> selectors(f.begin(), f.end());
    auto columns = core::data::ResolveColumns(header, selectors);
    if (!columns.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("spec.data.", name, ": ", columns.status().message()));
    }
    return static_cast<int>(columns->size());
  };
  SPARROW_ASSIGN_OR_RETURN(out.inputs, resolve(spec.data().inputs(), "inputs"));
  SPARROW_ASSIGN_OR_RETURN(out.outputs,
                           resolve(spec.data().outputs(), "outputs"));
  SPARROW_RETURN_IF_ERROR(
      resolve(spec.data().test_inputs(), "test_inputs").status());
  SPARROW_RETURN_IF_ERROR(
      resolve(spec.data().test_outputs(), "test_outputs").status());
  if (!spec.data().trace_column().empty()) {
    SPARROW_RETURN_IF_ERROR(
        core::data::ResolveColumns(header, {spec.data().trace_column()})
            .status());
  }
  // Row ranges against the stored row count (the trainer re-checks them).
  const struct {
    const google::protobuf::RepeatedPtrField<v1::RowRange>* ranges;
    const char* name;
  } splits[] = {{&spec.split().train(), "spec.split.train"},
                {&spec.split().validation(), "spec.split.validation"},
                {&spec.split().test(), "spec.split.test"}};
  for (const auto& split : splits) {
    std::vector<core::data::RowRange> ranges;
    for (const v1::RowRange& r : *split.ranges) {
      ranges.push_back({r.first(), r.last()});
    }
    SPARROW_RETURN_IF_ERROR(
        core::data::ValidateRanges(ranges, dataset.rows(), split.name));
  }
  // Column roles, categorical columns and splits, as the trainer will check
  // them.
  SPARROW_RETURN_IF_ERROR(
      translate::ValidateDataSpec(spec, header, dataset.rows()));
  return out;
}

// An image dataset: one input per pixel value and the label; the spec's
// split against its images.
absl::StatusOr<Channels> ImageChannels(const v1::JobSpec& spec,
                                       const v1::Dataset& dataset) {
  SPARROW_RETURN_IF_ERROR(
      translate::ValidateImageDataSpec(spec, dataset.rows()));
  const v1::ImageShape& shape = dataset.image_shape();
  // A classifier outputs one value per class: the dataset's classes,
  // or every value a label byte can take when the dataset does not say.
  const bool softmax = spec.loss().kind() == v1::LOSS_SOFTMAX_CROSS_ENTROPY ||
                       spec.loss().one_hot_targets();
  const int classes = dataset.classes() > 0 ? dataset.classes() : 256;
  return Channels{shape.channels() * shape.height() * shape.width(),
                  softmax ? classes : 1};
}

// Rows and bytes of the datasets a job reads besides data's.
struct RecordSizes {
  int64_t rows = 0, bytes = 0;
};

// spec.validation_data / test_data on sparrowd: CSV datasets of the tenant
// whose headers have the spec's columns.
absl::StatusOr<RecordSizes> CheckRecordDatasets(Store* store,
                                                const std::string& tenant,
                                                const v1::JobSpec& spec) {
  SPARROW_RETURN_IF_ERROR(translate::CheckRecordFiles(spec));
  RecordSizes out;
  const struct {
    bool set;
    const v1::RecordFile* file;
    const char* field;
  } records[] = {
      {spec.has_validation_data(), &spec.validation_data(), "validation_data"},
      {spec.has_test_data(), &spec.test_data(), "test_data"}};
  for (const auto& r : records) {
    if (!r.set) continue;
    if (r.file->source_case() != v1::RecordFile::kDatasetId) {
      return absl::InvalidArgumentError(absl::StrCat(
          "spec.", r.field,
          ".dataset_id is required: upload the file first (sparrow upload "
          "FILE.csv; sparrow submit does it for a csv_path)"));
    }
    absl::StatusOr<v1::Dataset> dataset =
        store->GetDataset(tenant, r.file->dataset_id());
    if (!dataset.ok()) {
      return absl::Status(dataset.status().code(),
                          absl::StrCat("spec.", r.field, ".dataset_id: ",
                                       dataset.status().message()));
    }
    if (dataset->format() == v1::DATASET_FORMAT_IMAGES) {
      return absl::InvalidArgumentError(
          absl::StrCat("spec.", r.field, ".dataset_id names an image dataset; ",
                       r.field, " is for CSV files"));
    }
    if (dataset->rows() <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "spec.", r.field, ".dataset_id names a dataset with no data rows; ",
          r.field, " needs at least one"));
    }
    const std::vector<std::string> header(dataset->columns().begin(),
                                          dataset->columns().end());
    SPARROW_RETURN_IF_ERROR(
        translate::ValidateRecordFile(spec, r.field, header));
    out.rows += dataset->rows();
    out.bytes += dataset->size_bytes();
  }
  return out;
}

}  // namespace

absl::StatusOr<int64_t> JobManager::ValidateSubmission(
    const std::string& tenant, const v1::JobSpec& spec) {
  if (spec.data().source_case() != v1::DataSource::kDatasetId) {
    return absl::InvalidArgumentError(
        "spec.data.dataset_id is required: upload the data first (sparrow "
        "upload FILE.csv, or sparrow upload --images FILE --labels FILE) and "
        "put its id here; data.csv_path and data.images are for local runs "
        "only");
  }
  if (spec.has_sweep()) return ValidateSweep(tenant, spec);
  SPARROW_ASSIGN_OR_RETURN(core::TrainConfig config,
                           translate::ToTrainConfig(spec));
  SPARROW_ASSIGN_OR_RETURN(
      v1::Dataset dataset,
      store_->GetDataset(tenant, spec.data().dataset_id()));
  SPARROW_ASSIGN_OR_RETURN(const Channels channels,
                           dataset.format() == v1::DATASET_FORMAT_IMAGES
                               ? ImageChannels(spec, dataset)
                               : CsvChannels(spec, dataset));
  const int n_in = channels.inputs, n_out = channels.outputs;
  SPARROW_ASSIGN_OR_RETURN(const RecordSizes records,
                           CheckRecordDatasets(store_, tenant, spec));
  // The worker gets every file in one protobuf message, which cannot pass
  // 2 GiB.
  constexpr int64_t kMaxJobFileBytes = int64_t{1900} << 20;
  if (dataset.size_bytes() + records.bytes > kMaxJobFileBytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("data, validation_data and test_data hold ",
                     core::FormatBytes(dataset.size_bytes() + records.bytes),
                     " together; a job can read at most ",
                     core::FormatBytes(kMaxJobFileBytes),
                     " of files: use fewer or smaller files"));
  }
  SPARROW_RETURN_IF_ERROR(CheckWarmStart(tenant, spec, n_in, &config));
  if (dataset.format() == v1::DATASET_FORMAT_IMAGES) {
    // The shape fields the spec left at 0 come from the images, as in
    // training (a 3 x 32 x 32 cnn input is not a square of 3072).
    const v1::ImageShape& s = dataset.image_shape();
    core::ResolveImageShape(s.channels(), s.height(), s.width(), &config.model);
  }
  // A categorical column counts as one input or output here: its levels are
  // in the content, not the dataset's metadata. RunJob checks the limit again
  // with the one-hot widths.
  SPARROW_ASSIGN_OR_RETURN(int64_t params,
                           core::CountParameters(config.model, n_in, n_out));
  // A free initial state per window is a parameter too.
  const int64_t window_states =
      core::WindowStateParameters(config, dataset.rows() + records.rows);
  params += window_states;
  if (params > options_.limits.max_model_params) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "the model has %d parameters%s; this server allows at most %d "
        "(sparrowd --max-model-params)",
        params,
        window_states > 0
            ? absl::StrFormat(" (%d of them the initial states of its "
                              "windows: set a longer "
                              "state_space_rnn.subsequence_length)",
                              window_states)
            : "",
        options_.limits.max_model_params));
  }
  SPARROW_ASSIGN_OR_RETURN(
      core::MemoryEstimate memory,
      core::EstimateMemory(config, n_in, n_out, dataset.rows() + records.rows,
                           dataset.size_bytes() + records.bytes));
  SPARROW_RETURN_IF_ERROR(CheckMemory(memory));
  return memory.total;
}

absl::Status JobManager::CheckWarmStart(const std::string& tenant,
                                        const v1::JobSpec& spec, int n_inputs,
                                        core::TrainConfig* config) {
  std::optional<v1::TrainedModel> source;
  if (spec.warm_start().has_job_id()) {
    if (spec.warm_start().job_id().empty()) {
      return absl::InvalidArgumentError(
          "warm_start.job_id is empty; give the id of an ended job (sparrow "
          "list) or remove warm_start");
    }
    v1::Job job;
    absl::StatusOr<v1::TrainedModel> model =
        GetModel(tenant, spec.warm_start().job_id(), &job);
    if (!model.ok()) {
      return absl::Status(
          model.status().code(),
          absl::StrCat("warm_start.job_id: ", model.status().message()));
    }
    source = *std::move(model);
  }
  SPARROW_ASSIGN_OR_RETURN(
      std::optional<v1::TrainedModel> model,
      translate::WarmStartModel(spec, source ? &*source : nullptr));
  if (!model.has_value()) return absl::OkStatus();
  // Admission counts a categorical column as one input; the model counts its
  // one-hot levels. The worker checks the channels by name.
  const bool one_hot = !spec.data().categorical().empty();
  return translate::ApplyWarmStart(spec, *model, one_hot ? 0 : n_inputs,
                                   config);
}

absl::Status JobManager::CheckMemory(const core::MemoryEstimate& memory) const {
  const int64_t per_job = options_.limits.max_job_memory;
  if (memory.total <= per_job && memory.total <= memory_budget_) {
    return absl::OkStatus();
  }
  const bool job_limit = memory.total > per_job;
  return absl::ResourceExhaustedError(absl::StrCat(
      "the job would need about ", core::FormatBytes(memory.total),
      " of memory, mostly for ", memory.dominant, "; this server allows ",
      job_limit ? "one job at most " : "all running jobs together at most ",
      core::FormatBytes(job_limit ? per_job : memory_budget_),
      job_limit ? " (sparrowd --max-job-memory)"
                : " (sparrowd --max-total-job-memory)",
      ". Use a smaller model or less data",
      memory.curvature > memory.total / 2
          ? ", or a first-order method or L-BFGS, which need no n x n "
            "matrix"
          : ""));
}

absl::StatusOr<v1::Job> JobManager::Submit(
    const std::string& tenant, const v1::SubmitJobRequest& request) {
  if (shutting_down_) {
    return absl::UnavailableError(
        "the server is shutting down; retry after it restarts");
  }
  if (absl::StartsWith(request.request_id(), "sweep:")) {
    return absl::InvalidArgumentError(
        "request_id: ids that start with 'sweep:' are sparrowd's own (the "
        "trials of sweep jobs); choose another");
  }
  // A retry of an earlier submission returns that job, even when the queue
  // has filled up or the dataset is gone since.
  SPARROW_ASSIGN_OR_RETURN(
      std::optional<v1::Job> earlier,
      store_->FindJobByRequestId(tenant, request.request_id()));
  if (earlier.has_value()) return SameRequest(*earlier, request);
  SPARROW_ASSIGN_OR_RETURN(const int64_t memory,
                           ValidateSubmission(tenant, request.spec()));
  // A shared store counts every replica's queue (outside of mu_: I/O).
  if (shared_) SPARROW_RETURN_IF_ERROR(CheckQueueLimits(tenant));
  std::lock_guard<std::mutex> lock(mu_);
  if (draining_) {
    return absl::UnavailableError(
        "the server is shutting down; retry after it restarts");
  }
  if (!shared_) SPARROW_RETURN_IF_ERROR(CheckQueueLimits(tenant));
  v1::Job job;
  job.set_id(NewJobId());
  *job.mutable_spec() = request.spec();
  job.set_priority(request.priority());
  job.set_request_id(request.request_id());
  // A sweep job itself holds no memory: its trials, jobs of their own, do.
  job.set_memory_estimate_bytes(request.spec().has_sweep() ? 0 : memory);
  bool existed = false;
  SPARROW_ASSIGN_OR_RETURN(v1::Job stored,
                           store_->CreateJob(tenant, job, &existed));
  if (existed) return SameRequest(stored, request);
  hub_->Publish(stored.id(), stored.last_seq());
  spdlog::info("job {} tenant {}: QUEUED (priority {})", stored.id(), tenant,
               stored.priority());
  if (stored.spec().has_sweep() && !shared_) {
    NotifySweep(stored.id());  // the sweep thread starts its trials
    return stored;
  }
  if (shared_) {
    cv_.notify_one();  // a worker of this replica may claim it
    return stored;
  }
  Enqueue(
      {false, stored.priority(), next_order_++, stored.id(), tenant, memory});
  UpdateGauges();
  return stored;
}

absl::Status JobManager::CheckQueueLimits(const std::string& tenant) {
  int64_t queued = 0, of_tenant = 0;
  if (!shared_) {
    queued = static_cast<int64_t>(queue_.size());
    of_tenant = queued_per_tenant_[tenant];
  } else {
    SPARROW_ASSIGN_OR_RETURN(QueueCounts counts, store_->CountQueued(tenant));
    queued = counts.all;
    of_tenant = counts.tenant;
  }
  if (queued >= options_.limits.max_queued_jobs) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "the queue is full: %d jobs wait (sparrowd --max-queued-jobs); retry "
        "later",
        queued));
  }
  if (of_tenant >= options_.limits.max_queued_per_tenant) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "you have %d queued jobs, the most this server allows per tenant "
        "(sparrowd --max-queued-per-tenant); wait for some to start or cancel "
        "some",
        of_tenant));
  }
  return absl::OkStatus();
}

}  // namespace sparrow::server
