// Multi-stage runs: each stage trains from the model the one before ended
// with, and the callback sees one run.
#include "core/train/stages.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/train/methods.h"
#include "gtest/gtest.h"
#include "tests/core/train/testing/small_problems.h"

namespace sparrow::core {
namespace {

struct Seen {
  int iteration;
  int stage;
  bool stage_start;
};

class Recorder : public IterationCallback {
 public:
  CallbackResult OnIteration(IterationRecord* r) override {
    seen.push_back({r->iteration, r->stage, r->stage_start});
    return CallbackResult::kContinue;
  }
  std::vector<Seen> seen;
};

TrainStage Stage(std::string name, OptimizerOptions optimizer,
                 int simulation_error = -1) {
  TrainStage stage;
  stage.name = std::move(name);
  stage.optimizer = std::move(optimizer);
  stage.simulation_error = simulation_error;
  return stage;
}

TrainConfig Narx() {
  TrainConfig c;
  NarxMlpKind narx;
  narx.lags.input_lags = 2;
  narx.lags.output_lags = 2;
  c.model.kind = narx;
  c.model.hidden = {6};
  c.seed = 4;
  return c;
}

OptimizerOptions Adam(int epochs) {
  AdamOptions adam;
  adam.learning_rate = 0.01;
  adam.stop.max_iterations = epochs;
  adam.stop.tolerance = 0.0;
  return adam;
}

OptimizerOptions Lbfgs(int epochs) {
  LbfgsOptions lbfgs;
  lbfgs.stop.max_iterations = epochs;
  return lbfgs;
}

TrainResult TrainOrDie(const TrainConfig& c, const TrainData& d,
                       IterationCallback* callback = nullptr) {
  absl::StatusOr<TrainResult> r = Train(c, d, callback);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *std::move(r) : TrainResult{};
}

TrainData SineData() {
  TrainData d;
  d.train_seq = testing::SineTraces(2, 150);
  d.test_seq = testing::SineTraces(1, 100);
  return d;
}

// Adam one step ahead, then L-BFGS on the simulation error: the same model
// as the two runs by hand, the second warm-started from the first.
TEST(StagesTest, EachStageStartsFromTheModelTheOneBeforeEndedWith) {
  const TrainData data = SineData();
  TrainConfig staged = Narx();
  staged.stages = {Stage("one step", Adam(6), 0), Stage("", Lbfgs(5), 1)};
  UseStage(staged.stages[0], &staged);
  ASSERT_TRUE(staged.Validate().ok());
  EXPECT_EQ(IterationBudget(staged), 11);
  Recorder recorder;
  const TrainResult run = TrainOrDie(staged, data, &recorder);

  TrainConfig first = Narx();
  first.optimizer = Adam(6);
  const TrainResult one = TrainOrDie(first, data);
  TrainConfig second = Narx();
  second.optimizer = Lbfgs(5);
  second.model.as<NarxMlpKind>().simulation_error = true;
  second.warm_start = std::make_shared<const Model>(one.model);
  const TrainResult two = TrainOrDie(second, data);

  EXPECT_TRUE(run.model.params == two.model.params);
  EXPECT_EQ(run.metrics.test_rmse, two.metrics.test_rmse);
  EXPECT_EQ(run.summary.iterations,
            one.summary.iterations + two.summary.iterations);
  EXPECT_EQ(run.summary.initial_loss, one.summary.initial_loss);
  EXPECT_EQ(run.summary.final_loss, two.summary.final_loss);
  EXPECT_NE(run.summary.message.find("one step (adam): max_iterations after "
                                     "6; stage 2 (lbfgs): "),
            std::string::npos)
      << run.summary.message;
  // One run to the callback: iterations 1.., the stage marked, and the
  // record between the stages.
  ASSERT_EQ(recorder.seen.size(), run.summary.iterations + 1u);
  int iteration = 0;
  for (const Seen& s : recorder.seen) {
    if (s.stage_start) {
      EXPECT_EQ(s.iteration, 6);
      EXPECT_EQ(s.stage, 1);
      continue;
    }
    EXPECT_EQ(s.iteration, ++iteration);
    EXPECT_EQ(s.stage, iteration <= 6 ? 0 : 1);
  }
  ASSERT_EQ(run.summary.history.size(), run.summary.iterations + 0u);
  EXPECT_EQ(run.summary.history.back().iteration, run.summary.iterations);
}

TEST(StagesTest, AnAbortedStageEndsTheRun) {
  class AbortAt : public IterationCallback {
   public:
    CallbackResult OnIteration(IterationRecord* r) override {
      return r->iteration == 3 ? CallbackResult::kAbort
                               : CallbackResult::kContinue;
    }
  } abort_at_3;
  TrainConfig c = Narx();
  c.stages = {Stage("", Adam(6)), Stage("", Lbfgs(5))};
  UseStage(c.stages[0], &c);
  const TrainResult run = TrainOrDie(c, SineData(), &abort_at_3);
  EXPECT_EQ(run.summary.termination, Termination::kUserAbort);
  EXPECT_EQ(run.summary.iterations, 3);
}

TEST(StagesTest, AnInvalidStageIsNamed) {
  TrainConfig c = Narx();
  AdamOptions bad;
  bad.learning_rate = -1;
  c.stages = {Stage("", Adam(3)), Stage("", bad)};
  UseStage(c.stages[0], &c);
  const absl::Status s = c.Validate();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("stages[1]: ", 0), 0u) << s;
}

}  // namespace
}  // namespace sparrow::core
