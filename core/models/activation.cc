#include "core/models/activation.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace sparrow::core {

absl::string_view ActivationName(Activation a) {
  switch (a) {
    case Activation::kLinear:
      return "linear";
    case Activation::kTanh:
      return "tanh";
    case Activation::kSigmoid:
      return "sigmoid";
    case Activation::kRelu:
      return "relu";
    case Activation::kLeakyRelu:
      return "leaky_relu";
  }
  return "unknown";
}

absl::StatusOr<Activation> ParseActivation(absl::string_view name) {
  for (Activation a :
       {Activation::kLinear, Activation::kTanh, Activation::kSigmoid,
        Activation::kRelu, Activation::kLeakyRelu}) {
    if (ActivationName(a) == name) return a;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown activation '", name,
                   "'; use one of linear, tanh, sigmoid, relu, leaky_relu"));
}

}  // namespace sparrow::core
