#include "translate/predict.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string_view>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/data/csv.h"
#include "core/metrics/metrics.h"
#include "core/train/model.h"
#include "core/train/model_registry.h"
#include "core/util/option_error.h"
#include "core/util/status_macros.h"
#include "translate/model.h"

namespace sparrow::translate {

namespace {

// Turns the trailing comma of a CSV line into its line end.
void EndLine(std::string* text) {
  if (!text->empty() && text->back() == ',') {
    text->back() = '\n';
  } else {
    text->push_back('\n');
  }
}

// Where each of the model's channel names is read from: the CSV columns to
// parse (options) and, per name, its column there and its level, if any.
struct ChannelPlan {
  core::data::CsvOptions options;
  // selector[i]: the selector of names[i]; level[i]: its level, if any.
  std::vector<int> selector;
  std::vector<std::optional<std::string>> level;
};

ChannelPlan PlanChannels(const std::vector<std::string>& header,
                         const std::vector<std::string>& names) {
  auto in_header = [&](std::string_view name) {
    return std::find(header.begin(), header.end(), name) != header.end();
  };
  ChannelPlan plan;
  plan.selector.resize(names.size());
  plan.level.resize(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    std::string column = name;
    if (!in_header(name)) {
      for (size_t eq = name.find('='); eq != std::string::npos;
           eq = name.find('=', eq + 1)) {
        if (in_header(name.substr(0, eq))) {
          column = name.substr(0, eq);
          plan.level[i] = name.substr(eq + 1);
          break;
        }
      }
    }
    // An unknown name stays a selector, for ParseCsv's error listing the
    // columns.
    auto& selectors = plan.options.columns;
    const auto at = std::find(selectors.begin(), selectors.end(), column);
    const bool categorical = plan.level[i].has_value();
    if (!categorical || at == selectors.end()) {
      plan.selector[i] = static_cast<int>(selectors.size());
      selectors.push_back(column);
      if (categorical) plan.options.categorical.push_back(column);
    } else {
      plan.selector[i] = static_cast<int>(at - selectors.begin());
    }
  }
  return plan;
}

// Refuses a level of a categorical column that the model does not name, when
// the model names two or more levels of it.
absl::Status CheckKnownLevels(const ChannelPlan& plan,
                              const core::data::CsvTable& table) {
  for (const std::string& name : plan.options.categorical) {
    std::vector<std::string> known;
    for (size_t i = 0; i < plan.level.size(); ++i) {
      if (plan.level[i].has_value() &&
          plan.options.columns[plan.selector[i]] == name) {
        known.push_back(*plan.level[i]);
      }
    }
    if (known.size() < 2) continue;
    const auto& column = *std::find_if(
        table.columns.begin(), table.columns.end(),
        [&](const core::data::CsvColumn& c) { return c.name == name; });
    for (const std::string& l : column.levels) {
      if (std::find(known.begin(), known.end(), l) == known.end()) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "column '%s' has the value '%s', which the model was not trained "
            "on; it knows %s=%s",
            name, l, name,
            absl::StrJoin(known, absl::StrCat(", ", name, "="))));
      }
    }
  }
  return absl::OkStatus();
}

// Reads the model's channels from `csv`, one row of the result per name. A
// name that is a header column is read as a number. Otherwise a name
// "<column>=<level>" for a header column is the 0/1 indicator of that level
// of the text column <column>: how LoadTrainData one-hot encodes
// data.categorical. A level the CSV lacks is all 0; a level the model lacks is
// an error, unless the model names a single level of the column (a two-level
// output is the indicator of its second level, so any other value is 0).
absl::StatusOr<Eigen::MatrixXd> ReadChannels(
    std::string_view csv, const std::vector<std::string>& names) {
  SPARROW_ASSIGN_OR_RETURN(const std::vector<std::string> header,
                           core::data::ParseCsvHeader(csv));
  const ChannelPlan plan = PlanChannels(header, names);
  // ParseCsv rejects NaN, Inf and missing values, naming the line and column.
  SPARROW_ASSIGN_OR_RETURN(const core::data::CsvTable table,
                           core::data::ParseCsv(csv, plan.options));
  Eigen::MatrixXd values = Eigen::MatrixXd::Zero(
      static_cast<Eigen::Index>(names.size()), table.num_rows());
  for (size_t i = 0; i < names.size(); ++i) {
    const core::data::CsvColumn& column = table.columns[plan.selector[i]];
    if (!plan.level[i].has_value()) {
      values.row(i) = table.values.row(column.first);
      continue;
    }
    const auto k =
        std::find(column.levels.begin(), column.levels.end(), *plan.level[i]);
    if (k != column.levels.end()) {
      values.row(i) =
          table.values.row(column.first + (k - column.levels.begin()));
    }
  }
  SPARROW_RETURN_IF_ERROR(CheckKnownLevels(plan, table));
  return values;
}

