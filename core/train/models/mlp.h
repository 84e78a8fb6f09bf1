// The static MLP on table rows: its entry in ModelConfig::kind. The network
// itself is described by ModelConfig's shared fields (hidden widths,
// activations, bias).
#ifndef SPARROW_CORE_TRAIN_MODELS_MLP_H_
#define SPARROW_CORE_TRAIN_MODELS_MLP_H_

namespace sparrow::core {

class ModelFamily;

struct MlpKind {
  static constexpr char kName[] = "mlp";
  // Defined with the family, in core/train/models/mlp.cc.
  static const ModelFamily& Family();
};

}  // namespace sparrow::core

#endif  // SPARROW_CORE_TRAIN_MODELS_MLP_H_
