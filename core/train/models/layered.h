// What the layered model kinds (cnn, rnn, lstm) share: a Network built from
// the kind's fields and the data's dimensions, trained on table rows (one
// image or one sequence per column) by the threaded minibatch
// NetworkObjective, one parameter block per layer.
#ifndef SPARROW_CORE_TRAIN_MODELS_LAYERED_H_
#define SPARROW_CORE_TRAIN_MODELS_LAYERED_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/models/network.h"
#include "core/train/model_registry.h"

namespace sparrow::core {

class LayeredFamily : public ModelFamily {
 public:
  bool sequence() const override { return false; }
  // First-order methods (SGD, Adam, L-BFGS) and RLS.
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

// Fills the input shape a cnn, rnn or lstm spec left at 0 from images of
// channels x height x width, as training on them does (LayeredFamily::
// Resolve); other kinds are left alone.
void ResolveImageShape(int channels, int height, int width,
                       ModelConfig* config);

// The side of a square with n values, or 0 when n is not a square.
int SquareSide(int n);

// Bounds of one layer, so that no size of a spec overflows the library's int
// indices or asks for absurd buffers: values of one sample's output, of a
// convolution's im2col matrix, and parameters of one layer, at most
// kMaxLayerValues (2^26, 512 MB of doubles); kernels and strides at most
// kMaxKernel. The whole network keeps kMaxNetworkParams.
inline constexpr int64_t kMaxLayerValues = int64_t{1} << 26;
inline constexpr int kMaxKernel = 64;

// The network of these layers, or InvalidArgument naming `field` when it
// would have more than kMaxNetworkParams parameters.
absl::StatusOr<Network> CheckedNetwork(
    std::vector<std::shared_ptr<const Layer>> layers, const std::string& field);

// InvalidArgument naming `field` when value > kMaxLayerValues.
absl::Status CheckLayerValues(int64_t value, const std::string& field,
                              const char* what);

}  // namespace sparrow::core

#endif  // SPARROW_CORE_TRAIN_MODELS_LAYERED_H_
