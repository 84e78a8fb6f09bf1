// The NARX MLP: its entry in ModelConfig::kind, with the lags of its
// regressors. Its network is described by ModelConfig's shared fields.
#ifndef SPARROW_CORE_TRAIN_MODELS_NARX_MLP_H_
#define SPARROW_CORE_TRAIN_MODELS_NARX_MLP_H_

#include "core/data/narx.h"

namespace sparrow::core {

class ModelFamily;

struct NarxMlpKind {
  static constexpr char kName[] = "narx_mlp";
  static const ModelFamily& Family();  // core/train/models/narx_mlp.cc

  data::NarxLags lags;
  // Train on the free-run simulation error instead of one step ahead.
  bool simulation_error = false;
  // A linear term beside the MLP (MlpSpec::linear), started at the
  // least-squares ARX fit.
  bool linear = false;
};

}  // namespace sparrow::core

#endif  // SPARROW_CORE_TRAIN_MODELS_NARX_MLP_H_
