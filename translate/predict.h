// Running a stored model on a CSV: the one implementation behind
// `sparrow predict` and ModelService.Predict.
#ifndef SPARROW_TRANSLATE_PREDICT_H_
#define SPARROW_TRANSLATE_PREDICT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "Eigen/Core"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/data/idx.h"
#include "sparrow/v1/model.pb.h"

namespace sparrow::translate {

// What to predict; the fields of sparrow.v1.PredictRequest.
struct PredictOptions {
  // Sequence models: NARX one-step-ahead prediction from the measured past
  // outputs instead of free-run simulation. Default false.
  bool one_step = false;
  // SBDL NARX models: add the 95 % one-step prediction intervals (requires
  // one_step). Default false.
  bool intervals = false;
  // > 0 overrides the model's x0_estimation_samples (samples used to estimate
  // a free initial state); 0 keeps the model's. Must be >= 0.
  int x0_samples = 0;
  // state_space_rnn: where free-run simulation starts. kEstimate: a free x0
  // estimated from the first x0_samples measured outputs (an encoder model's
  // encoder window); kZero: x0 = 0, the state the scaled model rests in;
  // kGiven: `x0` (nx values, the model's normalized state units). kZero and
  // kGiven read the inputs alone, and the outputs only for the fit when the
  // CSV has them.
  enum class InitialState { kEstimate, kZero, kGiven };
  InitialState initial_state = InitialState::kEstimate;
  std::vector<double> x0;
};

struct PredictOutput {
  std::vector<std::string> output_names;
  // ny x N predictions in data units, one column per CSV row. For sequence
  // models, the columns before the first predicted sample (NARX history,
  // encoder window) copy the measured outputs.
  Eigen::MatrixXd y;
  // ny x N predictive standard deviations; empty unless intervals.
  Eigen::MatrixXd stddev;
  // Sequence models: best fit rate and RMSE over the predicted samples (the
  // copied ones left out). Absent for static models, and when the BFR is not
  // finite (no predicted sample, or constant measured outputs).
  std::optional<double> bfr, rmse;
  // state_space_rnn with a free, zero or given initial state: the initial
  // state of the simulation (normalized state units); else empty.
  std::vector<double> x0;

  // The predictions as CSV: header <name>_pred per output (then, with
  // intervals, <name>_lower95 per output and <name>_upper95 per output: the
  // Gaussian band mean -+ 1.96 sd), one row per sample, values as %.17g.
  std::string Csv() const;
};

// The size Csv() will have for a CSV input of `csv_rows` data rows and
// `values_per_row` predicted values per row (outputs, 3x with intervals),
// assuming 19 bytes per value: %.17g prints 17 significant digits and a point
// (and a separator follows) for every value that is not a short decimal, which
// model outputs practically never are. Lets a server refuse an answer too
// large to send before computing it.
int64_t EstimateCsvBytes(int64_t csv_rows, int64_t values_per_row);

// Data rows of a CSV text: its lines after the header (a last line without a
// line break counts; blank lines are counted too, so this is an upper bound).
int64_t CountCsvDataRows(absl::string_view csv);

// Runs `model` on `csv`, a CSV with a header row holding the model's input
// columns and, for sequence models, its output columns (read for the NARX
// history, the encoder window or the free-x0 estimate, and the fit). One
// trace. Static models ignore one_step and intervals.
// Errors: InvalidArgument for a bad option, a corrupt model, a missing column
// (named) or a bad value (the CSV line and column are named; NaN and Inf are
// rejected); the errors of core::Simulate / PredictOneStep /
// PredictOneStepWithUncertainty / PredictTable (FailedPrecondition for
// intervals from a model without SBDL variances).
// Thread safety: pure; concurrent calls are safe.
absl::StatusOr<PredictOutput> Predict(const v1::TrainedModel& model,
                                      absl::string_view csv,
                                      const PredictOptions& options);

// The most images one prediction call takes (ModelService.Predict refuses
// more; `sparrow predict --images` sends larger files in batches).
inline constexpr int64_t kMaxPredictImages = 10000;

// A classifier's predictions on images.
struct ImagePredictions {
  // classes x N: softmax of the model's outputs, one column per image; for
  // a model trained with MSE on one-hot targets (loss.one_hot_targets) its
  // outputs themselves, which estimate the class indicators.
  Eigen::MatrixXd probabilities;
  // The class of the largest output of each image (the first on ties).
  std::vector<int> labels;
};

// Runs `model`, a classifier trained with softmax cross-entropy or MSE on
// one-hot targets (mlp, cnn, rnn or lstm),
// on `images`: its inputs are the pixels / 255, channel-major, as in
// training. Errors (InvalidArgument): a corrupt model, another loss, more
// than kMaxPredictImages images, or images whose pixel count differs from the
// model's inputs; the errors of core::PredictTable.
// Thread safety: pure; concurrent calls are safe.
absl::StatusOr<ImagePredictions> PredictImages(
    const v1::TrainedModel& model, const core::data::ImageSet& images);

}  // namespace sparrow::translate

#endif  // SPARROW_TRANSLATE_PREDICT_H_
