// Small data and models the trainer tests share.
#ifndef SPARROW_TESTS_CORE_TRAIN_TESTING_SMALL_PROBLEMS_H_
#define SPARROW_TESTS_CORE_TRAIN_TESTING_SMALL_PROBLEMS_H_

#include <cmath>
#include <utility>

#include "core/train/trainer.h"
#include "core/util/random.h"

namespace sparrow::core::testing {

// y = 10 + 5 sin(a) + b on a, b ~ U[-2, 2): train, validation and test tables
// of the given sizes (0 = none), drawn in that order from one seeded stream.
inline TrainData SineTables(int train, int validation, int test) {
  Rng rng(4);
  TrainData d;
  auto make = [&](int n, data::TableData* t) {
    if (n == 0) return;
    t->x.resize(2, n);
    t->y.resize(1, n);
    for (int j = 0; j < n; ++j) {
      const double a = 4 * rng.Uniform() - 2, b = 4 * rng.Uniform() - 2;
      t->x.col(j) << a, b;
      t->y(0, j) = 10 + 5 * std::sin(a) + b;
    }
    t->input_names = {"a", "b"};
    t->output_names = {"y"};
  };
  make(train, &d.train_table);
  make(validation, &d.validation_table);
  make(test, &d.test_table);
  return d;
}

// `traces` traces of `samples` samples of a damped second-order system
// driven by a seeded random-phase sum of sines: input "u", output "y".
inline data::SequenceData SineTraces(int traces, int samples) {
  Rng rng(7);
  data::SequenceData s;
  s.n_u = 1;
  s.n_y = 1;
  s.input_names = {"u"};
  s.output_names = {"y"};
  for (int k = 0; k < traces; ++k) {
    const double phase = 6.0 * rng.Uniform();
    data::Trace t;
    t.u.resize(1, samples);
    t.y.resize(1, samples);
    double x1 = 0.0, x2 = 0.0;
    for (int j = 0; j < samples; ++j) {
      const double u = std::sin(0.11 * j + phase) + 0.5 * std::sin(0.37 * j);
      t.u(0, j) = u;
      t.y(0, j) = x1 + 0.1 * std::tanh(x1);
      const double next = 1.5 * x1 - 0.7 * x2 + 0.2 * u;
      x2 = x1;
      x1 = next;
    }
    s.traces.push_back(std::move(t));
  }
  return s;
}

// A state-space RNN with nx 2 and 4 + 4 tanh units, light regularization,
// seed 3; the caller sets the optimizer.
inline TrainConfig SmallRnnConfig() {
  TrainConfig c;
  StateSpaceRnnSpec& rnn = c.model.kind.emplace<StateSpaceRnnKind>().rnn;
  rnn.nx = 2;
  rnn.fx_hidden = {4};
  rnn.fy_hidden = {4};
  c.model.init_scale = 0.5;
  c.rho_x0 = 1e-3;
  c.rho_theta = 1e-4;
  c.seed = 3;
  return c;
}

// SmallRnnConfig trained by NAILM for `epochs` epochs.
inline TrainConfig SmallNailmConfig(int epochs) {
  TrainConfig c = SmallRnnConfig();
  NailmOptions nailm;
  nailm.stop.max_iterations = epochs;
  c.optimizer = nailm;
  return c;
}

}  // namespace sparrow::core::testing

#endif  // SPARROW_TESTS_CORE_TRAIN_TESTING_SMALL_PROBLEMS_H_
