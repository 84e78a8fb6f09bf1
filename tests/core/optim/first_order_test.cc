#include "core/optim/first_order/first_order.h"

#include <chrono>
#include <thread>

#include "gtest/gtest.h"
#include "tests/core/optim/test_problems.h"

namespace sparrow::core {
namespace {

using testing::LeastSquares;

struct MethodCase {
  const char* name;
  FirstOrderOptions options;
};

FirstOrderOptions Sgd(double lr, double momentum, bool nesterov) {
  FirstOrderOptions o;
  o.method = FirstOrderOptions::Method::kSgd;
  o.learning_rate = lr;
  o.momentum = momentum;
  o.nesterov = nesterov;
  return o;
}
FirstOrderOptions Adam(double lr, bool amsgrad) {
  FirstOrderOptions o;
  o.learning_rate = lr;
  o.amsgrad = amsgrad;
  return o;
}

class FirstOrderConvergenceTest : public ::testing::TestWithParam<MethodCase> {
};

TEST_P(FirstOrderConvergenceTest, ReachesThePlantedLeastSquaresSolution) {
  for (int batches : {1, 8}) {
    LeastSquares problem(5, 400, batches, 3);
    FirstOrderOptions options = GetParam().options;
    options.stop.max_iterations = 400;
    Eigen::VectorXd w = Eigen::VectorXd::Zero(5);
    const Summary s = MinimizeFirstOrder(options, problem, &w, nullptr);
    EXPECT_LT((w - problem.solution()).norm(), 1e-3)
        << GetParam().name << " batches=" << batches << " " << s.BriefReport();
    EXPECT_LT(s.final_loss, 1e-6);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Methods, FirstOrderConvergenceTest,
    ::testing::Values(MethodCase{"sgd", Sgd(0.1, 0.0, false)},
                      MethodCase{"momentum", Sgd(0.05, 0.9, false)},
                      MethodCase{"nesterov", Sgd(0.05, 0.9, true)},
                      MethodCase{"adam", Adam(0.05, false)},
                      MethodCase{"amsgrad", Adam(0.05, true)}),
    [](const auto& info) { return std::string(info.param.name); });

// One full-batch SGD step of lr 1 from w = 0 moves w by exactly the clipped
// gradient: its direction, with norm clip_norm when the gradient is longer.
TEST(FirstOrderTest, ClipNormScalesLongGradientsDownToIt) {
  for (double clip : {0.0, 0.5, 1e6}) {
    LeastSquares problem(5, 100, 1, 3);
    FirstOrderOptions options = Sgd(1.0, 0.0, false);
    options.clip_norm = clip;
    options.stop.max_iterations = 1;
    Eigen::VectorXd w = Eigen::VectorXd::Zero(5);
    Eigen::VectorXd grad(5);
    problem.EvaluateBatch(w, 0, &grad);
    MinimizeFirstOrder(options, problem, &w, nullptr);
    const double norm = grad.norm();
    const double expected = clip > 0.0 && norm > clip ? clip : norm;
    EXPECT_NEAR(w.norm(), expected, 1e-12 * norm) << "clip " << clip;
    EXPECT_NEAR((-w).normalized().dot(grad.normalized()), 1.0, 1e-12);
  }
  FirstOrderOptions bad;
  bad.clip_norm = -1.0;
  EXPECT_NE(bad.Validate().message().find("clip_norm"), std::string::npos);
}

TEST(FirstOrderTest, DefaultOptionsValidate) {
  EXPECT_TRUE(FirstOrderOptions().Validate().ok());
}

TEST(FirstOrderTest, ValidationNamesTheField) {
  FirstOrderOptions o;
  o.learning_rate = -1;
  EXPECT_NE(o.Validate().message().find("learning_rate is -1"),
            std::string::npos);
  o = FirstOrderOptions();
  o.beta2 = 1.0;
  EXPECT_NE(o.Validate().message().find("beta2"), std::string::npos);
  o = FirstOrderOptions();
  o.stop.max_iterations = 0;
  EXPECT_NE(o.Validate().message().find("stop.max_iterations"),
            std::string::npos);
}

TEST(FirstOrderTest, DivergenceIsReportedAndTheLastFiniteIterateKept) {
  LeastSquares problem(5, 100, 1, 3);
  FirstOrderOptions options = Sgd(1e3, 0.0, false);
  options.stop.max_iterations = 10000;
  Eigen::VectorXd w = Eigen::VectorXd::Zero(5);
  const Summary s = MinimizeFirstOrder(options, problem, &w, nullptr);
  EXPECT_EQ(s.termination, Termination::kDiverged);
  EXPECT_NE(s.message.find("smaller learning rate"), std::string::npos)
      << s.message;
  EXPECT_TRUE(w.allFinite());
}

TEST(FirstOrderTest, ToleranceStopsAConvergedRun) {
  LeastSquares problem(5, 400, 1, 3);
  FirstOrderOptions options = Adam(0.05, false);
  options.stop.max_iterations = 100000;
  options.stop.tolerance = 1e-12;
  Eigen::VectorXd w = Eigen::VectorXd::Zero(5);
  const Summary s = MinimizeFirstOrder(options, problem, &w, nullptr);
  EXPECT_EQ(s.termination, Termination::kConverged) << s.BriefReport();
  EXPECT_LT(s.iterations, 100000);
}

class CountingCallback : public IterationCallback {
 public:
  explicit CountingCallback(int stop_at, CallbackResult answer)
      : stop_at_(stop_at), answer_(answer) {}
  CallbackResult OnIteration(IterationRecord* r) override {
    ++calls;
    last_iteration = r->iteration;
    EXPECT_NE(r->params, nullptr);
    return r->iteration >= stop_at_ ? answer_ : CallbackResult::kContinue;
  }
  int calls = 0;
  int last_iteration = 0;

 private:
  int stop_at_;
  CallbackResult answer_;
};

TEST(FirstOrderTest, CallbackAbortsAndFinishes) {
  for (CallbackResult answer :
       {CallbackResult::kAbort, CallbackResult::kFinish}) {
    LeastSquares problem(5, 100, 1, 3);
    FirstOrderOptions options = Adam(0.01, false);
    options.stop.max_iterations = 1000;
    CountingCallback callback(7, answer);
    Eigen::VectorXd w = Eigen::VectorXd::Zero(5);
    const Summary s = MinimizeFirstOrder(options, problem, &w, &callback);
    EXPECT_EQ(s.iterations, 7);
    EXPECT_EQ(callback.calls, 7);
    EXPECT_EQ(s.termination, answer == CallbackResult::kAbort
                                 ? Termination::kUserAbort
                                 : Termination::kEarlyStopped);
  }
}

// A callback that takes 100 ms per record: its time is not the optimizer's.
class SlowCallback : public IterationCallback {
 public:
  CallbackResult OnIteration(IterationRecord*) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return CallbackResult::kContinue;
  }
};

TEST(FirstOrderTest, ReportedSecondsLeaveOutTheCallbacksTime) {
  LeastSquares problem(5, 100, 1, 3);
  FirstOrderOptions options = Adam(0.01, false);
  options.stop.max_iterations = 5;
  SlowCallback callback;
  Eigen::VectorXd w = Eigen::VectorXd::Zero(5);
  const auto start = std::chrono::steady_clock::now();
  const Summary s = MinimizeFirstOrder(options, problem, &w, &callback);
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_GE(wall, 0.5);
  EXPECT_LT(s.seconds, 0.2);
  EXPECT_LT(s.history.back().elapsed_seconds, 0.2);
}

TEST(FirstOrderTest, SameSeedSameIterates) {
  Eigen::VectorXd a, b;
  for (Eigen::VectorXd* w : {&a, &b}) {
    LeastSquares problem(5, 100, 4, 3);
    FirstOrderOptions options = Adam(0.01, false);
    options.stop.max_iterations = 20;
    options.seed = 9;
    *w = Eigen::VectorXd::Zero(5);
    MinimizeFirstOrder(options, problem, w, nullptr);
  }
  EXPECT_EQ(a, b);
}

// Captures the iterate and the optimizer state after epoch `at`.
class StateCapture : public IterationCallback {
 public:
  explicit StateCapture(int at) : at_(at) {}
  CallbackResult OnIteration(IterationRecord* r) override {
    if (r->iteration == at_) {
      params = *r->params;
      if (r->optimizer_state != nullptr) state = *r->optimizer_state;
    }
    return CallbackResult::kContinue;
  }
  Eigen::VectorXd params, state;

