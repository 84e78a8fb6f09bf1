// The linear-plus-neural state-space RNN through the trainer: it starts at the
// subspace fit, reports that fit, and training improves on it.
#include "core/train/models/state_space_rnn.h"

#include <cmath>

#include "core/optim/gauss_newton/gauss_newton.h"
#include "core/train/state_groups.h"
#include "core/train/trainer.h"
#include "core/util/random.h"
#include "gtest/gtest.h"

namespace sparrow::core {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;

// A lightly damped oscillator with a cubic stiffness (a discrete Duffing
// system, like Silverbox) driven by filtered noise: a linear model of order 2
// explains most of it and misses the cubic part.
data::SequenceData Duffing(int samples, uint64_t seed) {
  Rng rng(seed);
  MatrixXd u(1, samples), y(1, samples);
  double p = 0.0, v = 0.0, filtered = 0.0;
  for (int k = 0; k < samples; ++k) {
    filtered = 0.7 * filtered + 0.3 * rng.Normal();
    u(0, k) = filtered;
    y(0, k) = p;
    const double a = -0.15 * p - 0.1 * v - 0.1 * p * p * p + 0.1 * filtered;
    v += a;
    p += v;
  }
  data::SequenceData s;
  s.n_u = 1;
  s.n_y = 1;
  s.input_names = {"u"};
  s.output_names = {"y"};
  s.traces.push_back({u, y});
  return s;
}

TrainConfig LinearPlusNeural(int iterations) {
  TrainConfig c;
  StateSpaceRnnSpec& rnn = c.model.kind.emplace<StateSpaceRnnKind>().rnn;
  rnn.nx = 2;
  rnn.fx_hidden = {8};
  rnn.fy_hidden = {8};
  rnn.linear = true;
  c.model.init_scale = 0.5;
  LbfgsOptions lbfgs;
  lbfgs.stop.max_iterations = iterations;
  c.optimizer = lbfgs;
  c.seed = 1;
  return c;
}

TEST(LinearPlusNeuralTest, StartsAtTheSubspaceFitAndImprovesOnItOnTestData) {
  TrainData data;
  data.train_seq = Duffing(2000, 1);
  data.test_seq = Duffing(1000, 2);
  auto result = Train(LinearPlusNeural(300), data, nullptr);
  ASSERT_TRUE(result.ok()) << result.status();
  const Metrics& m = result->metrics;
  // The linear model already explains most of the output...
  EXPECT_GT(m.linear_train_bfr, 50.0);
  EXPECT_GT(m.linear_test_bfr, 50.0);
  EXPECT_TRUE(std::isnan(m.linear_validation_bfr));
  // ...and the network adds what it misses, on held-out data too.
  EXPECT_LT(m.test_rmse, 0.5 * m.linear_test_rmse)
      << "linear " << m.linear_test_rmse << " "
      << result->summary.BriefReport();
  EXPECT_GT(m.test_bfr, m.linear_test_bfr);
}

// Subsequences of one long record with encoder initial states: NAILM trains
// on windows (run on two threads), and the metrics are still those of the
// whole record, from the encoder's state at its start.
TEST(SubsequencesTest, AnEncoderModelTrainsOnWindowsOfALongRecord) {
  TrainData data;
  data.train_seq = Duffing(3000, 1);
  data.test_seq = Duffing(1000, 2);
  TrainConfig c = LinearPlusNeural(0);
  StateSpaceRnnKind& kind = c.model.as<StateSpaceRnnKind>();
  kind.rnn.initial_state = InitialState::kEncoder;
  kind.rnn.encoder = {{6}, 4, 4};
  NailmOptions nailm;
  nailm.stop.max_iterations = 40;
  nailm.threads = 2;
  c.optimizer = nailm;
  auto whole = Train(c, data, nullptr);
  ASSERT_TRUE(whole.ok()) << whole.status();
  kind.subsequence_length = 200;
  kind.subsequence_stride = 200;
  auto windows = Train(c, data, nullptr);
  ASSERT_TRUE(windows.ok()) << windows.status();
  EXPECT_NE(windows->model.params, whole->model.params);
  // Both fit: better than the linear start on held-out data.
  for (const auto* r : {&*whole, &*windows}) {
    EXPECT_LT(r->metrics.test_rmse, r->metrics.linear_test_rmse)
        << r->summary.BriefReport();
    EXPECT_TRUE(std::isfinite(r->metrics.train_rmse));
  }
}

// Windows with a free initial state each: the model has one x0 per window,
// and the linear start gives each window the linear model's state at its
// start, so the windows begin exactly where the whole-record linear
// simulation is. Training then improves on the linear model, and the metrics
// estimate the whole record's x0 as on new data.
TEST(SubsequencesTest, AFreeInitialStateModelTrainsOnWindowsWithOneX0Each) {
  TrainData data;
  data.train_seq = Duffing(3000, 1);
  data.test_seq = Duffing(1000, 2);
  TrainConfig c = LinearPlusNeural(0);
  c.rho_x0 = 0.0;  // so that the x0 penalty does not differ between the two
  StateSpaceRnnKind& kind = c.model.as<StateSpaceRnnKind>();
  NailmOptions nailm;
  nailm.stop.max_iterations = 1;
  c.optimizer = nailm;
  auto whole = Train(c, data, nullptr);
  ASSERT_TRUE(whole.ok()) << whole.status();
  kind.subsequence_length = 500;  // 6 windows tile the record
  auto start = Train(c, data, nullptr);
  ASSERT_TRUE(start.ok()) << start.status();
  const int nx = kind.rnn.nx;
  EXPECT_EQ(start->model.params.size(), whole->model.params.size() + 5 * nx);
  EXPECT_EQ(start->model.config.as<StateSpaceRnnKind>().rnn.num_traces, 6);
  EXPECT_NEAR(start->summary.initial_loss, whole->summary.initial_loss,
              1e-9 * whole->summary.initial_loss);

  nailm.stop.max_iterations = 40;
  c.optimizer = nailm;
  auto trained = Train(c, data, nullptr);
  ASSERT_TRUE(trained.ok()) << trained.status();
  const Metrics& m = trained->metrics;
  EXPECT_LT(m.test_rmse, 0.5 * m.linear_test_rmse)
      << trained->summary.BriefReport();
  EXPECT_LT(m.train_rmse, m.linear_train_rmse);
}

// As many windows as traces (each trace of 501 samples gives one window of
// its first 500): the model has one learned x0 per window, but the metrics on
// the training traces still estimate each whole trace's x0, as those on the
// same traces given as validation data do.
TEST(SubsequencesTest, TrainingMetricsOfWindowsEstimateTheTracesX0) {
  TrainData data;
  data.train_seq = Duffing(501, 1);
  data.train_seq.traces.push_back(Duffing(501, 3).traces[0]);
  TrainConfig c = LinearPlusNeural(0);
  c.model.as<StateSpaceRnnKind>().subsequence_length = 500;
  NailmOptions nailm;
  nailm.stop.max_iterations = 5;
  c.optimizer = nailm;
  auto r = Train(c, data, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->model.config.as<StateSpaceRnnKind>().rnn.num_traces, 2);
  data.validation_seq = data.train_seq;
  Metrics m;
  ASSERT_TRUE(Evaluate(r->model, data, 0, &m).ok());
  ASSERT_TRUE(Evaluate(r->model, data, 1, &m).ok());
  EXPECT_TRUE(std::isfinite(m.train_rmse));
  EXPECT_EQ(m.train_rmse, m.validation_rmse);
  EXPECT_EQ(r->metrics.train_rmse, m.train_rmse);
}

TEST(SubsequencesTest, AreChosenAutomaticallyForAnEncoderOnALongTrace) {
  StateSpaceRnnKind kind;
  kind.rnn.initial_state = InitialState::kEncoder;
  EXPECT_EQ(SubsequenceLength(kind, kAutoSubsequenceAbove), 0);
  EXPECT_EQ(SubsequenceLength(kind, kAutoSubsequenceAbove + 1),
            kAutoSubsequenceLength);
  kind.subsequence_length = kWholeTraces;
  EXPECT_EQ(SubsequenceLength(kind, 1'000'000), 0);
  kind.subsequence_length = 300;
  EXPECT_EQ(SubsequenceLength(kind, 100), 300);
  kind.subsequence_length = 0;
  kind.rnn.initial_state = InitialState::kFree;  // chosen, never automatic
  EXPECT_EQ(SubsequenceLength(kind, 1'000'000), 0);

  // Training on a trace just over the threshold: the automatic choice is
  // exactly windows of kAutoSubsequenceLength, and not the whole trace.
  TrainData data;
  data.train_seq = Duffing(kAutoSubsequenceAbove + 50, 1);
  TrainConfig c = LinearPlusNeural(0);
  StateSpaceRnnKind& k = c.model.as<StateSpaceRnnKind>();
  k.rnn.initial_state = InitialState::kEncoder;
  k.rnn.encoder = {{4}, 3, 3};
  NailmOptions nailm;
  nailm.stop.max_iterations = 2;
  nailm.threads = 2;
  c.optimizer = nailm;
  auto automatic = Train(c, data, nullptr);
  ASSERT_TRUE(automatic.ok()) << automatic.status();
  k.subsequence_length = kAutoSubsequenceLength;
  auto explicit_windows = Train(c, data, nullptr);
  ASSERT_TRUE(explicit_windows.ok()) << explicit_windows.status();
  k.subsequence_length = kWholeTraces;
  auto whole = Train(c, data, nullptr);
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(automatic->model.params, explicit_windows->model.params);
  EXPECT_NE(automatic->model.params, whole->model.params);
}

// ADMM penalties with a linear part: group Lasso can zero every state group
// (the groups are disjoint), and quantization acts on the networks only.
TEST(LinearPlusNeuralTest, AdmmPenaltiesWithALinearPart) {
  TrainData data;
  data.train_seq = Duffing(300, 1);
  TrainConfig c = LinearPlusNeural(0);
  c.model.as<StateSpaceRnnKind>().rnn.nx = 3;
  NailmOptions nailm;
  nailm.stop.max_iterations = 100;
  c.optimizer = nailm;
  c.admm.stop.max_iterations = 20;
  c.admm.rho = 10.0;
  c.penalty.kind = TrainConfig::Penalty::Kind::kGroupLasso;
  c.penalty.tau = 1e6;
  auto group = Train(c, data, nullptr);
  ASSERT_TRUE(group.ok()) << group.status();
  EXPECT_EQ(group->metrics.model_order, 0.0);

  c.penalty.kind = TrainConfig::Penalty::Kind::kQuantization;
  c.penalty.levels = {-1.0, 0.0, 1.0};
  auto q = Train(c, data, nullptr);
  ASSERT_TRUE(q.ok()) << q.status();
  const StateSpaceRnn rnn(q->model.config.as<StateSpaceRnnKind>().rnn);
  auto on_level = [](double v) { return v == -1.0 || v == 0.0 || v == 1.0; };
  for (int i = 0; i < rnn.fx().num_params(); ++i) {
    EXPECT_TRUE(on_level(q->model.params(rnn.fx_offset() + i))) << i;
  }
  int off_level = 0;
  for (int i = 0; i < 3 * 4; ++i) {
    off_level += !on_level(q->model.params(rnn.ab_offset() + i));
  }
  EXPECT_GT(off_level, 0) << "[A B] was quantized";
}

TEST(LinearPlusNeuralTest, StateGroupsHoldTheLinearPart) {
  StateSpaceRnnSpec spec;
  spec.nx = 3;
  spec.nu = 1;
  spec.ny = 2;
  spec.fx_hidden = {4};
  spec.fy_hidden = {4};
  spec.linear = true;
  const StateSpaceRnn rnn(spec);
  VectorXd w = VectorXd::Zero(rnn.num_params());
  EXPECT_EQ(ModelOrder(rnn, w), 0);
  // Only A(0, 1) non-zero: it reads state 1, which is part of the model.
  w(rnn.ab_offset() + 1 * 3 + 0) = 0.5;
  EXPECT_EQ(ModelOrder(rnn, w), 1);
  // C(1, 2) reads state 2; B(0) drives state 0.
  w(rnn.cd_offset() + 2 * 2 + 1) = 1.0;
  w(rnn.ab_offset() + 3 * 3 + 0) = 1.0;
  EXPECT_EQ(ModelOrder(rnn, w), 3);
  // Every entry of [A B] belongs to exactly one group (ADMM's group Lasso
  // needs disjoint groups), C to the state it reads, D (no state) to none.
  std::vector<int> owners(rnn.num_params(), 0);
  for (const std::vector<int>& g : StateGroups(rnn)) {
    for (int i : g) ++owners[i];
  }
  for (int k = 0; k < 3 * 4; ++k) {
    EXPECT_EQ(owners[rnn.ab_offset() + k], 1) << "AB entry " << k;
  }
  for (int k = 0; k < 2 * 3; ++k) {
    EXPECT_EQ(owners[rnn.cd_offset() + k], 1) << "C entry " << k;
  }
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(owners[rnn.cd_offset() + 3 * 2 + r], 0) << "D(" << r << ")";
  }
}

}  // namespace
}  // namespace sparrow::core
