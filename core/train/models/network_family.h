// What the MLP-based families (mlp, narx_mlp) share: one parameter block
// named "mlp" in a stored model, and the network's per-layer sparsity and
// removed units as the trained model's structure.
#ifndef SPARROW_CORE_TRAIN_MODELS_NETWORK_FAMILY_H_
#define SPARROW_CORE_TRAIN_MODELS_NETWORK_FAMILY_H_

#include <vector>

#include "core/train/model_registry.h"

namespace sparrow::core {

class NetworkFamily : public ModelFamily {
 public:
  std::vector<ParamBlock> Blocks(const Model& m) const override {
    return {{"mlp", 0, static_cast<int>(m.params.size())}};
  }
  void DescribeStructure(const TrainSetup& setup, const Eigen::VectorXd& params,
                         Metrics* metrics) const override {
    DescribeNetwork(setup, params, metrics);
  }
};

}  // namespace sparrow::core

#endif  // SPARROW_CORE_TRAIN_MODELS_NETWORK_FAMILY_H_
