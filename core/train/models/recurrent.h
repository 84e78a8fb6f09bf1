// The recurrent networks over sequences (rnn: Elman layers, lstm: LSTM
// layers): their entries in ModelConfig::kind.
#ifndef SPARROW_CORE_TRAIN_MODELS_RECURRENT_H_
#define SPARROW_CORE_TRAIN_MODELS_RECURRENT_H_

#include <vector>

#include "core/models/activation.h"

namespace sparrow::core {

class ModelFamily;

// What both recurrent kinds have: stacked layers of these widths over
// `steps` steps (0 = the image height, or the side of a square input), then
// a linear output layer at the last step or at every step.
struct RecurrentConfig {
  std::vector<int> hidden;
  int steps = 0;
  bool sequence_output = false;
};

struct RnnKind : RecurrentConfig {
  static constexpr char kName[] = "rnn";
  static const ModelFamily& Family();  // core/train/models/recurrent.cc
  Activation activation = Activation::kTanh;
};

struct LstmKind : RecurrentConfig {
  static constexpr char kName[] = "lstm";
  static const ModelFamily& Family();  // core/train/models/recurrent.cc
};

}  // namespace sparrow::core

#endif  // SPARROW_CORE_TRAIN_MODELS_RECURRENT_H_
