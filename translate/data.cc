#include "translate/data.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/data/csv.h"
#include "core/train/model_registry.h"
#include "core/util/option_error.h"
#include "core/util/status_macros.h"
#include "translate/config.h"
#include "translate/images.h"
#include "translate/splits.h"

namespace sparrow::translate {
namespace {

using core::data::RowRange;

// --- Checks of the spec against the header ----------------------------------

// Inputs and outputs are named, and test columns replace them one for one.
absl::Status CheckColumnRoles(const v1::DataSource& src) {
  if (src.inputs().empty()) {
    return absl::InvalidArgumentError(
        "data.inputs is empty; name the input columns, e.g. \"inputs\": "
        "[\"u\"]");
  }
  if (src.outputs().empty()) {
    return absl::InvalidArgumentError(
        "data.outputs is empty; name the output columns, e.g. \"outputs\": "
        "[\"y\"]");
  }
  if (HasTestColumns(src) && (src.test_inputs_size() != src.inputs_size() ||
                              src.test_outputs_size() != src.outputs_size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "data.test_inputs/test_outputs name ", src.test_inputs_size(), " and ",
        src.test_outputs_size(), " columns; they replace data.inputs (",
        src.inputs_size(), ") and data.outputs (", src.outputs_size(),
        ") for the test split, so give the same numbers"));
  }
  return absl::OkStatus();
}

// The file columns the spec reads: inputs, outputs, the trace column (if
// any), then the test columns (if any).
std::vector<std::string> Selectors(const v1::DataSource& src) {
  std::vector<std::string> selectors(src.inputs().begin(), src.inputs().end());
  selectors.insert(selectors.end(), src.outputs().begin(), src.outputs().end());
  if (!src.trace_column().empty()) selectors.push_back(src.trace_column());
  selectors.insert(selectors.end(), src.test_inputs().begin(),
                   src.test_inputs().end());
  selectors.insert(selectors.end(), src.test_outputs().begin(),
                   src.test_outputs().end());
  return selectors;
}

// `selected` holds the header names of the selected columns, in selector
// order. The parser keeps header names unique, so a repeated name means two
// selectors (e.g. "u" and "0") picked the same file column.
absl::Status CheckOneRolePerColumn(const std::vector<std::string>& selected) {
  for (size_t i = 0; i < selected.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (selected[i] == selected[j]) {
        return absl::InvalidArgumentError(absl::StrCat(
            "column '", selected[i],
            "' is selected twice in data.inputs/outputs/trace_column/"
            "test_inputs/test_outputs; a column has one role"));
      }
    }
  }
  return absl::OkStatus();
}

// data.categorical names columns of the file that are inputs, outputs or test
// columns, each once.
absl::Status CheckCategorical(const v1::DataSource& src,
                              const std::vector<std::string>& header) {
  std::vector<std::string> roles(src.inputs().begin(), src.inputs().end());
  roles.insert(roles.end(), src.outputs().begin(), src.outputs().end());
  roles.insert(roles.end(), src.test_inputs().begin(), src.test_inputs().end());
  roles.insert(roles.end(), src.test_outputs().begin(),
               src.test_outputs().end());
  SPARROW_ASSIGN_OR_RETURN(const std::vector<int> role_columns,
                           core::data::ResolveColumns(header, roles));
  std::vector<int> categorical;
  for (int i = 0; i < src.categorical_size(); ++i) {
    const std::string& selector = src.categorical(i);
    const auto column = core::data::ResolveColumns(header, {selector});
    if (!column.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "data.categorical[", i, "] '", selector,
          "' is not a column of the CSV: ", column.status().message()));
    }
    const int c = column->front();
    if (std::find(role_columns.begin(), role_columns.end(), c) ==
        role_columns.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "data.categorical[", i, "] '", selector,
          "' is not among data.inputs/outputs/test_inputs/test_outputs; only "
          "those columns can be categorical"));
    }
    const auto seen = std::find(categorical.begin(), categorical.end(), c);
    if (seen != categorical.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("data.categorical[", i, "] '", selector,
                       "' repeats data.categorical[",
                       seen - categorical.begin(), "]; list each column once"));
    }
    categorical.push_back(c);
  }
  return absl::OkStatus();
}