// Columnwise softmax, shifted by each column's maximum against overflow.
Eigen::MatrixXd Softmax(const Eigen::MatrixXd& logits) {
  Eigen::MatrixXd p(logits.rows(), logits.cols());
  for (Eigen::Index j = 0; j < logits.cols(); ++j) {
    const Eigen::VectorXd e =
        (logits.col(j).array() - logits.col(j).maxCoeff()).exp();
    p.col(j) = e / e.sum();
  }
  return p;
}

absl::Status CheckImageModel(const core::Model& m,
                             const core::data::ImageSet& images) {
  if (!m.loss.OneHotTargets()) {
    return absl::InvalidArgumentError(
        "image predictions report classes, but this model was not trained "
        "as a classifier (loss.kind = softmax_cross_entropy, or LOSS_MSE "
        "with loss.one_hot_targets); predict on a CSV of its inputs instead");
  }
  if (images.size() > kMaxPredictImages) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%d images, more than %d, the most one prediction takes "
        "(translate::kMaxPredictImages); split them over several requests",
        images.size(), kMaxPredictImages));
  }
  if (images.image_size() != m.input_scaling.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the model takes %d inputs but the images have %d x %d x %d = %d "
        "values (channels x rows x columns); use images of the training "
        "data's shape",
        m.input_scaling.size(), images.channels, images.height, images.width,
        images.image_size()));
  }
  if (const auto* cnn = std::get_if<core::CnnKind>(&m.config.kind);
      cnn != nullptr &&
      (cnn->channels != images.channels || cnn->height != images.height ||
       cnn->width != images.width)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the model takes %d x %d x %d images but these are %d x %d x %d "
        "(channels x rows x columns); use images of the training data's "
        "shape",
        cnn->channels, cnn->height, cnn->width, images.channels, images.height,
        images.width));
  }
  return absl::OkStatus();
}

}  // namespace

std::string PredictOutput::Csv() const {
  std::string text;
  for (const auto& n : output_names) text += n + "_pred,";
  if (stddev.size() > 0) {
    for (const auto& n : output_names) text += n + "_lower95,";
    for (const auto& n : output_names) text += n + "_upper95,";
  }
  EndLine(&text);
  for (Eigen::Index t = 0; t < y.cols(); ++t) {
    for (Eigen::Index i = 0; i < y.rows(); ++i) {
      absl::StrAppendFormat(&text, "%.17g,", y(i, t));
    }
    for (Eigen::Index i = 0; i < stddev.rows(); ++i) {
      absl::StrAppendFormat(&text, "%.17g,", y(i, t) - 1.96 * stddev(i, t));
    }
    for (Eigen::Index i = 0; i < stddev.rows(); ++i) {
      absl::StrAppendFormat(&text, "%.17g,", y(i, t) + 1.96 * stddev(i, t));
    }
    EndLine(&text);
  }
  return text;
}

int64_t EstimateCsvBytes(int64_t csv_rows, int64_t values_per_row) {
  constexpr int64_t kBytesPerValue = 19;
  return (csv_rows + 1) * values_per_row * kBytesPerValue;  // + the header
}

int64_t CountCsvDataRows(absl::string_view csv) {
  const int64_t lines = std::count(csv.begin(), csv.end(), '\n') +
                        (!csv.empty() && csv.back() != '\n' ? 1 : 0);
  return std::max<int64_t>(0, lines - 1);
}

