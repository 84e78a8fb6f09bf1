// The one dispatch over the optimizer alternatives: names, stop rules,
// budgets and what a resumed run carries over, per method.
#include "core/train/optimizer.h"

#include <cmath>
#include <limits>

#include "core/train/methods.h"
#include "gtest/gtest.h"

namespace sparrow::core {
namespace {

TEST(OptimizerTest, EveryMethodHasItsSpecName) {
  EXPECT_STREQ(OptimizerName(SgdOptions()), "sgd");
  EXPECT_STREQ(OptimizerName(AdamOptions()), "adam");
  EXPECT_STREQ(OptimizerName(LbfgsOptions()), "lbfgs");
  EXPECT_STREQ(OptimizerName(NailsOptions()), "nails");
  EXPECT_STREQ(OptimizerName(NailmOptions()), "nailm");
  EXPECT_STREQ(OptimizerName(SbdlOptions()), "sbdl");
  EXPECT_STREQ(OptimizerName(B2ldOptions()), "b2ld");
  EXPECT_STREQ(OptimizerName(BlingOptions()), "bling");
}

// The papers' defaults live in the core options.
TEST(OptimizerTest, DefaultsAreThePapers) {
  EXPECT_EQ(SgdOptions().learning_rate, 0.01);
  EXPECT_EQ(SgdOptions().method, FirstOrderOptions::Method::kSgd);
  EXPECT_EQ(AdamOptions().learning_rate, 1e-3);
  EXPECT_EQ(NailsOptions().stop.max_iterations, 250);
  EXPECT_EQ(NailmOptions().method,
            GaussNewtonOptions::Method::kLevenbergMarquardt);
  EXPECT_EQ(SbdlOptions().stop.max_iterations, 10);
  EXPECT_EQ(AdmmOptions().stop.max_iterations, 250);
  for (const OptimizerOptions& o :
       {OptimizerOptions(SgdOptions()), OptimizerOptions(AdamOptions()),
        OptimizerOptions(LbfgsOptions()), OptimizerOptions(NailsOptions()),
        OptimizerOptions(NailmOptions()), OptimizerOptions(B2ldOptions()),
        OptimizerOptions(BlingOptions())}) {
    EXPECT_TRUE(Stop(o).Validate().ok()) << OptimizerName(o);
  }
  EXPECT_TRUE(SbdlOptions().Validate(2).ok());
  EXPECT_TRUE(AdmmOptions().Validate().ok());
}

TEST(OptimizerTest, StopRulesNameTheField) {
  StopRules s;
  s.max_iterations = 0;
  EXPECT_EQ(s.Validate().message(),
            "stop.max_iterations is 0; it must be >= 1");
  s = StopRules();
  s.max_seconds = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(s.Validate().ok());
  s = StopRules();
  s.report_every = 0;
  EXPECT_NE(s.Validate().message().find("report_every"), std::string::npos);
}

TEST(OptimizerTest, CoreMessagesGetTheSpecPath) {
  TrainConfig c;
  AdamOptions adam;
  adam.beta1 = 2;
  c.optimizer = adam;
  EXPECT_NE(c.Validate().message().find("optimizer.adam.beta1 is 2"),
            std::string::npos)
      << c.Validate();
}

// A penalty makes ADMM the outer loop: its iterations are the budget.
TEST(OptimizerTest, BudgetIsTheMethodsOrAdmms) {
  TrainConfig c;
  SbdlOptions sbdl;
  sbdl.stop.max_iterations = 7;
  c.optimizer = sbdl;
  EXPECT_EQ(IterationBudget(c), 7);
  c.optimizer = NailsOptions();
  EXPECT_EQ(IterationBudget(c), 250);
  c.penalty.kind = TrainConfig::Penalty::Kind::kL1;
  c.admm.stop.max_iterations = 40;
  EXPECT_EQ(IterationBudget(c), 40);
  *IterationBudget(&c) = 12;
  EXPECT_EQ(c.admm.stop.max_iterations, 12);
}

TEST(OptimizerTest, ResumeCarriesWhatEachMethodKeeps) {
  ResumePoint p;
  p.step_size = 0.25;
  p.state = Eigen::VectorXd::Constant(3, 1.5);
  TrainConfig c;
  c.optimizer = AdamOptions();
  ResumeMethod(p, &c);
  EXPECT_EQ(std::get<AdamOptions>(c.optimizer).initial_state, p.state);
  c.optimizer = NailmOptions();
  ResumeMethod(p, &c);
  EXPECT_EQ(std::get<NailmOptions>(c.optimizer).lambda0,
            0.25 / NailmOptions().c3);
  c.optimizer = B2ldOptions();
  ResumeMethod(p, &c);
  EXPECT_EQ(std::get<B2ldOptions>(c.optimizer).epsilon0, 0.25);
  c.optimizer = BlingOptions();
  ResumeMethod(p, &c);
  EXPECT_EQ(std::get<BlingOptions>(c.optimizer).alpha0, 0.25);
  // Under ADMM the step size is not a damping; a NaN step is never used.
  c.optimizer = NailmOptions();
  c.penalty.kind = TrainConfig::Penalty::Kind::kL1;
  ResumeMethod(p, &c);
  EXPECT_EQ(std::get<NailmOptions>(c.optimizer).lambda0, 100.0);
  c.penalty.kind = TrainConfig::Penalty::Kind::kNone;
  p.step_size = std::nan("");
  ResumeMethod(p, &c);
  EXPECT_EQ(std::get<NailmOptions>(c.optimizer).lambda0, 100.0);
}

}  // namespace
}  // namespace sparrow::core
