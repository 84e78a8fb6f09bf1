// The model registry: one ModelFamily per alternative of ModelKind, each in
// its own file under core/train/models/ and reached through its kind's
// static Family().
// Everything the trainer and the service do per model kind goes through it:
// counting parameters before a job is accepted, estimating its memory,
// building the model and its objective, and describing the trained model's
// structure. (The spec's ModelSpec oneof maps to a kind in translate/.)
//
// Families are stateless singletons, safe to use from any thread.
#ifndef SPARROW_CORE_TRAIN_MODEL_REGISTRY_H_
#define SPARROW_CORE_TRAIN_MODEL_REGISTRY_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/train/model.h"
#include "core/train/setup.h"
#include "core/train/trainer.h"
#include "core/util/random.h"

namespace sparrow::core {

class ThreadPool;

class ModelFamily {
 public:
  virtual ~ModelFamily() = default;

  // The model's name in specs and messages: "mlp", "narx_mlp", ...
  virtual const char* name() const = 0;
  // Trains and predicts on traces (TrainData's *_seq fields) rather than on
  // table rows.
  virtual bool sequence() const = 0;

  // Checks the kind's own fields and how they combine with the rest of the
  // config, before any data is read; InvalidArgument names the field.
  virtual absl::Status Check(const TrainConfig&) const {
    return absl::OkStatus();
  }
  // Trainable parameters on n_inputs input and n_outputs output channels,
  // without building the model; InvalidArgument names the bad model field.
  virtual absl::StatusOr<int64_t> CountParameters(const ModelConfig& config,
                                                  int n_inputs,
                                                  int n_outputs) const = 0;
  // Doubles per sample that a forward and backward pass keep.
  virtual double ActivationWidth(const ModelConfig& config, int inputs,
                                 int outputs) const = 0;
  // The model trains on a table of regressors built from the traces (two
  // more copies of the data).
  virtual bool BuildsRegressors() const { return false; }
  // Bytes Setup allocates beyond the model and data, freed before training
  // (a linear part's subspace fit).
  virtual double SetupScratchBytes(const ModelConfig&, int /*inputs*/,
                                   int /*outputs*/) const {
    return 0.0;
  }
  // Whether Setup initializes this model at a fitted linear model (the
  // trainer then reports that model's fit as Metrics::linear_*).
  virtual bool StartsAtLinearModel(const ModelConfig&) const { return false; }

  // Fills the model's scalings, names and initial parameters from the
  // training data and builds the setup: the model's structures, the scaled
  // data and the objective.
  virtual absl::Status Setup(const TrainConfig& config, const TrainData& data,
                             Rng* rng, Model* model,
                             TrainSetup* setup) const = 0;
  // Free-run simulation on inputs u and measured outputs y (channels x N,
  // both normalized; y is read only for an initial history or state), in
  // normalized units. InvalidArgument for a model that has no simulation or
  // a sequence too short for it. `pool` (may be null) may run independent
  // work such as an x0 estimate's starts; it does not change the result.
  virtual absl::StatusOr<SequencePrediction> SimulateScaled(
      const Model& model, const Eigen::MatrixXd& u, const Eigen::MatrixXd& y,
      ThreadPool* pool) const;
  // Free-run simulation from the initial state x0 (the model's normalized
  // state units) on inputs u alone (normalized), in normalized units.
  // InvalidArgument for a model without a state.
  virtual absl::StatusOr<SequencePrediction> SimulateFromStateScaled(
      const Model& model, const Eigen::MatrixXd& u,
      const Eigen::VectorXd& x0) const;
  // Predictions on rows x (inputs x M, normalized), normalized.
  // InvalidArgument for a sequence model.
  virtual absl::StatusOr<Eigen::MatrixXd> PredictRowsScaled(
      const Model& model, const Eigen::MatrixXd& x) const;
  // The parameters of a stored model of this kind on n_inputs and n_outputs
  // channels and num_traces training traces (free initial states), completing
  // config with those dimensions; and the named blocks of its parameter
  // vector, as TrainedModel stores them.
  virtual int64_t StoredParameters(ModelConfig* config, int n_inputs,
                                   int n_outputs, int num_traces) const = 0;
  virtual std::vector<ParamBlock> Blocks(const Model& model) const;

  // What the trained parameters' zeros mean for the model: its order
  // (state-space RNN), per-layer sparsity and removed units (MLPs).
  virtual void DescribeStructure(const TrainSetup& setup,
                                 const Eigen::VectorXd& params,
                                 Metrics* metrics) const = 0;
};

// The family of a kind. Every ModelKind alternative has one.
const ModelFamily& FamilyOf(const ModelKind& kind);

}  // namespace sparrow::core

#endif  // SPARROW_CORE_TRAIN_MODEL_REGISTRY_H_
