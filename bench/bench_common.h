// Shared set-up of the benchmarks: the NAILS damper model, its parameters, and
// a synthetic damper-like trace for when the real data is absent.
#ifndef SPARROW_BENCH_BENCH_COMMON_H_
#define SPARROW_BENCH_BENCH_COMMON_H_

#include <cmath>

#include "Eigen/Core"
#include "core/data/dataset.h"
#include "core/models/state_space_rnn.h"
#include "core/util/random.h"

namespace sparrow::core::bench {

// Z-scores every row of m in place.
inline void ZScoreRows(Eigen::MatrixXd* m) {
  for (int r = 0; r < m->rows(); ++r) {
    auto row = m->row(r);
    const double mean = row.mean();
    row.array() -= mean;
    const double sd =
        std::sqrt(row.squaredNorm() / static_cast<double>(row.size()));
    if (sd > 0.0) row /= sd;
  }
}

// A smooth synthetic trace of `samples` steps: a few random sinusoids through a
// saturating first-order system, z-scored.
inline data::Trace SyntheticTrace(int samples, uint64_t seed) {
  Rng rng(seed);
  data::Trace t;
  t.u.resize(1, samples);
  t.y.resize(1, samples);
  double amp[4], freq[4], phase[4];
  for (int i = 0; i < 4; ++i) {
    amp[i] = rng.Uniform() + 0.2;
    freq[i] = 0.002 + 0.03 * rng.Uniform();
    phase[i] = 2.0 * M_PI * rng.Uniform();
  }
  double x = 0.0;
  for (int k = 0; k < samples; ++k) {
    double u = 0.0;
    for (int i = 0; i < 4; ++i)
      u += amp[i] * std::sin(2.0 * M_PI * freq[i] * k + phase[i]);
    t.u(0, k) = u;
    t.y(0, k) = std::tanh(2.0 * x) + 0.3 * u;
    x = 0.9 * x + 0.1 * u;
  }
  ZScoreRows(&t.u);
  ZScoreRows(&t.y);
  return t;
}

// Bemporad Sec. 5.1: nx = 4, one hidden layer of 4 tanh units in fx and fy,
// feedthrough.
inline StateSpaceRnnSpec DamperSpec(int num_traces = 1) {
  StateSpaceRnnSpec s;
  s.nx = 4;
  s.nu = 1;
  s.ny = 1;
  s.fx_hidden = {4};
  s.fy_hidden = {4};
  s.activation = Activation::kTanh;
  s.feedthrough = true;
  s.initial_state = InitialState::kFree;
  s.num_traces = num_traces;
  return s;
}

// Bemporad Sec. 5.1.1 (Silverbox): nx = 8, three hidden layers of 8 tanh units
// in fx and fy, no feedthrough, an initial-state encoder with two hidden layers
// of 4 on the past 8 outputs and 8 inputs; 649 parameters.
inline StateSpaceRnnSpec SilverboxSpec() {
  StateSpaceRnnSpec s;
  s.nx = 8;
  s.nu = 1;
  s.ny = 1;
  s.fx_hidden = {8, 8, 8};
  s.fy_hidden = {8, 8, 8};
  s.activation = Activation::kTanh;
  s.feedthrough = false;
  s.initial_state = InitialState::kEncoder;
  s.encoder.hidden = {4, 4};
  s.encoder.past_outputs = 8;
  s.encoder.past_inputs = 8;
  return s;
}

// Glorot-normal parameters scaled by the paper's sigma0 = 0.15, seed 1.
inline Eigen::VectorXd DamperTheta(const StateSpaceRnn& rnn) {
  Eigen::VectorXd theta(rnn.num_params());
  Rng rng(1);
  rnn.Initialize(0.15, &rng, theta.data());
  return theta;
}

}  // namespace sparrow::core::bench

#endif  // SPARROW_BENCH_BENCH_COMMON_H_
