// The recurrent networks over sequences (RnnKind, LstmKind).
#include "core/train/models/recurrent.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "core/models/layers/dense.h"
#include "core/models/layers/lstm.h"
#include "core/models/layers/rnn.h"
#include "core/models/layers/step_dense.h"
#include "core/models/mlp.h"
#include "core/train/models/layered.h"
#include "core/util/status_macros.h"

namespace sparrow::core {
namespace {

using Layers = std::vector<std::shared_ptr<const Layer>>;

template <typename Kind>
class RecurrentFamily : public LayeredFamily {
 public:
  const char* name() const override { return Kind::kName; }

  void Resolve(int n_in, const data::TableData* images,
               ModelConfig* config) const override {
    Kind& k = config->as<Kind>();
    if (k.steps != 0) return;
    if (images != nullptr && images->image_channels == 1) {
      k.steps = images->image_height;
    } else {
      k.steps = SquareSide(n_in);
    }
  }

  absl::StatusOr<Network> Build(const ModelConfig& config, int n_in,
                                int n_out) const override {
    const Kind& k = config.as<Kind>();
    const std::string field = absl::StrCat("model.", Kind::kName);
    if (k.steps < 1 || n_in % k.steps != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".steps is ", k.steps, "; the ", n_in,
          " inputs of a sample must be a whole number of steps (set steps; "
          "0 means the image height)"));
    }
    if (k.hidden.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(field,
                       ".hidden is empty; give the layer widths, e.g. "
                       "[128, 128]"));
    }
    const int steps = k.steps;
    if (k.sequence_output && n_out % steps != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".sequence_output: the ", n_out,
                       " outputs of a sample must be a whole number of steps (",
                       steps, ")"));
    }
    Layers layers;
    int width = n_in / steps;
    for (size_t i = 0; i < k.hidden.size(); ++i) {
      const int h = k.hidden[i];
      const std::string layer = absl::StrCat(field, ".hidden[", i, "]");
      if (h < 1 || h > kMaxLayerWidth) {
        return absl::InvalidArgumentError(absl::StrCat(
            layer, " is ", h, "; it must be in 1..", kMaxLayerWidth));
      }
      const int64_t rows = std::is_same_v<Kind, LstmKind> ? 4 * int64_t{h} : h;
      SPARROW_RETURN_IF_ERROR(CheckLayerValues(rows * (int64_t{width} + h + 2),
                                               layer, "its parameters"));
      SPARROW_RETURN_IF_ERROR(
          CheckLayerValues(rows * steps, layer, "its gate values per sample"));
      const bool all_steps = k.sequence_output || i + 1 < k.hidden.size();
      layers.push_back(Recurrent(k, steps, width, h, all_steps, config.init));
      width = h;
    }
    SPARROW_RETURN_IF_ERROR(CheckLayerValues(
        (int64_t{width} + 1) * n_out, field, "the output layer's parameters"));
    if (k.sequence_output) {
      layers.push_back(std::make_shared<StepDenseLayer>(
          steps, width, n_out / steps, config.init));
    } else {
      layers.push_back(std::make_shared<DenseLayer>(
          width, n_out, Activation::kLinear, true, config.init));
    }
    return CheckedNetwork(std::move(layers), field);
  }

  std::vector<std::string> LayerNames(
      const ModelConfig& config) const override {
    std::vector<std::string> names;
    for (size_t i = 0; i < config.as<Kind>().hidden.size(); ++i) {
      names.push_back(absl::StrCat(Kind::kName, i + 1));
    }
    names.push_back("output");
    return names;
  }

 private:
  static std::shared_ptr<const Layer> Recurrent(const Kind& k, int steps,
                                                int in, int hidden,
                                                bool all_steps, InitLaw init) {
    if constexpr (std::is_same_v<Kind, RnnKind>) {
      return std::make_shared<RnnLayer>(steps, in, hidden, all_steps, init,
                                        k.activation);
    } else {
      return std::make_shared<LstmLayer>(steps, in, hidden, all_steps, init);
    }
  }
};

}  // namespace

const ModelFamily& RnnKind::Family() {
  static const auto* const kFamily = new RecurrentFamily<RnnKind>;
  return *kFamily;
}

const ModelFamily& LstmKind::Family() {
  static const auto* const kFamily = new RecurrentFamily<LstmKind>;
  return *kFamily;
}

}  // namespace sparrow::core
