// Elementwise activation functions and their derivatives.
#ifndef SPARROW_CORE_MODELS_ACTIVATION_H_
#define SPARROW_CORE_MODELS_ACTIVATION_H_

#include <cmath>

#include "Eigen/Core"
#include "absl/strings/string_view.h"

namespace sparrow::core {

enum class Activation { kLinear, kTanh, kSigmoid, kRelu, kLeakyRelu };

// Slope of leaky ReLU for negative inputs: max(v, 0) + 0.1 min(v, 0) (Bemporad,
// Sec. 5.3).
inline constexpr double kLeakyReluSlope = 0.1;

// tanh within 2 ulp of std::tanh at about 40 % of its cost (glibc's tanh goes
// through expm1, and tanh is most of a simulation's time). |x| < 0.625: the
// odd rational approximation x + x^3 P(x^2)/Q(x^2) of the Cephes library
// (S. Moshier); elsewhere 1 - 2/(exp(2|x|) + 1), which has no cancellation
// there. NaN stays NaN, +-Inf gives +-1. Checked against std::tanh in
// activation_test.
inline double Tanh(double x) {
  const double a = std::fabs(x);
  if (a < 0.625) {
    if (x == 0.0) return x;  // keeps the sign of zero
    const double z = x * x;
    const double p =
        (-9.64399179425052238628e-1 * z - 9.92877231001918586564e1) * z -
        1.61468768441708447952e3;
    const double q =
        ((z + 1.12811678491632931402e2) * z + 2.23548839060100448583e3) * z +
        4.84406305325125486048e3;
    return x + x * z * p / q;
  }
  return std::copysign(1.0 - 2.0 / (std::exp(2.0 * a) + 1.0), x);
}

// "linear", "tanh", "sigmoid", "relu", "leaky_relu".
absl::string_view ActivationName(Activation a);

// The scalar forms, shared by the batch and the per-step paths so both agree
// to the bit (and NaN propagates through every activation).
inline double Sigmoid(double v) {
  // 1/(1+exp(-v)) computed as 0.5 + 0.5 tanh(v/2): no overflow for large |v|.
  return 0.5 + 0.5 * Tanh(0.5 * v);
}
inline double Relu(double v) { return v < 0.0 ? 0.0 : v; }
inline double LeakyRelu(double v) { return v < 0.0 ? kLeakyReluSlope * v : v; }

// z = f(v), elementwise.
template <typename In, typename Out>
void ApplyActivation(Activation a, const In& v, Out&& z) {
  switch (a) {
    case Activation::kLinear:
      z = v;
      break;
    case Activation::kTanh:
      z = v.unaryExpr([](double t) { return Tanh(t); });
      break;
    case Activation::kSigmoid:
      z = v.unaryExpr([](double t) { return Sigmoid(t); });
      break;
    case Activation::kRelu:
      z = v.unaryExpr([](double t) { return Relu(t); });
      break;
    case Activation::kLeakyRelu:
      z = v.unaryExpr([](double t) { return LeakyRelu(t); });
      break;
  }
}

// z[i] = f(v[i]) for i < n: the per-step form for simulations, where an
// Eigen expression over a dynamic column costs more than the few elements.
inline void ApplyActivation(Activation a, const double* v, double* z, int n) {
  switch (a) {
    case Activation::kLinear:
      for (int i = 0; i < n; ++i) z[i] = v[i];
      break;
    case Activation::kTanh:
      for (int i = 0; i < n; ++i) z[i] = Tanh(v[i]);
      break;
    case Activation::kSigmoid:
      for (int i = 0; i < n; ++i) z[i] = Sigmoid(v[i]);
      break;
    case Activation::kRelu:
      for (int i = 0; i < n; ++i) z[i] = Relu(v[i]);
      break;
    case Activation::kLeakyRelu:
      for (int i = 0; i < n; ++i) z[i] = LeakyRelu(v[i]);
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
