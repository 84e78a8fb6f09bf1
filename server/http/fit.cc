// ComputeFit and FitJson (views.h): the trained model run on the test split
// of its own job, against the measured outputs.
#include <string>
#include <vector>

#include "core/train/model.h"
#include "core/train/model_registry.h"
#include "core/util/status_macros.h"
#include "server/http/views.h"
#include "translate/config.h"
#include "translate/data.h"
#include "translate/model.h"

namespace sparrow::server::http {
namespace {

using nlohmann::json;

Eigen::MatrixXd Concat(const std::vector<Eigen::MatrixXd>& parts) {
  Eigen::Index cols = 0;
  for (const auto& p : parts) cols += p.cols();
  Eigen::MatrixXd out(parts.empty() ? 0 : parts[0].rows(), cols);
  Eigen::Index at = 0;
  for (const auto& p : parts) {
    out.middleCols(at, p.cols()) = p;
    at += p.cols();
  }
  return out;
}

// Free-run simulation of every trace of the split.
absl::Status SimulateSplit(const core::Model& m,
                           const core::data::SequenceData& seq, Fit* fit) {
  std::vector<Eigen::MatrixXd> measured, predicted;
  for (size_t t = 0; t < seq.traces.size(); ++t) {
    const core::data::Trace& tr = seq.traces[t];
    SPARROW_ASSIGN_OR_RETURN(core::SequencePrediction p,
                             core::Simulate(m, tr.u, tr.y));
    if (t == 0) fit->first = p.first;
    measured.push_back(tr.y);
    predicted.push_back(std::move(p.y));
  }
  fit->mode = "simulation";
  fit->measured = Concat(measured);
  fit->predicted = Concat(predicted);
  return absl::OkStatus();
}

// Row-wise predictions; a classifier's as the most probable class,
// next to the measured label.
absl::Status PredictSplit(const core::Model& m,
                          const core::data::TableData& table, Fit* fit) {
  SPARROW_ASSIGN_OR_RETURN(Eigen::MatrixXd yhat,
                           core::PredictTable(m, table.x));
  if (m.loss.OneHotTargets() && table.y.rows() == 1 && yhat.rows() > 1) {
    Eigen::MatrixXd labels(1, yhat.cols());
    for (Eigen::Index c = 0; c < yhat.cols(); ++c) {
      Eigen::Index best = 0;
      yhat.col(c).maxCoeff(&best);
      labels(0, c) = static_cast<double>(best);
    }
    yhat = std::move(labels);
  }
  fit->mode = "table";
  fit->measured = table.y;
  fit->predicted = std::move(yhat);
  return absl::OkStatus();
}

absl::Status NoSplitError() {
  return absl::FailedPreconditionError(
      "the job has no test or validation split to plot; add one to the spec's "
      "split");
}

json Metrics(const v1::Metrics& m, bool test) {
  auto number = [](double v) {
    return std::isfinite(v) ? json(v) : json(nullptr);
  };
  return {
      {"rmse", number(test ? m.test_rmse() : m.validation_rmse())},
      {"bfr", number(test ? m.test_bfr() : m.validation_bfr())},
      {"accuracy", number(test ? m.test_accuracy() : m.validation_accuracy())}};
}

}  // namespace

absl::StatusOr<Fit> ComputeFit(const v1::JobSpec& spec, const JobFiles& files,
                               const v1::TrainedModel& proto) {
  SPARROW_ASSIGN_OR_RETURN(core::TrainConfig config,
                           translate::ToTrainConfig(spec));
  SPARROW_ASSIGN_OR_RETURN(
      core::TrainData data,
      translate::LoadTrainData(
          spec, config,
          translate::DataFiles{files.data, files.validation, files.test}));
  SPARROW_ASSIGN_OR_RETURN(core::Model m, translate::FromProto(proto));
  Fit fit;
  fit.outputs = m.output_names;
  if (core::FamilyOf(m.config.kind).sequence()) {
    const bool test = !data.test_seq.traces.empty();
    const core::data::SequenceData& seq =
        test ? data.test_seq : data.validation_seq;
    if (seq.traces.empty()) return NoSplitError();
    fit.split = test ? "test" : "validation";
    SPARROW_RETURN_IF_ERROR(SimulateSplit(m, seq, &fit));
    fit.metrics = Metrics(proto.metrics(), test);
    return fit;
  }
  const bool test = data.test_table.num_samples() > 0;
  const core::data::TableData& table =
      test ? data.test_table : data.validation_table;
  if (table.num_samples() == 0) return NoSplitError();
  fit.split = test ? "test" : "validation";
  SPARROW_RETURN_IF_ERROR(PredictSplit(m, table, &fit));
  fit.metrics = Metrics(proto.metrics(), test);
  return fit;
}

json FitJson(const Fit& fit, int points) {
  const Eigen::VectorXd first_output = fit.measured.row(0).transpose();
  const std::vector<size_t> keep = DownsampleMinMax(
      absl::MakeConstSpan(first_output.data(), first_output.size()), points);
  json x = json::array(), measured = json::array(), predicted = json::array();
  for (size_t i : keep) x.push_back(i);
  for (Eigen::Index r = 0; r < fit.measured.rows(); ++r) {
    json m = json::array(), p = json::array();
    for (size_t i : keep) {
      m.push_back(fit.measured(r, i));
      p.push_back(r < fit.predicted.rows() ? fit.predicted(r, i) : 0.0);
    }
    measured.push_back(std::move(m));
    predicted.push_back(std::move(p));
  }
  return {{"mode", fit.mode},
          {"split", fit.split},
          {"outputs", fit.outputs},
          {"x", std::move(x)},
          {"measured", std::move(measured)},
          {"predicted", std::move(predicted)},
          {"first", fit.first},
          {"metrics", fit.metrics}};
}

}  // namespace sparrow::server::http