// The fractions of a random split are in range; a random split is for mlp
// models and replaces the row ranges, and a shuffle seed needs one.
absl::Status CheckRandomSplit(const v1::Split& split, bool mlp) {
  const struct {
    const char* name;
    double value;
  } fractions[] = {{"split.test_fraction", split.test_fraction()},
                   {"split.validation_fraction", split.validation_fraction()}};
  for (const auto& f : fractions) {
    if (!(f.value >= 0 && f.value < 1)) {
      return core::OptionError(f.name, f.value,
                               "in [0, 1) (0 = no random split)");
    }
  }
  if (!IsRandomSplit(split)) {
    if (split.shuffle_seed() != 0) {
      return absl::InvalidArgumentError(
          "split.shuffle_seed is set but split.test_fraction and "
          "split.validation_fraction are 0; the seed only permutes the rows "
          "of a random split");
    }
    return absl::OkStatus();
  }
  const char* field = split.test_fraction() != 0 ? "split.test_fraction"
                                                 : "split.validation_fraction";
  if (!mlp) {
    return absl::InvalidArgumentError(absl::StrCat(
        field,
        " (a random split) is for mlp models only: it would tear the "
        "sequences of a narx_mlp or state_space_rnn model apart; use "
        "split.train/validation/test row ranges"));
  }
  if (!split.train().empty() || !split.validation().empty() ||
      !split.test().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        field,
        " (a random split) cannot be combined with split.train/validation/"
        "test row ranges; give either the fractions or the ranges"));
  }
  return absl::OkStatus();
}

// data.categorical names columns of the file that are inputs, outputs or test
// columns, each once; data.drop_missing and a random split are for mlp
// models, and a random split replaces the row ranges.
absl::Status CheckDataOptions(const v1::JobSpec& spec,
                              const std::vector<std::string>& header) {
  const bool mlp = spec.model().kind_case() == v1::ModelSpec::kMlp;
  SPARROW_RETURN_IF_ERROR(CheckCategorical(spec.data(), header));
  if (spec.data().drop_missing() && !mlp) {
    return absl::InvalidArgumentError(
        "data.drop_missing is for mlp models only: dropping rows from a "
        "sequence would join the samples on either side of the gap into one "
        "trace; fill the missing values or cut the traces around them");
  }
  return CheckRandomSplit(spec.split(), mlp);
}

// --- Stage 1: read the CSV --------------------------------------------------

// The selected columns of the CSV (selector i of Selectors(src) is
// columns[i]), categorical ones one-hot encoded, after checking the spec
// against the header.
absl::StatusOr<core::data::CsvTable> ReadTable(const v1::JobSpec& spec,
                                               absl::string_view csv) {
  const v1::DataSource& src = spec.data();
  const std::string_view buffer(csv.data(), csv.size());
  SPARROW_ASSIGN_OR_RETURN(const std::vector<std::string> header,
                           core::data::ParseCsvHeader(buffer));
  SPARROW_RETURN_IF_ERROR(ValidateDataSpec(spec, header, 0));
  core::data::CsvOptions options;
  options.columns = Selectors(src);
  options.categorical.assign(src.categorical().begin(),
                             src.categorical().end());
  options.keep_missing = src.drop_missing();
  return core::data::ParseCsv(buffer, options);
}

// --- Stage 2: choose the columns --------------------------------------------

// The rows of table.values that hold selector i: all its indicator rows,
// except that a categorical output with two levels is the indicator of the
// second level alone.
void AppendRows(const core::data::CsvColumn& column, bool output,
                std::vector<int>* rows) {
  if (output && column.categorical && column.levels.size() == 2) {
    rows->push_back(column.first + 1);
    return;
  }
  for (int k = 0; k < column.width(); ++k) rows->push_back(column.first + k);
}

// A test column replaces a training column, so it must encode alike.
absl::Status CheckSameEncoding(const core::data::CsvColumn& train,
                               absl::string_view train_field,
                               const core::data::CsvColumn& test,
                               absl::string_view test_field) {
  if (train.categorical == test.categorical && train.levels == test.levels) {
    return absl::OkStatus();
  }
  auto describe = [](const core::data::CsvColumn& c) {
    return c.categorical ? absl::StrCat("categorical with levels ",
                                        absl::StrJoin(c.levels, ", "))
                         : std::string("numeric");
  };
  return absl::InvalidArgumentError(absl::StrCat(
      test_field, " '", test.name, "' replaces ", train_field, " '", train.name,
      "' for the test split, so it must be encoded alike, but '", test.name,
      "' is ", describe(test), " and '", train.name, "' is ", describe(train)));
}

