#include "core/models/activation.h"

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

}  // namespace sparrow::core
