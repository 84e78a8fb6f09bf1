// The convolutional network on images: its entry in ModelConfig::kind.
#ifndef SPARROW_CORE_TRAIN_MODELS_CNN_H_
#define SPARROW_CORE_TRAIN_MODELS_CNN_H_

#include <vector>

#include "core/models/activation.h"

namespace sparrow::core {

class ModelFamily;

// One layer of a cnn model, as the spec's CnnLayer.
struct CnnLayerConfig {
  enum class Type { kConv, kMaxPool, kFlatten, kDense };
  Type type = Type::kDense;
  int units = 0;  // conv: filters; dense: units
  int kernel = 3;
  int stride = 0;  // 0 = 1 (conv), the window side (max pool)
  int padding = 0;
  int size = 0;  // max pool: window side (0 = 2); flatten: expected size
                 // (0 = any)
  Activation activation = Activation::kRelu;
};

struct CnnKind {
  static constexpr char kName[] = "cnn";
  static const ModelFamily& Family();  // core/train/models/cnn.cc

  // The input's shape; 0 = the data's (resolved before building).
  int channels = 0, height = 0, width = 0;
  // Hidden layers in order; a linear output layer follows.
  std::vector<CnnLayerConfig> layers;
};

}  // namespace sparrow::core

#endif  // SPARROW_CORE_TRAIN_MODELS_CNN_H_