// Rows of table.values per role (model inputs and outputs after one-hot
// encoding), and the values row of the trace column (-1: none).
struct Channels {
  std::vector<int> inputs, outputs, test_inputs, test_outputs;
  int trace = -1;
};

// The test columns (data.test_inputs/test_outputs), checked to encode like
// the columns they replace.
absl::Status ChooseTestColumns(const v1::DataSource& src,
                               const core::data::CsvTable& table,
                               Channels* out) {
  const int n_in = src.inputs_size();
  const int n_out = src.outputs_size();
  const int test_first = n_in + n_out + (src.trace_column().empty() ? 0 : 1);
  for (int i = 0; i < n_in; ++i) {
    const core::data::CsvColumn& test = table.columns[test_first + i];
    SPARROW_RETURN_IF_ERROR(CheckSameEncoding(
        table.columns[i], absl::StrCat("data.inputs[", i, "]"), test,
        absl::StrCat("data.test_inputs[", i, "]")));
    AppendRows(test, false, &out->test_inputs);
  }
  for (int i = 0; i < n_out; ++i) {
    const core::data::CsvColumn& test = table.columns[test_first + n_in + i];
    SPARROW_RETURN_IF_ERROR(CheckSameEncoding(
        table.columns[n_in + i], absl::StrCat("data.outputs[", i, "]"), test,
        absl::StrCat("data.test_outputs[", i, "]")));
    AppendRows(test, true, &out->test_outputs);
  }
  return absl::OkStatus();
}

absl::StatusOr<Channels> ChooseColumns(const v1::DataSource& src,
                                       const core::data::CsvTable& table) {
  const int n_in = src.inputs_size();
  const int n_out = src.outputs_size();
  Channels out;
  for (int i = 0; i < n_in; ++i) {
    AppendRows(table.columns[i], false, &out.inputs);
  }
  for (int i = 0; i < n_out; ++i) {
    AppendRows(table.columns[n_in + i], true, &out.outputs);
  }
  if (HasTestColumns(src)) {
    SPARROW_RETURN_IF_ERROR(ChooseTestColumns(src, table, &out));
  } else {
    out.test_inputs = out.inputs;
    out.test_outputs = out.outputs;
  }
  if (!src.trace_column().empty())
    out.trace = table.columns[n_in + n_out].first;
  return out;
}

// --- Stage 3: drop rows with missing values (data.drop_missing) -------------

struct KeptRows {
  std::vector<int64_t> kept;  // 1-based rows used, in file order
  // complete[r]: 1-based row r has no missing value; empty = all complete.
  std::vector<bool> complete;
};

absl::StatusOr<KeptRows> DropMissing(const v1::DataSource& src,
                                     const core::data::CsvTable& table) {
  const int64_t file_rows = table.num_rows();
  KeptRows out;
  if (!src.drop_missing()) {
    out.kept.resize(file_rows);
    std::iota(out.kept.begin(), out.kept.end(), int64_t{1});
    return out;
  }
  out.kept = core::data::CompleteRows(table);
  if (out.kept.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "data.drop_missing: each of the ", file_rows,
        " rows has a missing value in a selected column, so no row is "
        "left"));
  }
  out.complete.assign(file_rows + 1, false);
  for (const int64_t r : out.kept) out.complete[r] = true;
  return out;
}

// Keeps the rows that `complete` marks (all rows when it is empty).
std::vector<int64_t> KeepComplete(std::vector<int64_t> rows,
                                  const std::vector<bool>& complete) {
  if (complete.empty()) return rows;
  rows.erase(std::remove_if(rows.begin(), rows.end(),
                            [&](int64_t r) { return !complete[r]; }),
             rows.end());
  return rows;
}

// --- Stage 4: build the tables (mlp) or traces (sequence models) -----------

