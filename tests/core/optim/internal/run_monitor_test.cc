// The stopping predicates every method shares; here the stall test.
#include "core/optim/internal/run_monitor.h"

#include <limits>

#include "gtest/gtest.h"

namespace sparrow::core::internal {
namespace {

// Feeds `losses` (from an initial `start`) to a monitor; returns the
// iteration it stopped at (0 = never) and leaves the summary in *summary.
int StopsAt(const StopRules& rules, double start,
            const std::vector<double>& losses, Summary* summary) {
  RunMonitor monitor(rules, nullptr, summary);
  const Eigen::VectorXd w = Eigen::VectorXd::Zero(1);
  double previous = start;
  for (size_t i = 0; i < losses.size(); ++i) {
    const int it = static_cast<int>(i) + 1;
    if (auto stop = monitor.EndIteration(it, previous, losses[i], 0.0, w)) {
      summary->termination = *stop;
      return it;
    }
    previous = losses[i];
  }
  return 0;
}

StopRules Window(int k) {
  StopRules rules;
  rules.max_iterations = 1000;
  rules.stall_window = k;
  return rules;
}

TEST(RunMonitorTest, AConstantLossStallsAfterTheWindow) {
  Summary s;
  // The first iteration moves; the next five do not.
  EXPECT_EQ(StopsAt(Window(5), 2.0, std::vector<double>(20, 1.0), &s), 6);
  EXPECT_EQ(s.termination, Termination::kStalled);
  EXPECT_NE(s.message.find("stayed within a relative 1e-06 of 1 for the "
                           "last 5 iterations"),
            std::string::npos)
      << s.message;
  EXPECT_NE(s.message.find("stall_epochs"), std::string::npos);
  EXPECT_STREQ(TerminationName(Termination::kStalled), "stalled");
}

TEST(RunMonitorTest, MovesBeyondTheBandRestartTheCount) {
  // Falls of 1e-5 relative go on; falls of 1e-8 relative do not count.
  std::vector<double> losses;
  double l = 1.0;
  for (int i = 0; i < 30; ++i) losses.push_back(l *= 1 - 1e-5);
  Summary s;
  EXPECT_EQ(StopsAt(Window(3), 1.0, losses, &s), 0);
  for (int i = 0; i < 10; ++i) losses.push_back(l *= 1 - 1e-8);
  EXPECT_EQ(StopsAt(Window(3), 1.0, losses, &s), 33);
  // A spike and its slow recovery (Adam) is movement, not a stall.
  // (A minibatch method's first epoch has no previous loss.)
  std::vector<double> spiky = {1.0, 1.0, 1.5, 1.2, 1.1, 1.05, 1.0, 1.0};
  EXPECT_EQ(
      StopsAt(Window(3), std::numeric_limits<double>::infinity(), spiky, &s),
      0);
  // Off by default, and the absolute tolerance test wins over a stall.
  EXPECT_EQ(StopsAt(StopRules{1000}, 1.0, std::vector<double>(50, 1.0), &s), 0);
  StopRules both = Window(1);
  both.tolerance = 1e-3;
  EXPECT_EQ(StopsAt(both, 2.0, {1.0, 1.0}, &s), 2);
  EXPECT_EQ(s.termination, Termination::kConverged);
}

// A first iteration that moves nothing is a stall at the start, not
// convergence (a model started dead: a tiny init_scale, saturated units).
TEST(RunMonitorTest, NothingMovingInTheFirstIterationIsAStall) {
  StopRules rules = Window(10);
  rules.tolerance = 1e-3;
  Summary s;
  EXPECT_EQ(StopsAt(rules, 1.0, {1.0 - 1e-9, 0.5}, &s), 1);
  EXPECT_EQ(s.termination, Termination::kStalled);
  EXPECT_NE(s.message.find("the first iteration moved the loss from 1 to 1"),
            std::string::npos)
      << s.message;
  EXPECT_NE(s.message.find("init_scale"), std::string::npos);
  // A move beyond the band is the tolerance's to judge, and so is every
  // first iteration without stall detection.
  EXPECT_EQ(StopsAt(rules, 1.0, {1.0 - 1e-5, 0.5}, &s), 1);
  EXPECT_EQ(s.termination, Termination::kConverged);
  EXPECT_EQ(StopsAt(StopRules{1000, 0.0, 1e-3}, 1.0, {1.0}, &s), 1);
  EXPECT_EQ(s.termination, Termination::kConverged);
  // A resume's first iteration continues a run that moved before.
  StopRules resumed = rules;
  resumed.resume_loss = 1.0;
  EXPECT_EQ(StopsAt(resumed, 1.0, {1.0}, &s), 1);
  EXPECT_EQ(s.termination, Termination::kConverged);
}

// Finish says when a run that ended well lowered its loss by less than 0.1 %.
TEST(RunMonitorTest, ARunThatLearnedNothingSaysSo) {
  auto finish = [](double first, double last, Termination t) {
    Summary s;
    RunMonitor monitor(StopRules{}, nullptr, &s);
    s.initial_loss = first;
    s.final_loss = last;
    monitor.Finish(t);
    return s.message;
  };
  const std::string flat =
      finish(1.01918, 1.01908, Termination::kMaxIterations);
  EXPECT_NE(flat.find("the loss fell by only 0.00981 % over the run (from "
                      "1.01918 to 1.01908 at the last iteration): the model "
                      "has learned next to nothing"),
            std::string::npos)
      << flat;
  EXPECT_EQ(finish(1.0, 0.99, Termination::kConverged), "");
  // From a warm start it is not the initialization's fault.
  Summary s;
  StopRules warm;
  warm.warm_start = true;
  RunMonitor monitor(warm, nullptr, &s);
  s.initial_loss = 0.0065;
  s.final_loss = 0.0288;
  monitor.Finish(Termination::kMaxIterations);
  EXPECT_NE(s.message.find("the loss rose by 343 % over the run (from 0.0065 "
                           "to 0.0288 at the last iteration) from the model "
                           "it started from (a warm start): training on added "
                           "nothing; a smaller learning rate"),
            std::string::npos)
      << s.message;
  EXPECT_EQ(s.message.find("init_scale"), std::string::npos);
  // Driven far up from an initialization: the steps, not the start.
  const std::string up = finish(1.0, 1.6e11, Termination::kMaxIterations);
  EXPECT_NE(up.find("the steps are far too large for this problem; try a "
                    "smaller learning rate or step"),
            std::string::npos)
      << up;
  EXPECT_EQ(finish(1.0, 1.0, Termination::kDiverged), "");
  EXPECT_EQ(finish(0.0, 0.0, Termination::kConverged), "");
}

// A minibatch method's initial loss is its first epoch's: after one epoch
// there is nothing to compare it with (the epoch did train); after two there
// is.
TEST(RunMonitorTest, OneEpochOfAMinibatchMethodIsNotCalledNoProgress) {
  auto finish = [](int epochs) {
    Summary s;
    RunMonitor monitor(StopRules{}, nullptr, &s);
    monitor.set_initial_is_first_epoch();
    s.initial_loss = 1.3;
    s.final_loss = 1.3;
    s.iterations = epochs;
    monitor.Finish(Termination::kMaxIterations);
    return s.message;
  };
  EXPECT_EQ(finish(1), "");
  EXPECT_NE(finish(2).find("learned next to nothing"), std::string::npos);
}

// What a progress record reports restarts the test where it was.
TEST(RunMonitorTest, TheStallStateResumes) {
  class Keep : public IterationCallback {
   public:
    CallbackResult OnIteration(IterationRecord* r) override {
      reference = r->stall_reference;
      since = r->stall_since;
      return CallbackResult::kContinue;
    }
    double reference = 0;
    int since = 0;
  } keep;
  Summary s;
  RunMonitor monitor(Window(4), &keep, &s);
  const Eigen::VectorXd w = Eigen::VectorXd::Zero(1);
  EXPECT_FALSE(monitor.EndIteration(1, 2.0, 1.0, 0.0, w));
  EXPECT_FALSE(monitor.EndIteration(2, 1.0, 1.0, 0.0, w));
  EXPECT_EQ(keep.reference, 1.0);
  EXPECT_EQ(keep.since, 1);
  StopRules resumed = Window(4);
  resumed.stall_reference = keep.reference;
  resumed.stall_since = keep.since;
  EXPECT_EQ(StopsAt(resumed, 1.0, {1.0, 1.0, 1.0}, &s), 3);
}

// A resumed run's first iteration compares with the checkpoint's loss, as
// the uninterrupted run compares with its previous epoch's.
TEST(RunMonitorTest, TheFirstResumedIterationComparesWithTheCheckpointsLoss) {
  StopRules rules;
  rules.tolerance = 1e-3;
  Summary s;
  EXPECT_EQ(StopsAt(rules, std::numeric_limits<double>::infinity(), {0.5}, &s),
            0);
  rules.resume_loss = 0.5005;
  EXPECT_EQ(StopsAt(rules, std::numeric_limits<double>::infinity(), {0.5}, &s),
            1);
  EXPECT_EQ(s.termination, Termination::kConverged);
}

}  // namespace
}  // namespace sparrow::core::internal
