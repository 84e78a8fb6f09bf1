// What Train builds for one run before a method starts: the model's
// structures, the scaled training data and the objective that points into
// them. Built by the model kind's setup (core/train/setup.cc), consumed by the
// method (core/train/methods/), which may replace the objective by its own
// (B2LD and BLInG minimize their layered least-squares objective).
//
// Owns everything the objective points to; it must outlive the run. Not
// copyable (the objective holds pointers into it).
#ifndef SPARROW_CORE_TRAIN_SETUP_H_
#define SPARROW_CORE_TRAIN_SETUP_H_

#include <memory>

#include "absl/status/status.h"
#include "core/data/dataset.h"
#include "core/models/mlp.h"
#include "core/models/state_space_rnn.h"
#include "core/optim/problem.h"
#include "core/train/objectives.h"
#include "core/train/trainer.h"
#include "core/util/random.h"

namespace sparrow::core {

struct TrainSetup {
  TrainSetup() = default;
  TrainSetup(const TrainSetup&) = delete;
  TrainSetup& operator=(const TrainSetup&) = delete;

  // Training data in normalized units: the table (mlp rows, NARX regressors)
  // or the traces (sequence models).
  data::SequenceData train_seq;
  data::TableData train_table;
  // The network of an mlp / narx_mlp model, or the state-space RNN.
  Mlp mlp;
  StateSpaceRnn rnn;
  // The network of a layered model (cnn, rnn, lstm).
  Network network;
  // The objective the method minimizes and reports.
  std::unique_ptr<Objective> objective;
  // A NARX simulation fit's one-step objective (its curvature for SBDL).
  std::unique_ptr<TableObjective> one_step;
  // Leading parameters that are not network weights (free initial states):
  // left out of sparsity counts.
  int skip = 0;
};

// True for the classification losses (their targets are labels or 0/1).
bool IsClassification(const Loss& loss);

// Softmax cross-entropy with a single label column: labels 0..classes-1
// become one-hot columns. InvalidArgument names a sample that is not a label.
absl::StatusOr<Eigen::MatrixXd> OneHot(const Eigen::MatrixXd& labels,
                                       int classes);

// Building blocks of the model families (core/train/models/):
// Scalings fitted on the training split, per channel; a classification loss
// leaves its targets unscaled. A warm start's scalings instead, when it has
// the blocks' channel count.
data::Normalizer FitInputScaling(
    const TrainConfig& config,
    const std::vector<const Eigen::MatrixXd*>& blocks);
data::Normalizer FitOutputScaling(
    const TrainConfig& config,
    const std::vector<const Eigen::MatrixXd*>& blocks);
// Fits the scalings on the training traces and puts the scaled traces, and
// the channel names, in the setup and the model.
absl::Status ScaleTraces(const TrainConfig& config, const TrainData& data,
                         Model* model, TrainSetup* setup);
// An MLP on the rows of setup->train_table (static MLP, or NARX on its
// regressors) with the table objective; initializes model->params.
absl::Status SetupNetwork(const TrainConfig& config, int n_in, int n_out,
                          absl::string_view name, Rng* rng, Model* model,
                          TrainSetup* setup);
// Per-layer sparsity and removed units of the trained network.
void DescribeNetwork(const TrainSetup& setup, const Eigen::VectorXd& params,
                     Metrics* metrics);

// Fills the model's scalings, names and initial parameters and builds the
// setup for its kind (FamilyOf(kind).Setup). InvalidArgument names what is
// wrong with the data or the model spec.
absl::Status BuildSetup(const TrainConfig& config, const TrainData& data,
                        Rng* rng, Model* model, TrainSetup* setup);

}  // namespace sparrow::core

#endif  // SPARROW_CORE_TRAIN_SETUP_H_