// The rows of each split of an mlp model: a random split of the kept rows, or
// the complete rows of the row ranges.
absl::StatusOr<core::data::RowSplit> MlpRows(const v1::Split& split,
                                             const SplitRows& ranges,
                                             const KeptRows& rows) {
  core::data::RowSplit out;
  if (IsRandomSplit(split)) {
    SPARROW_ASSIGN_OR_RETURN(
        out, core::data::RandomSplit(rows.kept, split.validation_fraction(),
                                     split.test_fraction(),
                                     split.shuffle_seed(), "split"));
    const double fraction = split.train_fraction();
    if (fraction > 0 && fraction < 1) {
      out.train.resize(std::max<size_t>(
          1, static_cast<size_t>(std::llround(
                 fraction * static_cast<double>(out.train.size())))));
    }
    return out;
  }
  out.train = KeepComplete(core::data::RowsOf(ranges.train), rows.complete);
  out.validation =
      KeepComplete(core::data::RowsOf(ranges.validation), rows.complete);
  out.test = KeepComplete(core::data::RowsOf(ranges.test), rows.complete);
  const struct {
    const char* name;
    bool given;
    const std::vector<int64_t>* rows;
  } parts[] = {
      {"split.train", true, &out.train},
      {"split.validation", !ranges.validation.empty(), &out.validation},
      {"split.test", !ranges.test.empty(), &out.test}};
  for (const auto& part : parts) {
    if (part.given && part.rows->empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(part.name,
                       ": every row of its ranges has a missing value, so "
                       "data.drop_missing left none"));
    }
  }
  return out;
}

absl::Status BuildTables(const core::data::CsvTable& table, const Channels& ch,
                         const core::data::RowSplit& rows,
                         core::TrainData* data) {
  SPARROW_ASSIGN_OR_RETURN(
      data->train_table,
      core::data::MakeTableFromRows(table, ch.inputs, ch.outputs, rows.train));
  if (!rows.validation.empty()) {
    SPARROW_ASSIGN_OR_RETURN(
        data->validation_table,
        core::data::MakeTableFromRows(table, ch.inputs, ch.outputs,
                                      rows.validation));
  }
  if (!rows.test.empty()) {
    SPARROW_ASSIGN_OR_RETURN(data->test_table, core::data::MakeTableFromRows(
                                                   table, ch.test_inputs,
                                                   ch.test_outputs, rows.test));
  }
  return absl::OkStatus();
}

