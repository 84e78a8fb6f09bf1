// The Trainer: a validated training configuration plus prepared data in, a
// trained model with honest held-out metrics out. Progress goes through an
// IterationCallback; cancellation is the callback returning kAbort.
// Deterministic for a given seed.
#ifndef SPARROW_CORE_TRAIN_TRAINER_H_
#define SPARROW_CORE_TRAIN_TRAINER_H_

#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/data/dataset.h"
#include "core/models/pruning.h"
#include "core/optim/admm/admm.h"
#include "core/optim/problem.h"
#include "core/train/model.h"
#include "core/train/optimizer.h"

namespace sparrow::core {

class ThreadPool;

// One stage of a multi-stage run (TrainConfig::stages, core/train/stages.h):
// the fields of TrainConfig that a stage sets for itself.
struct TrainStage {
  std::string name;
  OptimizerOptions optimizer = AdamOptions();  // stopping rules included
  int patience = 0;
  int batch_size = 0;
  int bptt_window = 0;
  bool shuffle = true;
  int threads = 1;
  AdmmOptions admm;
  // narx_mlp: train on the simulation error (1) or one step ahead (0);
  // -1 = as the model says.
  int simulation_error = -1;
};

struct TrainConfig {
  ModelConfig model;
  Loss loss;
  double rho_x0 = 0.0;     // on free x0 / encoder weights
  double rho_theta = 0.0;  // on network weights and biases
  // The method and its options, stopping rules included (optimizer.h). SBDL
  // trains mlp / narx_mlp with the MSE loss; B2LD and BLInG mlp models with
  // the MSE loss, minimizing (1/P) sum ||yhat - y||^2 + rho ||w||^2 with
  // their own rho; NAILS and NAILM state_space_rnn models.
  OptimizerOptions optimizer = AdamOptions();
  // Non-smooth regularization g, handled by ADMM around NAILS/NAILM (Bemporad
  // §4). tau is in the sum units of the least-squares objective (sum of losses
  // + rho/2 |w|^2), as in the paper.
  struct Penalty {
    enum class Kind { kNone, kL1, kL0, kGroupLasso, kQuantization, kBinary };
    Kind kind = Kind::kNone;
    double tau = 0.0;
    std::vector<double> levels;  // kQuantization
  } penalty;
  AdmmOptions admm;
  // How the objective splits the data (first-order methods and SBDL's inner
  // solver): tabular / NARX minibatch (0 = full batch), RNN truncated BPTT
  // window (0 = full BPTT), and whether minibatches are reshuffled.
  int batch_size = 0;
  int bptt_window = 0;
  bool shuffle = true;
  // Threads sharing each minibatch of a layered model (cnn, rnn, lstm).
  int threads = 1;
  // Validation reports without improvement before stopping; 0 = off. The
  // trainer's own rule, on top of the method's stop rules.
  int patience = 0;
  // What patience, the best iterate on validation data and the progress
  // records' validation_metric read (ValidationError below). kDefault: 100 -
  // accuracy for a classifier, else the RMSE (of the simulation for sequence
  // and NARX models).
  enum class ValidationMetric {
    kDefault,
    kRmse,
    kOneStepRmse,
    kBfr,
    kAccuracy
  };
  ValidationMetric validation_metric = ValidationMetric::kDefault;
  // Per-channel scaling of inputs and (regression) outputs, fitted on the
  // training split and stored with the model.
  enum class Scaling { kZScore, kMinMax, kNone };
  Scaling scaling = Scaling::kZScore;
  uint64_t seed = 0;
  // A multi-stage run when it has two or more: the stages run in order, each
  // from the model the one before ended with. `optimizer` and `patience` are
  // then those of the first (a resumed run's first stage is the checkpoint's,
  // and the fields below say where it is in the whole run).
  std::vector<TrainStage> stages;
  int stage_offset = 0;           // the first stage's index in the run
  int stage_iterations_done = 0;  // of the first stage, before a resume
  double stage_seconds_done = 0.0;
  // Warm start: training starts from this trained model's parameters instead
  // of the seeded initialization, and uses its scalings instead of fitting
  // them on the training split. It must have the config's kind and structure
  // (the same named parameter blocks) on the same input and output channels.
  std::shared_ptr<const Model> warm_start;
  // The warm start is a sweep path's point before (trained with another
  // weight): the run goes on from it, but it is not a candidate for the best
  // iterate on validation data, which any other warm start is (so that a run
  // never ends worse on validation than the model it started from, and a
  // path's points do not stop at the first one's model).
  bool warm_start_from_path = false;
  // Resume from a checkpoint: when not empty, the optimizer starts from these
  // parameters (the normalized-units vector an IterationRecord reports), also
  // over a warm start. Resume (resume.h) also sets the method's state and the
  // fields below.
  Eigen::VectorXd initial_params;
  // Resume: the interrupted run's best iterate on validation data (empty when
  // none), its metric and the reports since, where validation tracking goes on.
  Eigen::VectorXd resume_best_params;
  double resume_best_metric = std::numeric_limits<double>::infinity();
  int resume_reports_since_best = 0;

