// Validation and test records in their own files (JobSpec.validation_data,
// test_data): each file is read as if it were data's with every row in the
// training split, and its training split becomes the job's validation or test
// split.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/train/model_registry.h"
#include "core/util/status_macros.h"
#include "translate/data.h"

namespace sparrow::translate {
namespace {

struct Record {
  const v1::RecordFile* file;
  const char* field;  // "validation_data" or "test_data"
  bool test;
};

std::vector<Record> Records(const v1::JobSpec& spec) {
  std::vector<Record> out;
  if (spec.has_validation_data()) {
    out.push_back({&spec.validation_data(), "validation_data", false});
  }
  if (spec.has_test_data()) {
    out.push_back({&spec.test_data(), "test_data", true});
  }
  return out;
}

bool OwnColumns(const v1::RecordFile& r) {
  return !r.inputs().empty() || !r.outputs().empty();
}

// The spec that reads the record's file with every row in the training split:
// data's column selectors (or the record's own), categorical columns and
// drop_missing, the record's trace starts, and the model (whose kind decides
// tables or traces).
v1::JobSpec RecordSpec(const v1::JobSpec& spec, const v1::RecordFile& r) {
  v1::JobSpec out;
  *out.mutable_model() = spec.model();
  const v1::DataSource& src = spec.data();
  v1::DataSource& d = *out.mutable_data();
  *d.mutable_inputs() = r.inputs().empty() ? src.inputs() : r.inputs();
  *d.mutable_outputs() = r.outputs().empty() ? src.outputs() : r.outputs();
  // Without own selectors the record's columns are data's inputs and outputs,
  // so the categorical ones among them keep their role (those naming data's
  // test columns have no column here).
  for (const std::string& c : src.categorical()) {
    const bool selected = std::find(d.inputs().begin(), d.inputs().end(), c) !=
                              d.inputs().end() ||
                          std::find(d.outputs().begin(), d.outputs().end(),
                                    c) != d.outputs().end();
    if (selected) d.add_categorical(c);
  }
  d.set_drop_missing(src.drop_missing());
  // data's trace column cuts the record's file alike (it must have it).
  d.set_trace_column(src.trace_column());
  *d.mutable_trace_starts() = r.trace_starts();
  return out;
}

absl::Status Prefixed(absl::string_view field, const absl::Status& s) {
  if (s.ok()) return s;
  return absl::Status(s.code(),
                      absl::StrCat(field, " (its own file): ", s.message()));
}

// The record's channels are the ones the model is trained on: the same names
// (categorical levels included) with data's selectors, the same counts with
// its own.
absl::Status CheckSameChannels(const std::vector<std::string>& want_in,
                               const std::vector<std::string>& want_out,
                               const std::vector<std::string>& got_in,
                               const std::vector<std::string>& got_out,
                               const Record& r) {
  const bool own = OwnColumns(*r.file);
  const bool same =
      own ? got_in.size() == want_in.size() && got_out.size() == want_out.size()
          : got_in == want_in && got_out == want_out;
  if (same) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      r.field, "'s file gives the model inputs [", absl::StrJoin(got_in, ", "),
      "] and outputs [", absl::StrJoin(got_out, ", "), "], but data's gives [",
      absl::StrJoin(want_in, ", "), "] and [", absl::StrJoin(want_out, ", "),
      "]; a categorical column needs the same levels in every file (levels "
      "are read from each file's rows)"));
}