namespace {

// Whether the CSV's header has every one of `names`.
bool HasColumns(std::string_view csv, const std::vector<std::string>& names) {
  absl::StatusOr<std::vector<std::string>> header =
      core::data::ParseCsvHeader(csv);
  if (!header.ok()) return false;
  for (const std::string& name : names) {
    if (std::find(header->begin(), header->end(), name) == header->end()) {
      return false;
    }
  }
  return true;
}

// Fills the fit of the predicted samples against the measured outputs y.
void AddFit(const Eigen::MatrixXd& y, int first, PredictOutput* out) {
  const Eigen::Index n = y.cols() - first;
  const double bfr = core::Bfr(y.rightCols(n), out->y.rightCols(n));
  if (std::isfinite(bfr)) {
    out->bfr = bfr;
    out->rmse = core::Rmse(y.rightCols(n), out->y.rightCols(n));
  }
}

// Simulation of a state_space_rnn from x0 = 0 or a given x0: the inputs
// alone, and the outputs for the fit when the CSV has them.
absl::StatusOr<PredictOutput> PredictFromState(const core::Model& m,
                                               std::string_view csv,
                                               const PredictOptions& options) {
  const auto* rnn = std::get_if<core::StateSpaceRnnKind>(&m.config.kind);
  if (rnn == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a zero or given x0 is for state_space_rnn models; this is a ",
        core::FamilyOf(m.config.kind).name(), " model"));
  }
  if (options.one_step || options.intervals) {
    return absl::InvalidArgumentError(
        "a zero or given x0 starts a free-run simulation; leave out one-step "
        "prediction and intervals");
  }
  Eigen::VectorXd x0 = Eigen::VectorXd::Zero(rnn->rnn.nx);
  if (options.initial_state == PredictOptions::InitialState::kGiven) {
    x0 = Eigen::Map<const Eigen::VectorXd>(
        options.x0.data(), static_cast<Eigen::Index>(options.x0.size()));
  }
  const bool fit = HasColumns(csv, m.output_names);
  std::vector<std::string> columns = m.input_names;
  if (fit) {
    columns.insert(columns.end(), m.output_names.begin(), m.output_names.end());
  }
  SPARROW_ASSIGN_OR_RETURN(const Eigen::MatrixXd channels,
                           ReadChannels(csv, columns));
  const auto nu = static_cast<Eigen::Index>(m.input_names.size());
  SPARROW_ASSIGN_OR_RETURN(
      core::SequencePrediction p,
      core::SimulateFromState(m, channels.topRows(nu), x0));
  PredictOutput out;
  out.output_names = m.output_names;
  out.y = std::move(p.y);
  out.x0.assign(p.x0.data(), p.x0.data() + p.x0.size());
  if (fit) AddFit(channels.bottomRows(channels.rows() - nu), 0, &out);
  return out;
}

// Refuses x0_samples > 0 where no initial state is estimated: it would be
// ignored without a word.
absl::Status CheckX0Samples(const core::Model& m, int x0_samples) {
  if (x0_samples == 0) return absl::OkStatus();
  const auto* rnn = std::get_if<core::StateSpaceRnnKind>(&m.config.kind);
  if (rnn != nullptr && rnn->rnn.initial_state == core::InitialState::kFree) {
    return absl::OkStatus();
  }
  const bool sequence = core::FamilyOf(m.config.kind).sequence();
  const char* why =
      rnn == nullptr ? (sequence ? " model starts from its measured output lags"
                                 : " model has no state")
      : rnn->rnn.initial_state == core::InitialState::kEncoder
          ? " model's encoder reads x0 from its fixed window of past samples"
          : " model was trained from x0 = 0 and starts there";
  return absl::InvalidArgumentError(absl::StrCat(
      "x0_samples (--x0-samples) is how many samples a free initial state is "
      "estimated from, but this ",
      core::FamilyOf(m.config.kind).name(), why, "; leave it out"));
}

// Predict before its check that every value is finite.
absl::StatusOr<PredictOutput> PredictValues(const v1::TrainedModel& model,
                                            absl::string_view csv,
                                            const PredictOptions& options) {
  SPARROW_ASSIGN_OR_RETURN(core::Model m, FromProto(model));
  if (options.initial_state != PredictOptions::InitialState::kEstimate) {
    if (options.x0_samples != 0) {
      return absl::InvalidArgumentError(
          "x0_samples (--x0-samples) is how many samples an estimated x0 "
          "fits; with a zero or given x0 nothing is estimated, so leave it "
          "out");
    }
    return PredictFromState(m, std::string_view(csv.data(), csv.size()),
                            options);
  }
  if (options.x0_samples < 0) {
    return core::OptionError("x0_samples", options.x0_samples,
                             ">= 0 (0 = the model's own setting)");
  }
  auto* rnn = std::get_if<core::StateSpaceRnnKind>(&m.config.kind);
  SPARROW_RETURN_IF_ERROR(CheckX0Samples(m, options.x0_samples));
  if (options.x0_samples > 0) rnn->x0_estimation_samples = options.x0_samples;
  const bool sequence = core::FamilyOf(m.config.kind).sequence();
  // (Missing inputs are named by ReadChannels below.)
  const std::string_view text(csv.data(), csv.size());
  const bool inputs_only = sequence && HasColumns(text, m.input_names) &&
                           !HasColumns(text, m.output_names);
  if (inputs_only && rnn != nullptr &&
      rnn->rnn.initial_state == core::InitialState::kZero &&
      options.x0_samples == 0 && !options.one_step) {
    // A model trained from x0 = 0 estimates nothing: it starts there.
    PredictOptions zero = options;
    zero.initial_state = PredictOptions::InitialState::kZero;
    return PredictFromState(m, text, zero);
  }
  if (inputs_only) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the file has no measured outputs (",
        absl::StrJoin(m.output_names, ", "), "), which ",
        rnn == nullptr ? "the model's output lags start from"
        : rnn->rnn.initial_state == core::InitialState::kEncoder
            ? "the encoder reads the initial state x0 from"
            : "estimating the initial state x0 fits",
        rnn != nullptr
            ? "; simulate from the inputs alone with x0 = 0 (--x0 zero) or a "
              "given x0 (--x0 v1,v2,...)"
            : "; add the output columns (a NARX model needs its first "
              "output lags measured)"));
  }
  std::vector<std::string> columns = m.input_names;
  if (sequence) {
    columns.insert(columns.end(), m.output_names.begin(), m.output_names.end());
  }
  SPARROW_ASSIGN_OR_RETURN(
      const Eigen::MatrixXd channels,
      ReadChannels(std::string_view(csv.data(), csv.size()), columns));
  const auto nu = static_cast<Eigen::Index>(m.input_names.size());
  const Eigen::MatrixXd u = channels.topRows(nu);

  PredictOutput out;
  out.output_names = m.output_names;
  if (!sequence) {
    SPARROW_ASSIGN_OR_RETURN(out.y, core::PredictTable(m, u));
    return out;
  }
  const Eigen::MatrixXd y = channels.bottomRows(channels.rows() - nu);
  if (rnn != nullptr && options.x0_samples > y.cols()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "x0_samples (--x0-samples) is %d, but the file has %d samples; give "
        "at most %d",
        options.x0_samples, y.cols(), y.cols()));
  }
  if (options.intervals && !options.one_step) {
    return absl::InvalidArgumentError(
        "intervals are one-step prediction intervals; ask for one-step "
        "prediction");
  }
  core::SequencePrediction p;
  if (options.intervals) {
    SPARROW_ASSIGN_OR_RETURN(core::IntervalPrediction q,
                             core::PredictOneStepWithUncertainty(m, u, y));
    p = std::move(q.mean);
    out.stddev = std::move(q.stddev);
  } else if (options.one_step) {
    SPARROW_ASSIGN_OR_RETURN(p, core::PredictOneStep(m, u, y));
  } else {
    SPARROW_ASSIGN_OR_RETURN(p, core::Simulate(m, u, y));
  }
  out.y = std::move(p.y);
  out.x0.assign(p.x0.data(), p.x0.data() + p.x0.size());
  AddFit(y, p.first, &out);
  return out;
}

}  // namespace

