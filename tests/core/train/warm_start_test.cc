// Warm start: a run that starts from a trained model takes its parameters and
// its scalings, and refuses a model of another kind, structure or data.
#include <memory>
#include <string>
#include <utility>

#include "core/train/trainer.h"
#include "gtest/gtest.h"
#include "tests/core/train/testing/small_problems.h"

namespace sparrow::core {
namespace {

// Full-batch SGD without momentum has no state beyond the iterate, so n
// epochs then a warm start of m more is the run of n + m epochs.
TrainConfig SgdMlp(int epochs) {
  TrainConfig c;
  c.model.kind = MlpKind{};
  c.model.hidden = {6};
  SgdOptions sgd;
  sgd.learning_rate = 0.05;
  sgd.stop.max_iterations = epochs;
  sgd.stop.tolerance = 0.0;
  c.optimizer = sgd;
  c.seed = 5;
  return c;
}

TrainResult TrainOrDie(const TrainConfig& c, const TrainData& d) {
  absl::StatusOr<TrainResult> r = Train(c, d, nullptr);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *std::move(r) : TrainResult{};
}

TrainConfig From(TrainConfig c, const Model& start) {
  c.warm_start = std::make_shared<const Model>(start);
  return c;
}

TEST(WarmStartTest, ContinuesTheRunItStartsFrom) {
  const TrainData data = testing::SineTables(200, 0, 50);
  const TrainResult whole = TrainOrDie(SgdMlp(30), data);
  const TrainResult first = TrainOrDie(SgdMlp(12), data);
  // Another seed: the warm start replaces the seeded initialization.
  TrainConfig rest = From(SgdMlp(18), first.model);
  rest.seed = 99;
  const TrainResult second = TrainOrDie(rest, data);
  EXPECT_EQ(second.summary.initial_loss, first.summary.final_loss);
  ASSERT_EQ(second.model.params.size(), whole.model.params.size());
  EXPECT_TRUE(second.model.params == whole.model.params)
      << (second.model.params - whole.model.params).norm();
  EXPECT_EQ(second.metrics.test_rmse, whole.metrics.test_rmse);
}

TEST(WarmStartTest, KeepsTheScalingsOfTheModelItStartsFrom) {
  const TrainData data = testing::SineTables(200, 0, 0);
  const TrainResult first = TrainOrDie(SgdMlp(5), data);
  // Other training rows: fitted scalings would differ.
  TrainData other = testing::SineTables(120, 0, 0);
  other.train_table.x.array() *= 3.0;
  const TrainResult second = TrainOrDie(From(SgdMlp(5), first.model), other);
  EXPECT_EQ(second.model.input_scaling.mean, first.model.input_scaling.mean);
  EXPECT_EQ(second.model.input_scaling.scale, first.model.input_scaling.scale);
  EXPECT_EQ(second.model.output_scaling.mean, first.model.output_scaling.mean);
  // Its loss at the start is the first model's on these rows.
  EXPECT_NE(second.summary.initial_loss, first.summary.final_loss);
  const TrainResult cold = TrainOrDie(SgdMlp(5), other);
  EXPECT_NE(cold.model.input_scaling.scale, first.model.input_scaling.scale);
}

TEST(WarmStartTest, StartsAStateSpaceModelWithItsInitialStates) {
  TrainData data;
  data.train_seq = testing::SineTraces(2, 120);
  const TrainConfig c = testing::SmallNailmConfig(8);
  const TrainResult first = TrainOrDie(c, data);
  const TrainResult second = TrainOrDie(From(c, first.model), data);
  EXPECT_EQ(second.summary.initial_loss, first.summary.final_loss);
  EXPECT_LE(second.summary.final_loss, first.summary.final_loss);
  // With another number of traces the free initial states do not fit.
  TrainData three;
  three.train_seq = testing::SineTraces(3, 80);
  absl::StatusOr<TrainResult> r = Train(From(c, first.model), three, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("x0"), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find("training traces"), std::string::npos)
      << r.status();
}

TEST(WarmStartTest, RefusesAModelOfAnotherStructureOrData) {
  const TrainData data = testing::SineTables(100, 0, 0);
  const TrainResult first = TrainOrDie(SgdMlp(3), data);

  TrainConfig wider = From(SgdMlp(3), first.model);
  wider.model.hidden = {7};
  absl::StatusOr<TrainResult> r = Train(wider, data, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("parameter blocks"), std::string::npos)
      << r.status();

  TrainData renamed = data;
  renamed.train_table.input_names = {"a", "c"};
  r = Train(From(SgdMlp(3), first.model), renamed, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("[a, c]"), std::string::npos)
      << r.status();

  TrainData one_input = data;
  one_input.train_table.x = data.train_table.x.topRows(1);
  one_input.train_table.input_names = {"a"};
  r = Train(From(SgdMlp(3), first.model), one_input, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("inputs [a, b]"), std::string::npos)
      << r.status();

  TrainData seq;
  seq.train_seq = testing::SineTraces(1, 60);
  r = Train(From(testing::SmallRnnConfig(), first.model), seq, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("is a mlp"), std::string::npos)
      << r.status();

  Model broken = first.model;
  broken.params(0) = std::numeric_limits<double>::quiet_NaN();
  r = Train(From(SgdMlp(3), broken), data, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("NaN"), std::string::npos) << r.status();
}

}  // namespace
}  // namespace sparrow::core
