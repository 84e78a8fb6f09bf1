// A trained model in core terms, and running it on new data. The server/CLI
// converts it to and from sparrow.v1.TrainedModel in translate/model.h.
#ifndef SPARROW_CORE_TRAIN_MODEL_H_
#define SPARROW_CORE_TRAIN_MODEL_H_

#include <string>
#include <variant>
#include <vector>

#include "Eigen/Core"
#include "absl/status/statusor.h"
#include "core/data/narx.h"
#include "core/data/normalization.h"
#include "core/losses/loss.h"
#include "core/models/mlp.h"
#include "core/models/narx_mlp.h"
#include "core/models/state_space_rnn.h"
#include "core/train/models/cnn.h"
#include "core/train/models/mlp.h"
#include "core/train/models/narx_mlp.h"
#include "core/train/models/recurrent.h"
#include "core/train/models/state_space_rnn.h"

namespace sparrow::core {

class ThreadPool;

// The model kind with its own fields. Each kind is declared in
// core/train/models/<kind>.h and its family (model_registry.h) is defined in
// the matching .cc; adding a kind adds its alternative here.
using ModelKind = std::variant<MlpKind, NarxMlpKind, StateSpaceRnnKind, CnnKind,
                               RnnKind, LstmKind>;

struct ModelConfig {
  ModelKind kind;  // MlpKind by default
  // The network of the MLP-based kinds (mlp, narx_mlp).
  std::vector<int> hidden;
  Activation activation = Activation::kTanh;
  Activation output_activation = Activation::kLinear;
  bool bias = true;  // mlp: false = bias-free layers
  // Glorot-normal initialization scale (Bemporad's sigma0).
  double init_scale = 1.0;
  // The initialization law of the layered kinds (cnn, rnn, lstm).
  InitLaw init = InitLaw::kGlorot;
  // The arithmetic of the dense and conv layers' products (mlp, cnn; layer.h).
  Precision precision = Precision::kFloat64;

  template <typename Kind>
  bool is() const {
    return std::holds_alternative<Kind>(kind);
  }
  // The kind's fields; the kind must be Kind.
  template <typename Kind>
  const Kind& as() const {
    return std::get<Kind>(kind);
  }
  template <typename Kind>
  Kind& as() {
    return std::get<Kind>(kind);
  }
};

// The network that maps model inputs to outputs for the mlp and narx_mlp
// kinds.
MlpSpec NetworkSpec(const ModelConfig& config, int n_in, int n_out);

// Trainable parameters of the model on n_inputs input and n_outputs output
// channels (a free x0 counted for one trace; a softmax classifier counted with
// one output per output column), without building it. InvalidArgument names
// the offending model field.
absl::StatusOr<int64_t> CountParameters(const ModelConfig& config, int n_inputs,
                                        int n_outputs);

struct Model {
  ModelConfig config;  // dimensions resolved
  Eigen::VectorXd params;
  data::Normalizer input_scaling, output_scaling;
  std::vector<std::string> input_names, output_names;
  Loss loss;
  double rho_x0 = 0.0;  // prior weight used when estimating x0 on new data
  // SBDL: 1 = active, 0 = pruned, per parameter (empty = all active); the
  // posterior-variance proxy C_kk per parameter and the noise variance sigma^2,
  // both in normalized units (empty / 0 = none).
  Eigen::VectorXd mask;
  Eigen::VectorXd variance;
  double noise_variance = 0.0;
};

// The NARX network of a kNarxMlp model (dimensions from its scalings).
NarxMlp NarxModel(const Model& model);

// Predictions of a sequence model on one trace, in data units.
struct SequencePrediction {
  Eigen::MatrixXd
      y;  // ny x N; columns before `first` copy the measured outputs
  int first =
      0;  // first genuinely predicted sample (encoder / NARX history excluded)
  // state_space_rnn with free or given initial states: the initial state of
  // the simulation, in the model's normalized state units; else empty.
  Eigen::VectorXd x0;
};

// Free-run simulation of a NARX or state-space model on inputs u (nu x N, data
// units). The measured outputs y are read only for the NARX initial history,
// the encoder window, or the x0 estimate of a free-x0 model (its first
// x0_estimation_samples samples). With a pool the x0 estimate's starts run
// on its threads; the result is the same as without.
absl::StatusOr<SequencePrediction> Simulate(const Model& model,
                                            const Eigen::MatrixXd& u,
                                            const Eigen::MatrixXd& y,
                                            ThreadPool* pool = nullptr);
// Free-run simulation of a state_space_rnn model from the initial state x0
// (nx values, the model's normalized state units; zero is the state the
// scaled model rests in) on inputs u alone (nu x N, data units); no encoder
// or x0 estimate, so every sample is predicted. InvalidArgument for another
// kind or an x0 of the wrong size or not finite.
absl::StatusOr<SequencePrediction> SimulateFromState(const Model& model,
                                                     const Eigen::MatrixXd& u,
                                                     const Eigen::VectorXd& x0);
// One-step-ahead prediction of a NARX model (measured past outputs), data
// units.
absl::StatusOr<SequencePrediction> PredictOneStep(const Model& model,
                                                  const Eigen::MatrixXd& u,
                                                  const Eigen::MatrixXd& y);
// One-step-ahead prediction of a NARX model with an approximate predictive
// standard deviation per sample, sqrt(sigma^2 + sum_k J_k^2 C_kk) (a
// first-order, diagonal-covariance Laplace approximation; data units).
// FailedPrecondition when the model has no variance (not trained by SBDL).
struct IntervalPrediction {
  SequencePrediction mean;
  Eigen::MatrixXd stddev;  // same shape as mean.y; 0 before `first`
};
absl::StatusOr<IntervalPrediction> PredictOneStepWithUncertainty(
    const Model& model, const Eigen::MatrixXd& u, const Eigen::MatrixXd& y);

// A static MLP on rows x (n_in x M), data units.
absl::StatusOr<Eigen::MatrixXd> PredictTable(const Model& model,
                                             const Eigen::MatrixXd& x);

// Bemporad eq. (30): x0 minimizing rho_x |x0|^2 + sum_{k < n0} l(y_k, yhat_k),
// in the model's normalized units, by L-BFGS from x0 = 0 and 2 nx
// deterministic starts in [-3, 3]^nx (from `guess` alone when given). With a
// pool the starts are refined in parallel on its threads; the result is the
// same, bit for bit, for every thread count.
Eigen::VectorXd EstimateInitialState(const StateSpaceRnn& rnn,
                                     const Eigen::VectorXd& params,
                                     const Eigen::MatrixXd& u,
                                     const Eigen::MatrixXd& y, int n0,
                                     const Loss& loss, double rho_x0,
                                     const Eigen::VectorXd* guess = nullptr,
                                     ThreadPool* pool = nullptr);

}  // namespace sparrow::core

#endif  // SPARROW_CORE_TRAIN_MODEL_H_
