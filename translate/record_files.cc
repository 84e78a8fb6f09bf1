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
#include "core/data/csv.h"
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

// What one split reads: a file and the columns taken from it. Two splits
// that read the same columns of the same file share rows.
struct Reading {
  std::string name;  // "validation_data", "data's validation rows", ...
  // The file as the spec names it (a path or a dataset id), and its bytes
  // once loaded (empty before).
  std::string file;
  absl::string_view bytes;
  std::vector<std::string> columns;  // inputs, then outputs
  size_t num_inputs = 0;
};

std::string FileOf(const v1::RecordFile& r) {
  if (!r.csv_path().empty()) return absl::StrCat("csv_path ", r.csv_path());
  if (!r.dataset_id().empty()) {
    return absl::StrCat("dataset_id ", r.dataset_id());
  }
  return "";
}

std::string FileOf(const v1::DataSource& d) {
  if (!d.csv_path().empty()) return absl::StrCat("csv_path ", d.csv_path());
  if (!d.dataset_id().empty()) {
    return absl::StrCat("dataset_id ", d.dataset_id());
  }
  return "";
}

std::vector<std::string> Columns(
    const google::protobuf::RepeatedPtrField<std::string>& in,
    const google::protobuf::RepeatedPtrField<std::string>& out) {
  std::vector<std::string> c(in.begin(), in.end());
  c.insert(c.end(), out.begin(), out.end());
  return c;
}

Reading RecordReading(const v1::JobSpec& spec, const Record& r,
                      absl::string_view bytes) {
  const v1::JobSpec read = RecordSpec(spec, *r.file);
  return {r.field, FileOf(*r.file), bytes,
          Columns(read.data().inputs(), read.data().outputs()),
          static_cast<size_t>(read.data().inputs_size())};
}

// The same file: the same bytes when both are loaded, else the same path or
// dataset id (a dataset id is its content's hash).
bool SameFile(const Reading& a, const Reading& b) {
  if (!a.bytes.empty() && !b.bytes.empty()) return a.bytes == b.bytes;
  return !a.file.empty() && a.file == b.file;
}

// The output columns a split reads, as 0-based indices of its file once the
// file is loaded (so that "2" and the name of column 2 are one column), else
// as the spec writes them.
std::vector<std::string> OutputColumns(const Reading& r) {
  std::vector<std::string> out(r.columns.begin() + r.num_inputs,
                               r.columns.end());
  if (r.bytes.empty()) return out;
  const auto header = core::data::ParseCsvHeader(
      std::string_view(r.bytes.data(), r.bytes.size()));
  if (!header.ok()) return out;  // the load reports it
  const auto index = core::data::ResolveColumns(*header, out);
  if (!index.ok()) return out;
  std::vector<std::string> resolved;
  for (int i : *index) resolved.push_back(absl::StrCat(i));
  return resolved;
}

// Two splits of one file whose targets are the same columns share rows,
// whatever inputs they read beside them.
absl::Status Shared(const Reading& a, const Reading& b, absl::string_view why) {
  if (!SameFile(a, b) || OutputColumns(a) != OutputColumns(b)) {
    return absl::OkStatus();
  }
  const std::string file =
      a.file == b.file
          ? b.file
          : absl::StrCat(a.file, " and ", b.file, " hold the same bytes");
  auto outputs = [](const Reading& r) {
    return absl::StrJoin(r.columns.begin() + r.num_inputs, r.columns.end(),
                         ", ");
  };
  const std::string what =
      a.columns == b.columns
          ? absl::StrCat("the same columns (", absl::StrJoin(a.columns, ", "),
                         ")")
          : absl::StrCat("the same output columns (", outputs(a), " and ",
                         outputs(b), ")");
  return absl::InvalidArgumentError(
      absl::StrCat(a.name, " and ", b.name, " read ", what,
                   " of the same file (", file, "): ", why));
}

// Held-out rows are never training rows, and validation rows are never test
// rows, also when a split comes from its own file: a record file that reads
// the same columns of the same file as another split shares its rows (a
// record's split is all of its file's rows). Row ranges within data's file
// are CutSplits' to check.
absl::Status CheckRecordsDisjoint(const v1::JobSpec& spec,
                                  const DataFiles* files) {
  const v1::DataSource& src = spec.data();
  const std::vector<std::string> data_columns =
      Columns(src.inputs(), src.outputs());
  auto bytes = [&](absl::string_view DataFiles::*field) {
    return files == nullptr ? absl::string_view() : files->*field;
  };
  const Reading train{"data (the training rows)", FileOf(src),
                      bytes(&DataFiles::data), data_columns,
                      static_cast<size_t>(src.inputs_size())};
  constexpr absl::string_view kChooses =
      "the rows that choose the model (validation) would be the rows that "
      "judge it (test); take the validation rows from another file, or from "
      "the training file's rows (split.validation)";
  constexpr absl::string_view kTrains =
      "held-out rows would be training rows; give the held-out records in "
      "another file, or cut the training file with split.validation / "
      "split.test";
  std::vector<Reading> records;  // validation_data, then test_data
  for (const Record& r : Records(spec)) {
    records.push_back(RecordReading(
        spec, r, bytes(r.test ? &DataFiles::test : &DataFiles::validation)));
    SPARROW_RETURN_IF_ERROR(Shared(records.back(), train, kTrains));
  }
  // A record that reads data's file and columns is refused above, so only
  // the two records can still share rows.
  if (records.size() == 2) return Shared(records[0], records[1], kChooses);
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckRecordFiles(const v1::JobSpec& spec) {
  for (const Record& r : Records(spec)) {
    SPARROW_RETURN_IF_ERROR(CheckOneRecord(spec, r));
  }
  return CheckRecordsDisjoint(spec, nullptr);
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
  SPARROW_RETURN_IF_ERROR(CheckRecordsDisjoint(spec, &files));
  v1::JobSpec main = spec;
  main.clear_validation_data();
  main.clear_test_data();
  SPARROW_ASSIGN_OR_RETURN(core::TrainData data,
                           LoadTrainData(main, config, files.data, summary));
  const bool table = !core::FamilyOf(config.model.kind).sequence();
  for (const Record& r : Records(spec)) {
    auto part =
        LoadTrainDataAs(RecordSpec(spec, *r.file), config,
                        r.test ? files.test : files.validation, "the file");
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
