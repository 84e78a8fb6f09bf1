#include "core/optim/lbfgs/lbfgs.h"

#include <limits>
#include <vector>

#include "core/optim/lbfgs/state.h"
#include "gtest/gtest.h"
#include "tests/core/optim/test_problems.h"

namespace sparrow::core {
namespace {

TEST(LbfgsTest, MinimizesRosenbrock) {
  testing::Rosenbrock problem(10);
  Eigen::VectorXd w = Eigen::VectorXd::Constant(10, -1.0);
  LbfgsOptions options;
  options.stop.max_iterations = 2000;
  const Summary s = MinimizeLbfgs(options, problem, &w, nullptr);
  EXPECT_LT((w - Eigen::VectorXd::Ones(10)).norm(), 1e-5) << s.BriefReport();
  EXPECT_LT(s.final_loss, 1e-10);
  EXPECT_FALSE(s.history.empty());
  EXPECT_LT(s.iterations, 100) << s.BriefReport();  // 79 (2026-11-27)
}

TEST(LbfgsTest, SolvesLeastSquares) {
  testing::LeastSquares problem(8, 200, 1, 5);
  Eigen::VectorXd w = Eigen::VectorXd::Zero(8);
  const Summary s = MinimizeLbfgs(LbfgsOptions(), problem, &w, nullptr);
  EXPECT_LT((w - problem.solution()).norm(), 1e-6) << s.BriefReport();
  EXPECT_EQ(s.termination, Termination::kConverged);
}

TEST(LbfgsTest, IterationBudgetIsHonoured) {
  testing::Rosenbrock problem(10);
  Eigen::VectorXd w = Eigen::VectorXd::Constant(10, -1.0);
  LbfgsOptions options;
  options.stop.max_iterations = 5;
  const Summary s = MinimizeLbfgs(options, problem, &w, nullptr);
  EXPECT_EQ(s.termination, Termination::kMaxIterations);
  EXPECT_LE(s.iterations, 5);
  EXPECT_LT(s.final_loss, s.initial_loss);
}

// (w0 - 3)^2 + (w1 - 1)^2 where w0 < 2, +Inf beyond (a model that diverges
// past some step): the infimum 1 is at the boundary, where the strong-Wolfe
// search's expansion overshoots into the infinite region.
class Walled : public Objective {
 public:
  int num_params() const override { return 2; }
  double Evaluate(const Eigen::VectorXd& w, Eigen::VectorXd* grad) override {
    if (w(0) >= 2.0) return std::numeric_limits<double>::infinity();
    // The minimizer as a dynamic vector: GCC 12 warns (-Warray-bounds, a
    // false positive) about AVX loads from a temporary Vector2d here.
    const Eigen::VectorXd d = w - Eigen::VectorXd::LinSpaced(2, 3.0, 1.0);
    if (grad != nullptr) *grad = 2.0 * d;
    return d.squaredNorm();
  }
};

TEST(LbfgsTest, BacktracksWhenTheSearchEndsWhereTheLossIsInfinite) {
  Walled problem;
  Eigen::VectorXd w = Eigen::VectorXd::Zero(2);
  LbfgsOptions options;
  options.stop.max_iterations = 30;
  const Summary s = MinimizeLbfgs(options, problem, &w, nullptr);
  // Without the backtracking the run ended at the start (loss 10) after one
  // search. With it, every search gains ground towards the wall (slowly: the
  // step towards the minimum beyond it is cut to a tenth at a time).
  EXPECT_EQ(s.termination, Termination::kMaxIterations) << s.BriefReport();
  EXPECT_LT(s.final_loss, 1.2) << s.BriefReport();
  EXPECT_LT(w(0), 2.0);
  EXPECT_GT(w(0), 1.8);
}

class AbortAt : public IterationCallback {
 public:
  CallbackResult OnIteration(IterationRecord* r) override {
    return r->iteration >= 3 ? CallbackResult::kAbort
                             : CallbackResult::kContinue;
  }
};

TEST(LbfgsTest, CallbackCancels) {
  testing::Rosenbrock problem(10);
  Eigen::VectorXd w = Eigen::VectorXd::Constant(10, -1.0);
  AbortAt abort;
  const Summary s = MinimizeLbfgs(LbfgsOptions(), problem, &w, &abort);
  EXPECT_EQ(s.termination, Termination::kUserAbort);
  EXPECT_EQ(s.iterations, 3);
}

// A start where the gradient vanishes is a stall, not a convergence, when
// the run checks for stalls.
TEST(LbfgsTest, AZeroGradientAtTheStartIsAStall) {
  testing::Rosenbrock problem(4);
  Eigen::VectorXd w = Eigen::VectorXd::Ones(4);  // the minimum: g = 0
  LbfgsOptions options;
  Summary s = MinimizeLbfgs(options, problem, &w, nullptr);
  EXPECT_EQ(s.termination, Termination::kConverged);
  options.stop.stall_window = 100;
  s = MinimizeLbfgs(options, problem, &w, nullptr);
  EXPECT_EQ(s.termination, Termination::kStalled);
  EXPECT_NE(s.message.find("gradient is ~0 at the starting point"),
            std::string::npos)
      << s.message;
}

// LbfgsStateFits accepts the states a run reports (no pairs yet, then 1 to
// `memory` pairs) and refuses a state of another size or pair count.
TEST(LbfgsTest, StateFitsWhatARunReports) {
  class Keep : public IterationCallback {
   public:
    CallbackResult OnIteration(IterationRecord* r) override {
      if (r->optimizer_state != nullptr) states.push_back(*r->optimizer_state);
      return CallbackResult::kContinue;
    }
    std::vector<Eigen::VectorXd> states;
  } keep;
  testing::Rosenbrock problem(6);
  Eigen::VectorXd w = Eigen::VectorXd::Constant(6, -1.0);
  LbfgsOptions options;
  options.memory = 3;
  options.stop.max_iterations = 8;
  MinimizeLbfgs(options, problem, &w, &keep);
  ASSERT_GE(keep.states.size(), 5u);
  for (const Eigen::VectorXd& state : keep.states) {
    EXPECT_TRUE(LbfgsStateFits(state, 6, 3)) << state.size();
  }
  Eigen::VectorXd last = keep.states.back();
  ASSERT_EQ(last(0), 3);                     // a full ring
  EXPECT_FALSE(LbfgsStateFits(last, 7, 3));  // another problem size
  EXPECT_FALSE(LbfgsStateFits(last, 6, 2));  // more pairs than the memory
  last(0) = 2;
  EXPECT_FALSE(LbfgsStateFits(last, 6, 3));  // count and size disagree
}

TEST(LbfgsTest, DefaultOptionsValidate) {
  EXPECT_TRUE(LbfgsOptions().Validate().ok());
  LbfgsOptions o;
  o.memory = 0;
  EXPECT_NE(o.Validate().message().find("memory"), std::string::npos);
}

}  // namespace
}  // namespace sparrow::core