  absl::Status Validate() const;
};

// Data already split. Sequence models use the *_seq fields, tabular models the
// *_table fields.
struct TrainData {
  data::SequenceData train_seq, validation_seq, test_seq;
  data::TableData train_table, validation_table, test_table;
};

struct Metrics {
  static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  double train_rmse = kNone, validation_rmse = kNone, test_rmse = kNone;
  double train_bfr = kNone, validation_bfr = kNone, test_bfr = kNone;
  double train_accuracy = kNone, validation_accuracy = kNone,
         test_accuracy = kNone;
  double train_one_step_rmse = kNone, validation_one_step_rmse = kNone,
         test_one_step_rmse = kNone;
  double sparsity_pct = 0.0, remaining_pct = 100.0;
  // State-space RNN: states whose group (Bemporad §4.2) is not all zero.
  double model_order = kNone;
  // A linear-plus-neural model (state_space_rnn.linear): the fit of the linear
  // model training started from, i.e. the baseline the network must beat.
  double linear_train_rmse = kNone, linear_validation_rmse = kNone,
         linear_test_rmse = kNone;
  double linear_train_bfr = kNone, linear_validation_bfr = kNone,
         linear_test_bfr = kNone;
  // mlp / narx_mlp: per weight matrix, and the inputs (NARX lags) and hidden
  // neurons the zero weights removed, by name.
  std::vector<LayerSparsity> layers;
  std::vector<std::string> removed;
};

// The validation figure config.validation_metric names, as an error (lower
// is better: BFR and accuracy as 100 - the value); NaN when m has none.
double ValidationError(const TrainConfig& config, const Metrics& m);

// What config.validation_metric needs that config.model or config.loss lacks
// ("a narx_mlp model (...)"), or nullptr when the model measures it.
const char* ValidationMetricNeeds(const TrainConfig& config);

struct TrainResult {
  Model model;
  Metrics metrics;
  Summary summary;
  double train_seconds = 0.0;  // optimizer time only
  double ms_per_epoch = 0.0;
};

absl::StatusOr<TrainResult> Train(const TrainConfig& config,
                                  const TrainData& data,
                                  IterationCallback* callback);

// Metrics of a model on sequence traces or table rows (data units); fills the
// fields of one split: which = 0 train, 1 validation, 2 test. A pool (may be
// null) runs the x0 estimates' starts in parallel; the metrics are the same.
absl::Status EvaluateSequences(const Model& model,
                               const data::SequenceData& data, int which,
                               Metrics* metrics, ThreadPool* pool = nullptr);
absl::Status EvaluateTable(const Model& model, const data::TableData& data,
                           int which, Metrics* metrics);
// The split `which` of data, by the model's kind (table or sequences).
absl::Status Evaluate(const Model& model, const TrainData& data, int which,
                      Metrics* metrics, ThreadPool* pool = nullptr);
// The threads a run of `config` may use at once: its method's (nails / nailm
// `threads`) or the minibatch threads, at least 1. Evaluations between
// iterations use as many.
int RunThreads(const TrainConfig& config);

}  // namespace sparrow::core

#endif  // SPARROW_CORE_TRAIN_TRAINER_H_