absl::Status CheckOneRecord(const v1::JobSpec& spec, const Record& r) {
  const v1::RecordFile& f = *r.file;
  if (spec.data().has_images()) {
    return absl::InvalidArgumentError(absl::StrCat(
        r.field,
        " is for CSV data; an image dataset's splits are row ranges of its "
        "images (split.validation / split.test)"));
  }
  if (f.source_case() == v1::RecordFile::SOURCE_NOT_SET) {
    return absl::InvalidArgumentError(
        absl::StrCat(r.field, " has no file: set ", r.field, ".csv_path (",
                     r.field, ".dataset_id on sparrowd)"));
  }
  const struct {
    const char* name;
    int got, want;
  } counts[] = {{"inputs", f.inputs_size(), spec.data().inputs_size()},
                {"outputs", f.outputs_size(), spec.data().outputs_size()}};
  for (const auto& c : counts) {
    if (c.got != 0 && c.got != c.want) {
      return absl::InvalidArgumentError(absl::StrCat(
          r.field, ".", c.name, " names ", c.got, " columns but data.", c.name,
          " ", c.want, "; give the same number (or none, to use data's)"));
    }
  }
  if (OwnColumns(f) && !spec.data().categorical().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        r.field,
        " names its own columns while data.categorical is set; name the "
        "columns alike in both files and leave ",
        r.field, ".inputs/outputs empty"));
  }
  const v1::Split& split = spec.split();
  const bool ranges =
      r.test ? !split.test().empty() : !split.validation().empty();
  const double fraction =
      r.test ? split.test_fraction() : split.validation_fraction();
  const char* what = r.test ? "test" : "validation";
  if (ranges || fraction != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(r.field, " and split.", what, ranges ? "" : "_fraction",
                     " both give the ", what, " split; keep one"));
  }
  if (r.test && (!spec.data().test_inputs().empty() ||
                 !spec.data().test_outputs().empty())) {
    return absl::InvalidArgumentError(
        "test_data and data.test_inputs/test_outputs both give the test "
        "split; keep one");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckRecordFiles(const v1::JobSpec& spec) {
  for (const Record& r : Records(spec)) {
    SPARROW_RETURN_IF_ERROR(CheckOneRecord(spec, r));
  }
  return absl::OkStatus();
}

absl::Status ValidateRecordFile(const v1::JobSpec& spec,
                                absl::string_view field,
                                const std::vector<std::string>& header) {
  for (const Record& r : Records(spec)) {
    if (field != r.field) continue;
    SPARROW_RETURN_IF_ERROR(CheckOneRecord(spec, r));
    return Prefixed(field,
                    ValidateDataSpec(RecordSpec(spec, *r.file), header, 0));
  }
  return absl::OkStatus();
}

absl::StatusOr<core::TrainData> LoadTrainData(const v1::JobSpec& spec,
                                              const core::TrainConfig& config,
                                              const DataFiles& files,
                                              DataSummary* summary) {
  SPARROW_RETURN_IF_ERROR(CheckRecordFiles(spec));
  v1::JobSpec main = spec;
  main.clear_validation_data();
  main.clear_test_data();
  SPARROW_ASSIGN_OR_RETURN(core::TrainData data,
                           LoadTrainData(main, config, files.data, summary));
  const bool table = !core::FamilyOf(config.model.kind).sequence();
  for (const Record& r : Records(spec)) {
    auto part = LoadTrainData(RecordSpec(spec, *r.file), config,
                              r.test ? files.test : files.validation);
    if (!part.ok()) return Prefixed(r.field, part.status());
    if (table) {
      SPARROW_RETURN_IF_ERROR(CheckSameChannels(
          data.train_table.input_names, data.train_table.output_names,
          part->train_table.input_names, part->train_table.output_names, r));
      (r.test ? data.test_table : data.validation_table) =
          std::move(part->train_table);
    } else {
      SPARROW_RETURN_IF_ERROR(CheckSameChannels(
          data.train_seq.input_names, data.train_seq.output_names,
          part->train_seq.input_names, part->train_seq.output_names, r));
      (r.test ? data.test_seq : data.validation_seq) =
          std::move(part->train_seq);
    }
  }
  if (summary != nullptr) {
    summary->validation_rows = table ? data.validation_table.num_samples()
                                     : data.validation_seq.total_samples();
    summary->test_rows =
        table ? data.test_table.num_samples() : data.test_seq.total_samples();
  }
  return data;
}

}  // namespace sparrow::translate
