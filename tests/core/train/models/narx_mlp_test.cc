// The linear-plus-neural NARX model through the trainer: it starts at the
// least-squares ARX fit, reports that fit, training improves on it, and SBDL's
// row groups hold a lag's linear weight with its network weights.
#include "core/train/models/narx_mlp.h"

#include <cmath>
#include <memory>
#include <string>
#include <utility>

#include "core/optim/sbdl/sbdl.h"
#include "core/train/trainer.h"
#include "gtest/gtest.h"
#include "tests/core/train/testing/small_problems.h"

namespace sparrow::core {
namespace {

// Two training traces and one test trace of the mildly nonlinear second-order
// system of testing::SineTraces.
TrainData SecondOrderData() {
  data::SequenceData all = testing::SineTraces(3, 300);
  TrainData d;
  d.test_seq = all;
  d.test_seq.traces = {all.traces[2]};
  all.traces.pop_back();
  d.train_seq = std::move(all);
  return d;
}

// 2 + 2 lags (and u(t)), 6 tanh units, a linear term; L-BFGS.
TrainConfig LinearNarx(int lbfgs_iterations) {
  TrainConfig c;
  NarxMlpKind& narx = c.model.kind.emplace<NarxMlpKind>();
  narx.lags.input_lags = 2;
  narx.lags.output_lags = 2;
  narx.linear = true;
  c.model.hidden = {6};
  c.model.init_scale = 0.5;
  c.seed = 2;
  LbfgsOptions lbfgs;
  lbfgs.stop.max_iterations = lbfgs_iterations;
  c.optimizer = lbfgs;
  return c;
}

TEST(LinearNarxTest, StartsAtTheArxFitAndImprovesOnItInSimulation) {
  TrainConfig c = LinearNarx(100);
  c.model.as<NarxMlpKind>().simulation_error = true;
  auto result = Train(c, SecondOrderData(), nullptr);
  ASSERT_TRUE(result.ok()) << result.status();
  const Metrics& m = result->metrics;
  // The ARX model explains most of the output (simulated, on the test
  // trace)...
  EXPECT_GT(m.linear_test_bfr, 80.0);
  EXPECT_GT(m.linear_train_bfr, 80.0);
  // ...and the network adds part of the tanh it misses.
  EXPECT_LT(m.test_rmse, m.linear_test_rmse) << result->summary.BriefReport();
  EXPECT_LT(m.train_rmse, m.linear_train_rmse);
}

// With a validation split the ARX start is the first candidate for the best
// iterate: training that only makes the model worse (Adam with a far too
// large step) ends at the linear model, never below it on validation, and
// says so.
TEST(LinearNarxTest, TheLinearStartIsACandidateForTheBestIterate) {
  TrainConfig c = LinearNarx(0);
  AdamOptions adam;
  adam.learning_rate = 0.5;
  adam.stop.max_iterations = 5;
  c.optimizer = adam;
  TrainData d = SecondOrderData();
  d.validation_seq = d.test_seq;
  auto result = Train(c, d, nullptr);
  ASSERT_TRUE(result.ok()) << result.status();
  const Metrics& m = result->metrics;
  EXPECT_EQ(m.validation_rmse, m.linear_validation_rmse);
  EXPECT_NE(result->summary.message.find(
                "no iterate scored better on the validation split than the "
                "starting point (the fitted linear model)"),
            std::string::npos)
      << result->summary.message;
  // A good run still ends at its best iterate.
  TrainConfig good = LinearNarx(100);
  good.model.as<NarxMlpKind>().simulation_error = true;
  auto better = Train(good, d, nullptr);
  ASSERT_TRUE(better.ok()) << better.status();
  EXPECT_LT(better->metrics.validation_rmse,
            better->metrics.linear_validation_rmse);
  EXPECT_EQ(better->summary.message.find("starting point"), std::string::npos);
  // A warm start is a candidate too: the same bad training from the good
  // model ends at that model, and says so.
  TrainConfig warm = c;
  warm.warm_start = std::make_shared<const Model>(better->model);
  auto from_warm = Train(warm, d, nullptr);
  ASSERT_TRUE(from_warm.ok()) << from_warm.status();
  EXPECT_EQ(from_warm->model.params, better->model.params);
  EXPECT_EQ(from_warm->metrics.validation_rmse,
            better->metrics.validation_rmse);
  EXPECT_NE(from_warm->summary.message.find(
                "than the starting point (the model it started from)"),
            std::string::npos)
      << from_warm->summary.message;
  // Not a sweep path's point before: that point must end at a model trained
  // with its own weight.
  warm.warm_start_from_path = true;
  auto from_path = Train(warm, d, nullptr);
  ASSERT_TRUE(from_path.ok()) << from_path.status();
  EXPECT_NE(from_path->model.params, better->model.params);
  EXPECT_EQ(from_path->summary.message.find("starting point"),
            std::string::npos);
}

TEST(LinearNarxTest, WithoutTheOptionThereIsNoLinearFit) {
  TrainConfig c = LinearNarx(2);
  c.model.as<NarxMlpKind>().linear = false;
  auto result = Train(c, SecondOrderData(), nullptr);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(std::isnan(result->metrics.linear_test_rmse));
  EXPECT_EQ(result->model.params.size(),
            c.model.hidden[0] * (1 + 5) + c.model.hidden[0] + 1);
}

TEST(LinearNarxTest, SbdlRowGroupsPruneALagsLinearWeightWithItsColumn) {
  TrainConfig c = LinearNarx(0);
  SbdlOptions sbdl;
  sbdl.groups = SbdlGroups::kRow;
  sbdl.lambda = {30.0};
  sbdl.inner_epochs = 20;
  sbdl.learning_rate = 1e-2;
  sbdl.stop.max_iterations = 6;
  c.optimizer = sbdl;
  auto result = Train(c, SecondOrderData(), nullptr);
  ASSERT_TRUE(result.ok()) << result.status();
  const Model& model = result->model;
  // Regressor [u(t), u(t-1), u(t-2), y(t-1), y(t-2)] into 6 neurons; L (1 x
  // 5) after the 6 * 5 + 6 + 6 + 1 network parameters.
  const int inputs = 5, neurons = 6,
            linear = neurons * inputs + 2 * neurons + 1;
  ASSERT_EQ(model.params.size(), linear + inputs);
  ASSERT_EQ(model.mask.size(), model.params.size());
  // A lag's group holds its column and its linear weight: pruned together.
  // (A column can also die alone, when pruning leaves its neurons
  // disconnected, and the lag then still enters through L.)
  int removed = 0;
  for (int k = 0; k < inputs; ++k) {
    if (model.mask(linear + k) != 0.0) continue;
    EXPECT_EQ(model.mask.segment(k * neurons, neurons).cwiseAbs().maxCoeff(),
              0.0)
        << "input " << k;
    ++removed;
  }
  EXPECT_GE(removed, 1) << result->summary.BriefReport();
  EXPECT_LT(removed, inputs);
  // The removed regressors are the lags neither the network nor L reads.
  int removed_lags = 0;
  for (const std::string& name : result->metrics.removed) {
    removed_lags += name.rfind("hidden", 0) == 0 ? 0 : 1;
  }
  EXPECT_EQ(removed_lags, removed);
}

}  // namespace
}  // namespace sparrow::core
