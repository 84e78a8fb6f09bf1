#include "core/train/model_registry.h"

#include <type_traits>
#include <variant>

#include "absl/strings/str_cat.h"

namespace sparrow::core {

absl::StatusOr<SequencePrediction> ModelFamily::SimulateScaled(
    const Model&, const Eigen::MatrixXd&, const Eigen::MatrixXd&,
    ThreadPool*) const {
  return absl::InvalidArgumentError(
      absl::StrCat("a ", name(),
                   " model has no simulation; use a narx_mlp or "
                   "state_space_rnn model"));
}

absl::StatusOr<SequencePrediction> ModelFamily::SimulateFromStateScaled(
    const Model&, const Eigen::MatrixXd&, const Eigen::VectorXd&) const {
  return absl::InvalidArgumentError(
      absl::StrCat("a ", name(),
                   " model has no initial state to choose; only "
                   "state_space_rnn models do"));
}

absl::StatusOr<Eigen::MatrixXd> ModelFamily::PredictRowsScaled(
    const Model&, const Eigen::MatrixXd&) const {
  return absl::InvalidArgumentError("row-wise prediction needs an mlp model");
}

std::vector<ParamBlock> ModelFamily::Blocks(const Model& model) const {
  return {{name(), 0, static_cast<int>(model.params.size())}};
}

const ModelFamily& FamilyOf(const ModelKind& kind) {
  return std::visit(
      [](const auto& k) -> const ModelFamily& {
        return std::decay_t<decltype(k)>::Family();
      },
      kind);
}

}  // namespace sparrow::core
