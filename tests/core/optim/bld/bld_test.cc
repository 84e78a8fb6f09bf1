#include "core/optim/bld/bld.h"

#include <numeric>

#include "core/models/mlp.h"
#include "core/optim/bld/layered_objective.h"
#include "gtest/gtest.h"
#include "tests/testing/finite_difference.h"

namespace sparrow::core {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;

// A bias-free sigmoid network and data from a teacher network of the same
// shape plus noise: a small, well-posed least-squares problem.
struct Problem {
  explicit Problem(std::vector<int> hidden, int rows = 60, int inputs = 3,
                   uint64_t seed = 5) {
    MlpSpec spec{inputs, hidden, 1, Activation::kSigmoid, Activation::kLinear};
    spec.bias = false;
    mlp = Mlp(spec);
    Rng rng(seed);
    VectorXd teacher(mlp.num_params());
    mlp.Initialize(1.0, &rng, teacher.data());
    x = testing::RandomMatrix(inputs, rows, seed + 1);
    Mlp::Cache c;
    mlp.Forward(teacher.data(), x, &c);
    y = c.output() + 0.05 * testing::RandomMatrix(1, rows, seed + 2);
    w0.resize(mlp.num_params());
    mlp.Initialize(1.0, &rng, w0.data());
  }
  Mlp mlp;
  MatrixXd x, y;
  VectorXd w0;
};

TEST(LayeredObjectiveTest, GradientMatchesFiniteDifferences) {
  Problem p({4, 3});
  LayeredObjective f(&p.mlp.network(), &p.x, &p.y, 0.01);
  VectorXd grad;
  f.Evaluate(p.w0, &grad);
  const VectorXd fd = testing::NumericGradient(
      [&](const VectorXd& w) { return f.Evaluate(w, nullptr); }, p.w0);
  EXPECT_LT(testing::RelativeError(grad, fd), 1e-6);
  // f = (1/P) sum e^2 + rho |w|^2: no 1/2 anywhere.
  Mlp::Cache c;
  p.mlp.Forward(p.w0.data(), p.x, &c);
  EXPECT_NEAR(f.Evaluate(p.w0, nullptr),
              (c.output() - p.y).squaredNorm() / 60 + 0.01 * p.w0.squaredNorm(),
              1e-12);
}

TEST(LayeredObjectiveTest, BlockEvaluationsEqualFullOnes) {
  Problem p({5, 4, 3});
  LayeredObjective f(&p.mlp.network(), &p.x, &p.y, 0.02);
  VectorXd full_grad;
  for (int l = 0; l < f.num_layers(); ++l) {
    const int off = f.block_offset(l), size = f.block_size(l);
    VectorXd moved = p.w0;
    moved.segment(off, size).array() += 0.1;
    const double value = f.Evaluate(moved, &full_grad);
    f.SetBlock(p.w0, l);
    VectorXd block_grad;
    const double block_value =
        f.EvaluateBlock(moved.segment(off, size), &block_grad);
    EXPECT_NEAR(block_value, value, 1e-12) << "layer " << l;
    EXPECT_LT((block_grad - full_grad.segment(off, size)).cwiseAbs().maxCoeff(),
              1e-12)
        << "layer " << l;
  }
}

TEST(LayeredObjectiveTest, MinibatchPiecesSumToTheObjective) {
  // ALGORITHMS.md §4.1 erratum: f_h = (1/P) sum_{p in B_h} E_p + |B_h|/P rho
  // |w|^2, so the gradients of a partition add up to grad f.
  Problem p({4, 3}, 50);
  LayeredObjective f(&p.mlp.network(), &p.x, &p.y, 0.03);
  VectorXd full;
  f.Evaluate(p.w0, &full);
  std::vector<int> order(50);
  std::iota(order.begin(), order.end(), 0);
  VectorXd sum = VectorXd::Zero(full.size()), g;
  VectorXd block_sum = VectorXd::Zero(f.block_size(1));
  for (int begin = 0; begin < 50; begin += 16) {
    f.SetMinibatch(order, begin, std::min(50, begin + 16));
    f.MinibatchForward(p.w0, 0);
    f.MinibatchGradient(p.w0, &g);
    sum += g;
    f.MinibatchBlockGradient(p.w0, 1, &g);
    block_sum += g;
  }
  EXPECT_LT((sum - full).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_LT((block_sum - full.segment(f.block_offset(1), f.block_size(1)))
                .cwiseAbs()
                .maxCoeff(),
            1e-12);
}

TEST(B2ldTest, ReachesAStationaryPointWithConditionsHolding) {
  Problem p({4, 3});
  LayeredObjective f(&p.mlp.network(), &p.x, &p.y, 1e-3 / p.mlp.num_params());
  B2ldOptions o;
  o.gradient_tolerance = 1e-4;
  o.relative_decrease = 0.0;  // stop on the gradient only
  o.stop.max_iterations = 2000;
  VectorXd w = p.w0;
  B2ldStats stats;
  const double f0 = f.Evaluate(w, nullptr);
  const Summary s = MinimizeB2ld(o, f, &w, nullptr, &stats);
  VectorXd grad;
  const double f1 = f.Evaluate(w, &grad);
  EXPECT_EQ(s.termination, Termination::kConverged) << s.message;
  EXPECT_LE(grad.norm(), 1e-4);
  EXPECT_LT(f1, f0);
  EXPECT_TRUE(stats.conditions_held);
  int updates = 0;
  for (int l = 0; l < 3; ++l) {
    updates += stats.updates[l];
    EXPECT_EQ(stats.updates[l], stats.lbfgs_accepted[l] + stats.armijo_used[l]);
  }
  EXPECT_GT(updates, 0);
  EXPECT_GT(f0, 2.0 * f1);  // real progress, not a lucky start
  RecordProperty("sweeps", s.iterations);
  // The objective decreases monotonically over the sweeps.
  for (size_t i = 1; i < s.history.size(); ++i) {
    EXPECT_LE(s.history[i].loss, s.history[i - 1].loss + 1e-15);
  }
}

TEST(B2ldTest, ExactLastLayerZeroesItsBlockGradient) {
  Problem p({5, 4});
  LayeredObjective f(&p.mlp.network(), &p.x, &p.y, 1e-3);
  B2ldOptions o;
  o.exact_last_layer = true;
  o.order = LayerOrder::kForward;  // the last layer is solved last
  o.stop.max_iterations = 1;
  VectorXd w = p.w0;
  B2ldStats stats;
  MinimizeB2ld(o, f, &w, nullptr, &stats);
  ASSERT_EQ(stats.updates[2], 1);
  VectorXd grad;
  f.Evaluate(w, &grad);
  EXPECT_LT(grad.segment(f.block_offset(2), f.block_size(2)).norm(), 1e-9);
  EXPECT_TRUE(stats.conditions_held);
}

TEST(B2ldTest, DeterministicAndValidated) {
  Problem p({4, 3});
  LayeredObjective f(&p.mlp.network(), &p.x, &p.y, 1e-4);
  B2ldOptions o;
  o.stop.max_iterations = 5;
  o.order = LayerOrder::kReshuffled;
  o.seed = 3;
  VectorXd a = p.w0, b = p.w0;
  MinimizeB2ld(o, f, &a, nullptr);
  MinimizeB2ld(o, f, &b, nullptr);
  EXPECT_EQ(a, b);
  o.epsilon_decay = 1.0;
  EXPECT_FALSE(o.Validate().ok());
  o.epsilon_decay = 0.5;
  o.sigma = 1.0;  // larger than armijo_gamma
  EXPECT_FALSE(o.Validate().ok());
}

TEST(BlingTest, LayerwiseAndSimultaneousStepsDecreaseTheObjective) {
  for (bool simultaneous : {false, true}) {
    Problem p({6, 5, 4}, 200);
    LayeredObjective f(&p.mlp.network(), &p.x, &p.y, 1e-3 / p.mlp.num_params());
    BlingOptions o;
    o.simultaneous = simultaneous;
    o.batch_size = 20;
    o.stop.max_iterations = 60;
    VectorXd w = p.w0;
    const double f0 = f.Evaluate(w, nullptr);
    const Summary s = MinimizeBling(o, f, &w, nullptr);
    EXPECT_EQ(s.termination, Termination::kMaxIterations);
    EXPECT_LT(f.Evaluate(w, nullptr), 0.5 * f0)
        << (simultaneous ? "IG" : "BLInG");
  }
}

TEST(BlingTest, EachLayerStepIsBoundedByAlpha) {
  // With beta <= |d| the normalized step has length exactly alpha: one
  // minibatch = one step per layer.
  Problem p({4, 3}, 32);
  LayeredObjective f(&p.mlp.network(), &p.x, &p.y, 0.0);
  BlingOptions o;
  o.batch_size = 32;
  o.stop.max_iterations = 1;
  o.alpha0 = 0.01;
  o.beta = 1e-12;
  VectorXd w = p.w0;
  MinimizeBling(o, f, &w, nullptr);
  for (int l = 0; l < f.num_layers(); ++l) {
    const int off = f.block_offset(l), size = f.block_size(l);
    EXPECT_NEAR((w - p.w0).segment(off, size).norm(), 0.01, 1e-12);
  }
}

TEST(BlingTest, OrdersAndMinibatchSchemesAreDeterministic) {
  for (auto order : {LayerOrder::kBackward, LayerOrder::kForward}) {
    for (auto scheme :
         {MinibatchOrder::kIncremental, MinibatchOrder::kStochastic,
          MinibatchOrder::kReshuffled}) {
      Problem p({4, 3}, 64);
      LayeredObjective f(&p.mlp.network(), &p.x, &p.y, 1e-4);
      BlingOptions o;
      o.order = order;
      o.minibatch = scheme;
      o.batch_size = 16;
      o.stop.max_iterations = 3;
      o.seed = 9;
      VectorXd a = p.w0, b = p.w0;
      MinimizeBling(o, f, &a, nullptr);
      MinimizeBling(o, f, &b, nullptr);
      EXPECT_EQ(a, b);
      EXPECT_NE(a, p.w0);
    }
  }
  BlingOptions bad;
  bad.order = LayerOrder::kReshuffled;
  EXPECT_FALSE(bad.Validate().ok());
}

}  // namespace
}  // namespace sparrow::core
