#include "server/spec/predict.h"

#include <cmath>
#include <string_view>
#include <utility>

#include "absl/strings/str_format.h"
#include "core/data/csv.h"
#include "core/metrics/metrics.h"
#include "core/train/model.h"
#include "core/util/option_error.h"
#include "core/util/status_macros.h"
#include "server/spec/convert.h"

namespace sparrow::spec {

namespace {

// Turns the trailing comma of a CSV line into its line end.
void EndLine(std::string* text) {
  if (!text->empty() && text->back() == ',') {
    text->back() = '\n';
  } else {
    text->push_back('\n');
  }
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

absl::StatusOr<PredictOutput> Predict(const v1::TrainedModel& model,
                                      absl::string_view csv,
                                      const PredictOptions& options) {
  SPARROW_ASSIGN_OR_RETURN(core::Model m, FromProto(model));
  if (options.x0_samples < 0) {
    return core::OptionError("x0_samples", options.x0_samples,
                             ">= 0 (0 = the model's own setting)");
  }
  if (options.x0_samples > 0) {
    m.config.x0_estimation_samples = options.x0_samples;
  }
  const bool sequence = m.config.kind != core::ModelKind::kMlp;
  std::vector<std::string> columns = m.input_names;
  if (sequence) {
    columns.insert(columns.end(), m.output_names.begin(), m.output_names.end());
  }
  // ParseCsv rejects NaN, Inf and missing values, naming the line and column.
  SPARROW_ASSIGN_OR_RETURN(
      core::data::CsvTable table,
      core::data::ParseCsv(std::string_view(csv.data(), csv.size()), columns));
  const auto nu = static_cast<Eigen::Index>(m.input_names.size());
  const Eigen::MatrixXd u = table.values.topRows(nu);

  PredictOutput out;
  out.output_names = m.output_names;
  if (!sequence) {
    SPARROW_ASSIGN_OR_RETURN(out.y, core::PredictTable(m, u));
    return out;
  }
  const Eigen::MatrixXd y = table.values.bottomRows(table.values.rows() - nu);
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
  const Eigen::Index n = y.cols() - p.first;
  const double bfr = core::Bfr(y.rightCols(n), out.y.rightCols(n));
  if (std::isfinite(bfr)) {
    out.bfr = bfr;
    out.rmse = core::Rmse(y.rightCols(n), out.y.rightCols(n));
  }
  return out;
}

}  // namespace sparrow::spec
