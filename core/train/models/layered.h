// What the layered model kinds (cnn, rnn, lstm) share: a Network built from
// the kind's fields and the data's dimensions, trained on table rows (one
// image or one sequence per column) by the threaded minibatch
// NetworkObjective, one parameter block per layer.
#ifndef SPARROW_CORE_TRAIN_MODELS_LAYERED_H_
#define SPARROW_CORE_TRAIN_MODELS_LAYERED_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/models/network.h"
#include "core/train/model_registry.h"

namespace sparrow::core {

class LayeredFamily : public ModelFamily {
 public:
  bool sequence() const override { return false; }
  // First-order methods only (SGD, Adam, L-BFGS) until RLS lands.
  absl::Status Check(const TrainConfig& config) const override;
  absl::StatusOr<int64_t> CountParameters(const ModelConfig& config,
                                          int n_inputs,
                                          int n_outputs) const override;
  double ActivationWidth(const ModelConfig& config, int inputs,
                         int outputs) const override;
  absl::Status Setup(const TrainConfig& config, const TrainData& data, Rng* rng,
                     Model* model, TrainSetup* setup) const override;
  absl::StatusOr<Eigen::MatrixXd> PredictRowsScaled(
      const Model& model, const Eigen::MatrixXd& x) const override;
  int64_t StoredParameters(ModelConfig* config, int n_inputs, int n_outputs,
                           int num_traces) const override;
  std::vector<ParamBlock> Blocks(const Model& model) const override;
  void DescribeStructure(const TrainSetup&, const Eigen::VectorXd&,
                         Metrics*) const override {}

  // The network on n_in inputs and n_out outputs; InvalidArgument names the
  // model field whose shape does not fit (a kernel larger than the padded
  // input, a flatten size that does not match, ...). The config's
  // dimensions must be resolved (Resolve).
  virtual absl::StatusOr<Network> Build(const ModelConfig& config, int n_in,
                                        int n_out) const = 0;
  // Fills the dimensions the spec left at 0 from the input count (a square
  // one-channel image) and, when the data are images, from their shape.
  virtual void Resolve(int n_in, const data::TableData* images,
                       ModelConfig* config) const = 0;
  // A name per layer, for the parameter blocks ("conv1", "dense1", ...).
  virtual std::vector<std::string> LayerNames(
      const ModelConfig& config) const = 0;
};

// The side of a square with n values, or 0 when n is not a square.
int SquareSide(int n);

}  // namespace sparrow::core

#endif  // SPARROW_CORE_TRAIN_MODELS_LAYERED_H_