absl::StatusOr<PredictOutput> Predict(const v1::TrainedModel& model,
                                      absl::string_view csv,
                                      const PredictOptions& options) {
  SPARROW_ASSIGN_OR_RETURN(PredictOutput out,
                           PredictValues(model, csv, options));
  // A simulation that overflows (or an input far outside the training range)
  // would write Inf and NaN rows and drop the fit without a word.
  const bool one_step = options.one_step || options.intervals;
  for (Eigen::Index t = 0; t < out.y.cols(); ++t) {
    const bool finite =
        out.y.col(t).allFinite() &&
        (out.stddev.cols() <= t || out.stddev.col(t).allFinite());
    if (finite) continue;
    if (one_step) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "the one-step prediction%s is not finite at sample %d of %d: the "
          "inputs or past outputs there are far outside the range the model "
          "was trained on (check that column's values)",
          options.intervals ? " or its interval" : "", t + 1, out.y.cols()));
    }
    return absl::InvalidArgumentError(absl::StrFormat(
        "the prediction is not finite from sample %d of %d on: the "
        "model's free-run simulation diverges on this input%s. Check the "
        "initial state and that the inputs are in the range the model was "
        "trained on%s",
        t + 1, out.y.cols(),
        out.x0.empty() ? "" : " from this initial state x0",
        model.model().has_narx_mlp()
            ? ", or predict one step ahead (--one-step)"
            : ""));
  }
  return out;
}

absl::StatusOr<ImagePredictions> PredictImages(
    const v1::TrainedModel& model, const core::data::ImageSet& images) {
  SPARROW_ASSIGN_OR_RETURN(const core::Model m, FromProto(model));
  SPARROW_RETURN_IF_ERROR(CheckImageModel(m, images));
  ImagePredictions out;
  if (images.size() == 0) return out;
  std::vector<int64_t> all(images.size());
  for (int64_t i = 0; i < images.size(); ++i) all[i] = i + 1;
  SPARROW_ASSIGN_OR_RETURN(const core::data::TableData table,
                           core::data::MakeImageTable(images, all));
  SPARROW_ASSIGN_OR_RETURN(const Eigen::MatrixXd logits,
                           core::PredictTable(m, table.x));
  out.probabilities = m.loss.kind == core::LossKind::kSoftmaxCrossEntropy
                          ? Softmax(logits)
                          : logits;
  out.labels.resize(logits.cols());
  for (Eigen::Index j = 0; j < logits.cols(); ++j) {
    Eigen::Index best = 0;
    out.probabilities.col(j).maxCoeff(&best);
    out.labels[j] = static_cast<int>(best);
  }
  return out;
}

}  // namespace sparrow::translate
