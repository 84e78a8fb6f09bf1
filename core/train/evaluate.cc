// Metrics of a trained model on held-out data (and on the training split),
// in data units.
#include <variant>
#include <vector>

#include "core/metrics/metrics.h"
#include "core/train/model_registry.h"
#include "core/train/setup.h"
#include "core/train/trainer.h"
#include "core/util/status_macros.h"

namespace sparrow::core {
namespace {

// Stacks the predicted part of every trace and scores it.
void Score(const std::vector<Eigen::MatrixXd>& ys,
           const std::vector<Eigen::MatrixXd>& yhats, const Loss& loss,
           double* rmse, double* bfr, double* accuracy) {
  Eigen::Index cols = 0;
  for (const auto& y : ys) cols += y.cols();
  if (ys.empty() || cols == 0) return;
  Eigen::MatrixXd y(ys[0].rows(), cols), yhat(ys[0].rows(), cols);
  Eigen::Index c = 0;
  for (size_t i = 0; i < ys.size(); ++i) {
    y.middleCols(c, ys[i].cols()) = ys[i];
    yhat.middleCols(c, ys[i].cols()) = yhats[i];
    c += ys[i].cols();
  }
  if (rmse) *rmse = Rmse(y, yhat);
  // BFR compares a signal with its simulation; it means nothing for labels.
  if (bfr && !IsClassification(loss)) *bfr = Bfr(y, yhat);
  if (accuracy && IsClassification(loss)) {
    *accuracy = Accuracy(y, yhat, loss.OneHotTargets());
  }
}

double* Field(Metrics* m, int which, double Metrics::*train,
              double Metrics::*validation, double Metrics::*test) {
  return which == 0   ? &(m->*train)
         : which == 1 ? &(m->*validation)
                      : &(m->*test);
}

// Training traces of a free-x0 model keep the x0 learned with it.
Eigen::MatrixXd SimulateLearnedX0(const Model& model, const data::Trace& tr,
                                  int trace) {
  const StateSpaceRnn rnn(model.config.as<StateSpaceRnnKind>().rnn);
  Eigen::MatrixXd u = tr.u;
  model.input_scaling.Apply(&u);
  StateSpaceRnn::Tape tape;
  // A free x0 reads no measured outputs: pass the inputs as the unused
  // output argument rather than scaling a copy of y for nothing.
  rnn.Simulate(model.params.data(), u, /*y=*/u, trace, &tape);
  Eigen::MatrixXd y = tape.outputs();
  model.output_scaling.Invert(&y);
  return y;
}

}  // namespace

absl::Status EvaluateSequences(const Model& model,
                               const data::SequenceData& data, int which,
                               Metrics* metrics, ThreadPool* pool) {
  if (data.traces.empty()) return absl::OkStatus();
  std::vector<Eigen::MatrixXd> ys, sims, ones;
  const bool narx = model.config.is<NarxMlpKind>();
  const auto* rnn = std::get_if<StateSpaceRnnKind>(&model.config.kind);
  // Trained on windows (subsequence_length > 0), the learned x0s are the
  // windows', not the traces': estimate them as on new data.
  const bool learned_x0 =
      which == 0 && rnn != nullptr &&
      rnn->rnn.initial_state == InitialState::kFree &&
      rnn->subsequence_length <= 0 &&
      static_cast<int>(data.traces.size()) == rnn->rnn.num_traces;
  for (size_t t = 0; t < data.traces.size(); ++t) {
    const data::Trace& tr = data.traces[t];
    SequencePrediction p;
    if (learned_x0) {
      p.y = SimulateLearnedX0(model, tr, static_cast<int>(t));
    } else {
      SPARROW_ASSIGN_OR_RETURN(p, Simulate(model, tr.u, tr.y, pool));
      p.y = p.y.rightCols(p.y.cols() - p.first).eval();
    }
    ys.push_back(tr.y.rightCols(p.y.cols()));
    sims.push_back(p.y);
    if (narx) {
      SPARROW_ASSIGN_OR_RETURN(SequencePrediction one,
                               PredictOneStep(model, tr.u, tr.y));
      ones.push_back(one.y.rightCols(one.y.cols() - one.first));
    }
  }
  Score(ys, sims, model.loss,
        Field(metrics, which, &Metrics::train_rmse, &Metrics::validation_rmse,
              &Metrics::test_rmse),
        Field(metrics, which, &Metrics::train_bfr, &Metrics::validation_bfr,
              &Metrics::test_bfr),
        Field(metrics, which, &Metrics::train_accuracy,
              &Metrics::validation_accuracy, &Metrics::test_accuracy));
  if (!ones.empty()) {
    Score(
        ys, ones, model.loss,
        Field(metrics, which, &Metrics::train_one_step_rmse,
              &Metrics::validation_one_step_rmse, &Metrics::test_one_step_rmse),
        nullptr, nullptr);
  }
  return absl::OkStatus();
}

absl::Status EvaluateTable(const Model& model, const data::TableData& data,
                           int which, Metrics* metrics) {
  if (data.num_samples() == 0) return absl::OkStatus();
  SPARROW_ASSIGN_OR_RETURN(Eigen::MatrixXd yhat, PredictTable(model, data.x));
  Eigen::MatrixXd y = data.y;
  if (model.loss.OneHotTargets() && y.rows() == 1) {
    SPARROW_ASSIGN_OR_RETURN(y, OneHot(data.y, static_cast<int>(yhat.rows())));
  }
  Score({y}, {yhat}, model.loss,
        Field(metrics, which, &Metrics::train_rmse, &Metrics::validation_rmse,
              &Metrics::test_rmse),
        nullptr,
        Field(metrics, which, &Metrics::train_accuracy,
              &Metrics::validation_accuracy, &Metrics::test_accuracy));
  return absl::OkStatus();
}

absl::Status Evaluate(const Model& model, const TrainData& data, int which,
                      Metrics* metrics, ThreadPool* pool) {
  if (!FamilyOf(model.config.kind).sequence()) {
    const data::TableData* parts[] = {&data.train_table, &data.validation_table,
                                      &data.test_table};
    return EvaluateTable(model, *parts[which], which, metrics);
  }
  const data::SequenceData* parts[] = {&data.train_seq, &data.validation_seq,
                                       &data.test_seq};
  return EvaluateSequences(model, *parts[which], which, metrics, pool);
}

}  // namespace sparrow::core
