// Elementwise activation functions and their derivatives.
#ifndef SPARROW_CORE_MODELS_ACTIVATION_H_
#define SPARROW_CORE_MODELS_ACTIVATION_H_

#include "Eigen/Core"
#include "absl/strings/string_view.h"

namespace sparrow::core {

enum class Activation { kLinear, kTanh, kSigmoid, kRelu, kLeakyRelu };

// Slope of leaky ReLU for negative inputs: max(v, 0) + 0.1 min(v, 0) (Bemporad,
// Sec. 5.3).
inline constexpr double kLeakyReluSlope = 0.1;

// "linear", "tanh", "sigmoid", "relu", "leaky_relu".
absl::string_view ActivationName(Activation a);

// z = f(v), elementwise.
template <typename In, typename Out>
void ApplyActivation(Activation a, const In& v, Out&& z) {
  switch (a) {
    case Activation::kLinear:
      z = v;
      break;
    case Activation::kTanh:
      z.array() = v.array().tanh();
      break;
    case Activation::kSigmoid:
      // 1/(1+exp(-v)) computed as 0.5 + 0.5 tanh(v/2): no overflow for large
      // |v|.
      z.array() = 0.5 + 0.5 * (0.5 * v.array()).tanh();
      break;
    case Activation::kRelu:
      z.array() = v.array().max(0.0);
      break;
    case Activation::kLeakyRelu:
      z.array() = v.array().max(0.0) + kLeakyReluSlope * v.array().min(0.0);
      break;
  }
}

// d = f'(v) given v and z = f(v), elementwise.
template <typename In, typename Out>
void ActivationDerivative(Activation a, const In& v, const In& z, Out&& d) {
  switch (a) {
    case Activation::kLinear:
      d.setOnes();
      break;
    case Activation::kTanh:
      d.array() = 1.0 - z.array().square();
      break;
    case Activation::kSigmoid:
      d.array() = z.array() * (1.0 - z.array());
      break;
    case Activation::kRelu:
      d.array() = (v.array() > 0.0).template cast<double>();
      break;
    case Activation::kLeakyRelu:
      d.array() =
          kLeakyReluSlope +
          (1.0 - kLeakyReluSlope) * (v.array() > 0.0).template cast<double>();
      break;
  }
}

}  // namespace sparrow::core

#endif  // SPARROW_CORE_MODELS_ACTIVATION_H_
