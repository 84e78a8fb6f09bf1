// Running a trained model on new data: free-run simulation from an estimated,
// a zero or a given initial state.
#include "core/train/model.h"

#include <cmath>
#include <string>
#include <utility>
#include <variant>

#include "core/train/trainer.h"
#include "core/util/thread_pool.h"
#include "gtest/gtest.h"
#include "tests/core/train/testing/small_problems.h"

namespace sparrow::core {
namespace {

Model TrainedRnn() {
  TrainData data;
  data.train_seq = testing::SineTraces(2, 120);
  absl::StatusOr<TrainResult> r =
      Train(testing::SmallNailmConfig(10), data, nullptr);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? r->model : Model{};
}

TEST(ModelTest, SimulationFromTheEstimatedStateIsReproducibleFromIt) {
  const Model model = TrainedRnn();
  const data::Trace trace = testing::SineTraces(3, 90).traces[2];
  absl::StatusOr<SequencePrediction> estimated =
      Simulate(model, trace.u, trace.y);
  ASSERT_TRUE(estimated.ok()) << estimated.status();
  ASSERT_EQ(estimated->x0.size(), 2);
  // The same x0, given: the same outputs, from the inputs alone.
  absl::StatusOr<SequencePrediction> given =
      SimulateFromState(model, trace.u, estimated->x0);
  ASSERT_TRUE(given.ok()) << given.status();
  EXPECT_EQ(given->first, 0);
  EXPECT_EQ(given->x0, estimated->x0);
  EXPECT_TRUE(given->y == estimated->y)
      << (given->y - estimated->y).cwiseAbs().maxCoeff();
  // From rest: other outputs early on, the same system later.
  absl::StatusOr<SequencePrediction> zero =
      SimulateFromState(model, trace.u, Eigen::VectorXd::Zero(2));
  ASSERT_TRUE(zero.ok()) << zero.status();
  EXPECT_EQ(zero->y.cols(), trace.u.cols());
  EXPECT_TRUE(zero->y.allFinite());
}

// The x0 estimate's starts run in parallel on a pool: the same state and
// outputs, bit for bit, for every thread count (also more threads than the
// 2 nx + 1 = 5 starts).
TEST(ModelTest, TheEstimatedStateIsTheSameOnEveryThreadCount) {
  const Model model = TrainedRnn();
  const data::Trace trace = testing::SineTraces(3, 90).traces[2];
  absl::StatusOr<SequencePrediction> alone = Simulate(model, trace.u, trace.y);
  ASSERT_TRUE(alone.ok()) << alone.status();
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    absl::StatusOr<SequencePrediction> shared =
        Simulate(model, trace.u, trace.y, &pool);
    ASSERT_TRUE(shared.ok()) << shared.status();
    EXPECT_TRUE(shared->x0 == alone->x0) << threads << " threads";
    EXPECT_TRUE(shared->y == alone->y) << threads << " threads";
  }
}

// A run on two threads scores its validation and test traces with them: the
// same metrics as scoring its model on one thread afterwards.
TEST(ModelTest, ARunsScoresOnItsThreadsEqualThoseOnOne) {
  TrainData data;
  data.train_seq = testing::SineTraces(2, 120);
  data.validation_seq = testing::SineTraces(3, 90);
  data.validation_seq.traces.erase(data.validation_seq.traces.begin(),
                                   data.validation_seq.traces.begin() + 2);
  data.test_seq = testing::SineTraces(4, 80);
  TrainConfig config = testing::SmallNailmConfig(6);
  std::get<NailmOptions>(config.optimizer).threads = 2;
  ASSERT_EQ(RunThreads(config), 2);
  absl::StatusOr<TrainResult> r = Train(config, data, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  Metrics one;
  ASSERT_TRUE(Evaluate(r->model, data, 1, &one).ok());
  ASSERT_TRUE(Evaluate(r->model, data, 2, &one).ok());
  EXPECT_TRUE(std::isfinite(one.validation_rmse));
  EXPECT_EQ(r->metrics.validation_rmse, one.validation_rmse);
  EXPECT_EQ(r->metrics.test_rmse, one.test_rmse);
  EXPECT_EQ(r->metrics.test_bfr, one.test_bfr);
}

TEST(ModelTest, AChosenInitialStateIsCheckedAndNeedsAState) {
  const Model model = TrainedRnn();
  const Eigen::MatrixXd u = Eigen::MatrixXd::Ones(1, 20);
  absl::StatusOr<SequencePrediction> r =
      SimulateFromState(model, u, Eigen::VectorXd::Zero(3));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("(nx)"), std::string::npos) << r.status();
  Eigen::VectorXd nan = Eigen::VectorXd::Zero(2);
  nan(1) = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(SimulateFromState(model, u, nan).ok());
  EXPECT_FALSE(SimulateFromState(model, Eigen::MatrixXd::Ones(2, 20),
                                 Eigen::VectorXd::Zero(2))
                   .ok());

  Model narx;
  narx.config.kind = NarxMlpKind{};
  narx.input_scaling = data::Normalizer::Identity(1);
  narx.output_scaling = data::Normalizer::Identity(1);
  r = SimulateFromState(narx, u, Eigen::VectorXd::Zero(2));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("only state_space_rnn"),
            std::string::npos)
      << r.status();
}

}  // namespace
}  // namespace sparrow::core