 private:
  int at_;
};

TEST(FirstOrderTest, ResumingFromAReportedStateContinuesExactly) {
  // Full batch: 20 epochs in one go equal 10 epochs, then 10 more from the
  // reported iterate and state, up to the summation order of the batch (the
  // test problem shuffles its rows every epoch); without the state (fresh
  // moments) they do not.
  for (bool amsgrad : {false, true}) {
    LeastSquares problem(5, 100, 1, 3);
    FirstOrderOptions options = Adam(0.05, amsgrad);
    options.stop.max_iterations = 20;
    Eigen::VectorXd straight = Eigen::VectorXd::Zero(5);
    StateCapture capture(10);
    MinimizeFirstOrder(options, problem, &straight, &capture);
    ASSERT_EQ(capture.state.size(), 1 + (amsgrad ? 3 : 2) * 5);
    EXPECT_EQ(capture.state(0), 10.0);  // the update count

    options.stop.max_iterations = 10;
    options.initial_state = capture.state;
    Eigen::VectorXd resumed = capture.params;
    MinimizeFirstOrder(options, problem, &resumed, nullptr);
    EXPECT_LT((resumed - straight).norm(), 1e-12);

    options.initial_state.resize(0);
    Eigen::VectorXd fresh = capture.params;
    MinimizeFirstOrder(options, problem, &fresh, nullptr);
    EXPECT_GT((fresh - straight).norm(), 1e-6);
  }
}

TEST(FirstOrderTest, ResumedMinibatchRunIsBitIdentical) {
  // 8 shuffled minibatches per epoch: each epoch's order depends on the seed
  // and the update count only, so the resumed run draws the same batches.
  for (const FirstOrderOptions& base :
       {Adam(0.05, false), Sgd(0.05, 0.9, true)}) {
    LeastSquares problem(5, 100, 8, 3);
    FirstOrderOptions options = base;
    options.stop.max_iterations = 6;
    Eigen::VectorXd straight = Eigen::VectorXd::Zero(5);
    StateCapture capture(3);
    MinimizeFirstOrder(options, problem, &straight, &capture);
    options.stop.max_iterations = 3;
    options.initial_state = capture.state;
    Eigen::VectorXd resumed = capture.params;
    MinimizeFirstOrder(options, problem, &resumed, nullptr);
    EXPECT_EQ(resumed, straight);
  }
}

}  // namespace
}  // namespace sparrow::core
