#include "core/train/model_registry.h"

#include <array>

namespace sparrow::core {

const ModelFamily& FamilyOf(ModelKind kind) {
  // Indexed by ModelKind; one line per kind.
  static const auto* const kFamilies =
      new std::array<std::unique_ptr<ModelFamily>, 3>{
          MakeMlpFamily(),            // ModelKind::kMlp
          MakeNarxMlpFamily(),        // ModelKind::kNarxMlp
          MakeStateSpaceRnnFamily(),  // ModelKind::kStateSpaceRnn
      };
  return *(*kFamilies)[static_cast<size_t>(kind)];
}

}  // namespace sparrow::core