// A NARX model needs every trace longer than its largest lag.
// `train_name`: what the messages call the training split's traces ("a
// trace of the training split"; "the file" for a record file, whose rows all
// load as the training split).
absl::Status CheckTraceLengths(const core::TrainData& data, int lag,
                               absl::string_view train_name) {
  for (const auto* part :
       {&data.train_seq, &data.validation_seq, &data.test_seq}) {
    for (size_t t = 0; t < part->traces.size(); ++t) {
      if (part->traces[t].length() <= lag) {
        return absl::InvalidArgumentError(
            absl::StrCat("model.narx_mlp: lag ", lag,
                         " is longer than the data: a trace of ",
                         part == &data.train_seq  ? train_name
                         : part == &data.test_seq ? "the test split"
                                                  : "the validation split",
                         " has only ", part->traces[t].length(), " samples"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status BuildSequences(const v1::DataSource& src,
                            const core::data::CsvTable& table,
                            const Channels& ch, const SplitRows& ranges,
                            core::TrainData* data) {
  const std::vector<int64_t> starts(src.trace_starts().begin(),
                                    src.trace_starts().end());
  auto make = [&](const std::vector<RowRange>& r, bool test) {
    return core::data::MakeSequences(table, test ? ch.test_inputs : ch.inputs,
                                     test ? ch.test_outputs : ch.outputs, r,
                                     ch.trace, starts);
  };
  SPARROW_ASSIGN_OR_RETURN(data->train_seq, make(ranges.train, false));
  if (!ranges.validation.empty()) {
    SPARROW_ASSIGN_OR_RETURN(data->validation_seq,
                             make(ranges.validation, false));
  }
  if (!ranges.test.empty()) {
    SPARROW_ASSIGN_OR_RETURN(data->test_seq, make(ranges.test, true));
  }
  return absl::OkStatus();
}

void Summarize(const core::TrainData& data, bool mlp, int64_t file_rows,
               const KeptRows& rows, const Channels& ch, DataSummary* summary) {
  if (mlp) {
    summary->train_rows = data.train_table.num_samples();
    summary->validation_rows = data.validation_table.num_samples();
    summary->test_rows = data.test_table.num_samples();
  } else {
    summary->train_rows = data.train_seq.total_samples();
    summary->validation_rows = data.validation_seq.total_samples();
    summary->test_rows = data.test_seq.total_samples();
  }
  summary->file_rows = file_rows;
  summary->dropped_rows = file_rows - static_cast<int64_t>(rows.kept.size());
  summary->inputs = static_cast<int>(ch.inputs.size());
  summary->outputs = static_cast<int>(ch.outputs.size());
}

// --- Image datasets --------------------------------------------------------

// Column selectors have no meaning for images: a sample's inputs are its
// pixels and its output the label.
absl::Status CheckNoColumns(const v1::DataSource& src) {
  const struct {
    const char* name;
    bool set;
  } fields[] = {{"data.inputs", !src.inputs().empty()},
                {"data.outputs", !src.outputs().empty()},
                {"data.trace_column", !src.trace_column().empty()},
                {"data.trace_starts", !src.trace_starts().empty()},
                {"data.test_inputs", !src.test_inputs().empty()},
                {"data.test_outputs", !src.test_outputs().empty()},
                {"data.categorical", !src.categorical().empty()},
                {"data.drop_missing", src.drop_missing()}};
  for (const auto& f : fields) {
    if (f.set) {
      return absl::InvalidArgumentError(absl::StrCat(
          f.name,
          " is set but the data are images, whose inputs are always the "
          "pixels and whose output is the label; remove ",
          f.name));
    }
  }
  return absl::OkStatus();
}

// Images are independent samples: a sequence model cannot train on them.
absl::Status CheckTableModel(const core::TrainConfig& config) {
  const core::ModelFamily& family = core::FamilyOf(config.model.kind);
  if (!family.sequence()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "model.", family.name(),
      " is a sequence model but the data are images (independent samples); "
      "use an mlp or cnn model"));
}

absl::Status CheckImageSpec(const v1::JobSpec& spec,
                            const core::TrainConfig& config, int64_t images) {
  SPARROW_RETURN_IF_ERROR(CheckNoColumns(spec.data()));
  SPARROW_RETURN_IF_ERROR(CheckTableModel(config));
  SPARROW_RETURN_IF_ERROR(CheckRandomSplit(spec.split(), /*mlp=*/true));
  if (images <= 0) return absl::OkStatus();
  return CutSplits(spec, images).status();
}

absl::Status BuildImageTables(const core::data::ImageSet& images,
                              const core::data::RowSplit& rows,
                              core::TrainData* data) {
  SPARROW_ASSIGN_OR_RETURN(data->train_table,
                           core::data::MakeImageTable(images, rows.train));
  if (!rows.validation.empty()) {
    SPARROW_ASSIGN_OR_RETURN(
        data->validation_table,
        core::data::MakeImageTable(images, rows.validation));
  }
  if (!rows.test.empty()) {
    SPARROW_ASSIGN_OR_RETURN(data->test_table,
                             core::data::MakeImageTable(images, rows.test));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<core::TrainData> LoadTrainData(const v1::JobSpec& spec,
                                              const core::TrainConfig& config,
                                              absl::string_view csv,
                                              DataSummary* summary) {
  return LoadTrainDataAs(spec, config, csv, "the training split", summary);
}

absl::StatusOr<core::TrainData> LoadTrainDataAs(const v1::JobSpec& spec,
                                                const core::TrainConfig& config,
                                                absl::string_view csv,
                                                absl::string_view train_name,
                                                DataSummary* summary) {
  if (spec.has_validation_data() || spec.has_test_data()) {
    return absl::FailedPreconditionError(
        "the spec reads validation_data / test_data from their own files, "
        "but only data's was given (LoadTrainData with DataFiles)");
  }
  if (IsImageDataset(csv)) {
    SPARROW_ASSIGN_OR_RETURN(const core::data::ImageSet images,
                             ParseImageDataset(csv));
    return LoadImageTrainData(spec, config, images, summary);
  }
  if (spec.data().has_images()) {
    return absl::InvalidArgumentError(
        "data.images names IDX files, but the data given are not an image "
        "dataset (they do not start with the line SPARROW-IMAGES 1); upload "
        "the files with sparrow upload --images FILE --labels FILE");
  }
  SPARROW_ASSIGN_OR_RETURN(const core::data::CsvTable table,
                           ReadTable(spec, csv));
  SPARROW_ASSIGN_OR_RETURN(const Channels channels,
                           ChooseColumns(spec.data(), table));
  SPARROW_ASSIGN_OR_RETURN(const KeptRows rows,
                           DropMissing(spec.data(), table));
  const int64_t file_rows = table.num_rows();
  SPARROW_ASSIGN_OR_RETURN(const SplitRows ranges, CutSplits(spec, file_rows));
  core::TrainData data;
  const bool mlp = !core::FamilyOf(config.model.kind).sequence();
  if (mlp) {
    SPARROW_ASSIGN_OR_RETURN(const core::data::RowSplit split_rows,
                             MlpRows(spec.split(), ranges, rows));
    SPARROW_RETURN_IF_ERROR(BuildTables(table, channels, split_rows, &data));
  } else {
    SPARROW_RETURN_IF_ERROR(
        BuildSequences(spec.data(), table, channels, ranges, &data));
    if (const auto* narx = std::get_if<core::NarxMlpKind>(&config.model.kind)) {
      SPARROW_RETURN_IF_ERROR(
          CheckTraceLengths(data, narx->lags.max_lag(), train_name));
    }
  }
  if (summary != nullptr) {
    Summarize(data, mlp, file_rows, rows, channels, summary);
  }
  return data;
}

absl::StatusOr<core::TrainData> LoadImageTrainData(
    const v1::JobSpec& spec, const core::TrainConfig& config,
    const core::data::ImageSet& images, DataSummary* summary) {
  SPARROW_RETURN_IF_ERROR(CheckRecordFiles(spec));
  const int64_t n = images.size();
  SPARROW_RETURN_IF_ERROR(CheckImageSpec(spec, config, n));
  if (n == 0) {
    return absl::InvalidArgumentError(
        "the image dataset holds no images; give files with at least one");
  }
  SPARROW_ASSIGN_OR_RETURN(const SplitRows ranges, CutSplits(spec, n));
  KeptRows all;
  all.kept.resize(n);
  std::iota(all.kept.begin(), all.kept.end(), int64_t{1});
  SPARROW_ASSIGN_OR_RETURN(const core::data::RowSplit rows,
                           MlpRows(spec.split(), ranges, all));
  core::TrainData data;
  SPARROW_RETURN_IF_ERROR(BuildImageTables(images, rows, &data));
  if (summary != nullptr) {
    summary->file_rows = n;
    summary->dropped_rows = 0;
    summary->train_rows = data.train_table.num_samples();
    summary->validation_rows = data.validation_table.num_samples();
    summary->test_rows = data.test_table.num_samples();
    summary->inputs = static_cast<int>(images.image_size());
    summary->outputs = 1;
  }
  return data;
}

absl::Status ValidateImageDataSpec(const v1::JobSpec& spec, int64_t images) {
  SPARROW_RETURN_IF_ERROR(CheckRecordFiles(spec));
  SPARROW_ASSIGN_OR_RETURN(const core::TrainConfig config, ToTrainConfig(spec));
  return CheckImageSpec(spec, config, images);
}

absl::Status ValidateDataSpec(const v1::JobSpec& spec,
                              const std::vector<std::string>& header,
                              int64_t rows) {
  SPARROW_RETURN_IF_ERROR(CheckRecordFiles(spec));
  if (spec.data().has_images()) return ValidateImageDataSpec(spec, rows);
  SPARROW_RETURN_IF_ERROR(CheckColumnRoles(spec.data()));
  SPARROW_ASSIGN_OR_RETURN(
      std::vector<int> columns,
      core::data::ResolveColumns(header, Selectors(spec.data())));
  std::vector<std::string> selected;
  for (const int c : columns) selected.push_back(header[c]);
  SPARROW_RETURN_IF_ERROR(CheckOneRolePerColumn(selected));
  SPARROW_RETURN_IF_ERROR(CheckDataOptions(spec, header));
  if (rows <= 0) return absl::OkStatus();
  return CutSplits(spec, rows).status();
}

}  // namespace sparrow::translate
