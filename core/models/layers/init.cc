#include "core/models/layers/init.h"

#include <Eigen/Dense>
#include <cmath>

namespace sparrow::core {
namespace {

void Uniform(double bound, int n, Rng* rng, double* w) {
  for (int i = 0; i < n; ++i) w[i] = bound * (2.0 * rng->Uniform() - 1.0);
}

}  // namespace

void InitWeights(InitLaw law, double sigma0, int fan_in, int fan_out, int n,
                 Rng* rng, double* w) {
  switch (law) {
    case InitLaw::kGlorot:
    case InitLaw::kOrthogonal: {
      const double std = sigma0 * std::sqrt(2.0 / (fan_in + fan_out));
      for (int i = 0; i < n; ++i) w[i] = std * rng->Normal();
      return;
    }
    case InitLaw::kHe: {
      const double std = sigma0 * std::sqrt(2.0 / fan_in);
      for (int i = 0; i < n; ++i) w[i] = std * rng->Normal();
      return;
    }
    case InitLaw::kTorch:
      // kaiming_uniform_(a = sqrt(5)): bound sqrt(6 / ((1 + 5) fan_in)).
      Uniform(sigma0 / std::sqrt(fan_in), n, rng, w);
      return;
  }
}

void InitOrthogonal(double sigma0, int n, int ld, Rng* rng, double* w) {
  Eigen::MatrixXd g(n, n);
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < n; ++i) g(i, j) = rng->Normal();
  }
  const Eigen::HouseholderQR<Eigen::MatrixXd> qr(g);
  const Eigen::MatrixXd q = qr.householderQ();
  for (int j = 0; j < n; ++j) {
    const double sign = qr.matrixQR()(j, j) < 0.0 ? -sigma0 : sigma0;
    for (int i = 0; i < n; ++i) w[j * ld + i] = sign * q(i, j);
  }
}

void InitBiases(InitLaw law, double sigma0, int fan_in, int n, Rng* rng,
                double* b) {
  if (law == InitLaw::kTorch) {
    Uniform(sigma0 / std::sqrt(fan_in), n, rng, b);
  } else {
    for (int i = 0; i < n; ++i) b[i] = 0.0;
  }
}

}  // namespace sparrow::core
