#include "translate/sweep.h"

#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/translate/testing/spec_fixture.h"
#include "translate/json.h"

namespace sparrow::translate {
namespace {

// kRnnSpec with rows 121-150 for validation and `sweep` as its sweep block.
v1::JobSpec Spec(const std::string& sweep, bool validation = true) {
  std::string json = kRnnSpec;
  if (validation) {
    json = Replace(json, R"("train": [{"first": 1, "last": 150}])",
                   R"("train": [{"first": 1, "last": 120}],
                      "validation": [{"first": 121, "last": 150}])");
  }
  json = Replace(json, "\"seed\": 7", "\"seed\": 7, \"sweep\": " + sweep);
  auto spec = ParseJobSpecJson(json);
  EXPECT_TRUE(spec.ok()) << spec.status();
  return *spec;
}

TEST(SweepTest, ASpecWithoutOneIsOneTrial) {
  auto spec = ParseJobSpecJson(kRnnSpec);
  ASSERT_TRUE(spec.ok());
  auto trials = ExpandSweep(*spec);
  ASSERT_TRUE(trials.ok()) << trials.status();
  ASSERT_EQ(trials->size(), 1u);
  EXPECT_EQ((*trials)[0].seed, 7u);
  EXPECT_EQ((*trials)[0].warm_from, -1);
  EXPECT_EQ(ToJson((*trials)[0].spec), ToJson(*spec));
}

TEST(SweepTest, SeedsCountUpFromTheSpecsSeedWithoutValidation) {
  auto trials = ExpandSweep(Spec(R"({"seeds": 3})", /*validation=*/false));
  ASSERT_TRUE(trials.ok()) << trials.status();
  ASSERT_EQ(trials->size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ((*trials)[i].seed, 7u + i);
    EXPECT_EQ((*trials)[i].spec.seed(), 7u + i);
    EXPECT_FALSE((*trials)[i].spec.has_sweep());
    EXPECT_TRUE((*trials)[i].settings.empty());
  }
}

TEST(SweepTest, AGridIsEveryCombinationTimesTheSeeds) {
  auto trials = ExpandSweep(Spec(R"({"seeds": 2, "grid": [
      {"field": "regularization.l1.tau", "values": [0.1, 1]},
      {"field": "model.stateSpaceRnn.fxHidden", "values": [[3], [4, 4], [5]]}]})"));
  ASSERT_TRUE(trials.ok()) << trials.status();
  ASSERT_EQ(trials->size(), 12u);
  // The last axis varies fastest, then the seed within each grid point.
  const Trial& t = (*trials)[3];
  EXPECT_EQ(t.seed, 8u);
  EXPECT_DOUBLE_EQ(t.spec.regularization().l1().tau(), 0.1);
  ASSERT_EQ(t.spec.model().state_space_rnn().fx_hidden_size(), 2);
  EXPECT_EQ(t.settings[0].first, "regularization.l1.tau");
  EXPECT_EQ(t.settings[1].second, "[4,4]");
  EXPECT_EQ(TrialLabel(t), "tau=0.1 fxHidden=[4,4] seed=8");
  const v1::SweepTrialOrigin origin = TrialOrigin(t, 12);
  EXPECT_EQ(origin.index(), 3);
  EXPECT_EQ(origin.trials(), 12);
  EXPECT_EQ(origin.label(), "tau=0.1 fxHidden=[4,4] seed=8");
  ASSERT_EQ(origin.settings_size(), 2);
  EXPECT_EQ(origin.settings(0).field(), "regularization.l1.tau");
  EXPECT_EQ(origin.settings(0).value(), "0.1");
  EXPECT_EQ(origin.settings(1).field(), "model.stateSpaceRnn.fxHidden");
  EXPECT_EQ(origin.settings(1).value(), "[4,4]");
  EXPECT_DOUBLE_EQ((*trials)[11].spec.regularization().l1().tau(), 1.0);
  EXPECT_EQ((*trials)[11].spec.model().state_space_rnn().fx_hidden(0), 5);
  for (const Trial& trial : *trials) EXPECT_EQ(trial.warm_from, -1);
}

TEST(SweepTest, APathIsGeometricAndWarmStartedPerSeed) {
  auto trials = ExpandSweep(Spec(R"({"seeds": 2, "path":
      {"field": "regularization.rho_theta", "from": 10, "to": 0.01,
       "points": 4}})"));
  ASSERT_TRUE(trials.ok()) << trials.status();
  ASSERT_EQ(trials->size(), 8u);
  const double expected[] = {10, 1, 0.1, 0.01};
  for (int i = 0; i < 8; ++i) {
    const Trial& t = (*trials)[i];
    EXPECT_NEAR(t.spec.regularization().rho_theta(), expected[i % 4],
                1e-5 * expected[i % 4]);
    EXPECT_EQ(t.seed, 7u + i / 4);
    EXPECT_EQ(t.warm_from, i % 4 == 0 ? -1 : i - 1);
  }
  auto cold = ExpandSweep(Spec(R"({"path": {"field": "regularization.rho_theta",
      "from": 0.01, "to": 10, "points": 3, "cold_start": true}})"));
  ASSERT_TRUE(cold.ok()) << cold.status();
  for (const Trial& t : *cold) EXPECT_EQ(t.warm_from, -1);
  EXPECT_DOUBLE_EQ((*cold)[2].spec.regularization().rho_theta(), 10.0);
}

TEST(SweepTest, APathGivesARepeatedFieldOneValueForEveryEntry) {
  std::string json = Replace(kRnnSpec, R"("optimizer": {"lbfgs": {}})",
                             R"("optimizer": {"sbdl": {"lambda": [1, 2]}})");
  json = Replace(json, R"("train": [{"first": 1, "last": 150}])",
                 R"("train": [{"first": 1, "last": 120}],
                    "validation": [{"first": 121, "last": 150}])");
  json = Replace(json, "\"seed\": 7",
                 R"("seed": 7, "sweep": {"path": {"field":
                     "optimizer.sbdl.lambda", "from": 1, "to": 100,
                     "points": 3}})");
  auto spec = ParseJobSpecJson(json);
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto trials = ExpandSweep(*spec);
  ASSERT_TRUE(trials.ok()) << trials.status();
  ASSERT_EQ(trials->size(), 3u);
  const auto& lambda = (*trials)[1].spec.optimizer().sbdl().lambda();
  ASSERT_EQ(lambda.size(), 1);
  EXPECT_NEAR(lambda[0], 10.0, 1e-12);
}

TEST(SweepTest, RefusesWhatItCannotSweepWithAFix) {
  ExpectError(ExpandSweep(Spec(R"({"grid": [{"field":
      "stages.0.optimizer.adam.learning_rate", "values": [0.1]}]})"))
                  .status(),
              "goes inside 'stages', a list: a sweep sets whole fields");
  ExpectError(ExpandSweep(Spec(R"({"grid": [{"field": "regularization.tua",
      "values": [1]}]})"))
                  .status(),
              "no field 'tua' in Regularization (it has rho_x0, rho_theta");
  ExpectError(ExpandSweep(Spec(R"({"grid": [{"field": "data.csv_path",
      "values": ["a.csv"]}]})"))
                  .status(),
              "cannot vary 'data'");
  ExpectError(ExpandSweep(Spec(R"({"grid": [{"field": "seed",
      "values": [1]}]})"))
                  .status(),
              "use sweep.seeds");
  ExpectError(ExpandSweep(Spec(R"({"grid": [{"field": "stopping.max_epochs.x",
      "values": [1]}]})"))
                  .status(),
              "not a message");
  ExpectError(ExpandSweep(Spec(R"({"grid": [{"field": "stopping.max_epochs",
      "values": []}]})"))
                  .status(),
              "has no values");
  ExpectError(ExpandSweep(Spec(R"({"grid": [{"field": "stopping.max_epochs",
      "values": ["many"]}]})"))
                  .status(),
              "stopping.max_epochs = \"many\" is not a valid spec");
  ExpectError(ExpandSweep(Spec(R"({"path": {"field": "regularization.rho_theta",
          "from": 0, "to": 1, "points": 3}})"))
                  .status(),
              "must both be > 0");
  ExpectError(ExpandSweep(Spec(R"({"path": {"field": "regularization.rho_theta",
          "from": 1, "to": 2, "points": 1}})"))
                  .status(),
              "points is 1");
  ExpectError(ExpandSweep(Spec(R"({"path": {"field": "stopping.max_epochs",
          "from": 1, "to": 2, "points": 2}})"))
                  .status(),
              "not a floating-point field");
  // Another optimizer's option: the trial would set two optimizers.
  ExpectError(ExpandSweep(Spec(R"({"path": {"field": "optimizer.sbdl.lambda",
          "from": 1, "to": 2, "points": 2}})"))
                  .status(),
              "is not a valid spec");
  ExpectError(ExpandSweep(Spec(R"({"seeds": 11, "grid": [
      {"field": "stopping.max_epochs", "values": [1,2,3,4,5,6,7,8,9,10]},
      {"field": "regularization.rho_theta", "values": [1,2,3,4,5,6,7,8,9,10]}
      ]})"))
                  .status(),
              "sweep.seeds: the sweep has 1100 trials (seeds x grid values x "
              "path points); at most 1000");
  // Without seeds, the count is the grid's.
  ExpectError(ExpandSweep(Spec(R"({"grid": [
      {"field": "stopping.max_epochs", "values": [1,2,3,4,5,6,7,8,9,10]},
      {"field": "regularization.rho_theta", "values": [1,2,3,4,5,6,7,8,9,10]},
      {"field": "regularization.rho_x0", "values": [1,2,3,4,5,6,7,8,9,10,11]}
      ]})"))
                  .status(),
              "sweep.grid[0]: the sweep has 1100 trials");
  ExpectError(ExpandSweep(Spec(R"({"grid": [{"field": "stoping.max_epochs",
      "values": [1]}]})"))
                  .status(),
              "no field 'stoping' in JobSpec; did you mean 'stopping'?");
  ExpectError(
      ExpandSweep(Spec(R"({"seeds": 2, "within_pct": "NaN"})")).status(),
      "sweep.within_pct: is nan");
}

// Every trial holds a copy of the spec: a long one times many trials is
// refused with the limit named, before anything is expanded.
TEST(SweepTest, RefusesTrialsWhoseSpecsTogetherPassTheLimit) {
  v1::JobSpec spec = Spec(R"({"seeds": 1000})");
  spec.set_name(std::string(20000, 'n'));
  ExpectError(ExpandSweep(spec).status(),
              "sweep.seeds: its 1000 trials would hold");
  spec.mutable_sweep()->set_seeds(10);
  EXPECT_TRUE(ExpandSweep(spec).ok());
}

// The points are spaced in logarithms: to / from may overflow a double.
TEST(SweepTest, APathSpanningTheWholeRangeOfDoublesExpands) {
  auto trials = ExpandSweep(Spec(R"({"path":
      {"field": "regularization.rho_theta", "from": 1e-300, "to": 1e300,
       "points": 3}})"));
  ASSERT_TRUE(trials.ok()) << trials.status();
  ASSERT_EQ(trials->size(), 3u);
  EXPECT_DOUBLE_EQ((*trials)[0].spec.regularization().rho_theta(), 1e-300);
  EXPECT_NEAR((*trials)[1].spec.regularization().rho_theta(), 1.0, 1e-5);
  EXPECT_DOUBLE_EQ((*trials)[2].spec.regularization().rho_theta(), 1e300);
}

TEST(SweepTest, RefusesFieldsSetTwiceAndAnotherModelOrLoss) {
  ExpectError(ExpandSweep(Spec(R"({"grid": [
      {"field": "regularization.rho_theta", "values": [1]}],
      "path": {"field": "regularization.rhoTheta", "from": 1, "to": 2,
               "points": 2}})"))
                  .status(),
              "set the same field; keep one");
  ExpectError(ExpandSweep(Spec(R"({"grid": [
      {"field": "optimizer", "values": [{"adam": {}}]},
      {"field": "optimizer.lbfgs.memory", "values": [3]}]})"))
                  .status(),
              "set the same field");
  ExpectError(ExpandSweep(Spec(R"({"grid": [{"field": "model", "values":
      [{"mlp": {"hidden": [4]}}]}]})"))
                  .status(),
              "cannot change the model family");
  ExpectError(ExpandSweep(Spec(R"({"grid": [{"field": "loss.kind", "values":
      ["LOSS_BINARY_CROSS_ENTROPY"]}]})"))
                  .status(),
              "or the loss kind");
  ExpectError(ExpandSweep(Spec(R"({"within_pct": "Infinity"})")).status(),
              "sweep.within_pct: is inf; it must be >= 0 and finite");
}

TEST(SweepTest, AGridOrPathNeedsValidationDataNeverTheTestSplit) {
  ExpectError(ExpandSweep(Spec(R"({"grid": [{"field": "stopping.max_epochs",
      "values": [1, 2]}]})",
                               /*validation=*/false))
                  .status(),
              "never on the test split");
  ExpectError(ExpandSweep(Spec(R"({"path": {"field": "regularization.rho_theta",
          "from": 1, "to": 2, "points": 2}})",
                               /*validation=*/false))
                  .status(),
              "set split.validation");
}

// sweep.metric must be one the trials have, on a validation split.
TEST(SweepTest, AMetricNeedsValidationDataAndAModelThatHasIt) {
  EXPECT_TRUE(
      ExpandSweep(Spec(R"({"seeds": 2, "metric": "METRIC_BFR"})")).ok());
  ExpectError(ExpandSweep(Spec(R"({"seeds": 2, "metric": "METRIC_BFR"})",
                               /*validation=*/false))
                  .status(),
              "METRIC_BFR is measured on validation data");
  ExpectError(
      ExpandSweep(Spec(R"({"seeds": 2, "metric": "METRIC_ONE_STEP_RMSE"})"))
          .status(),
      "needs a narx_mlp model");
  ExpectError(ExpandSweep(Spec(R"({"seeds": 2, "metric": "METRIC_ACCURACY"})"))
                  .status(),
              "needs a classifier");
  std::string narx = Replace(
      Replace(kRnnSpec, R"("train": [{"first": 1, "last": 150}])",
              R"("train": [{"first": 1, "last": 120}],
                 "validation": [{"first": 121, "last": 150}])"),
      R"("state_space_rnn": {"nx": 2, "fx_hidden": [3], "fy_hidden": [3]})",
      R"("narx_mlp": {"input_lags": 2, "output_lags": 2, "hidden": [3]})");
  narx = Replace(narx, "\"seed\": 7",
                 R"("seed": 7, "sweep": {"metric": "METRIC_ONE_STEP_RMSE"})");
  auto spec = ParseJobSpecJson(narx);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(ExpandSweep(*spec).ok()) << ExpandSweep(*spec).status();
}

// The trials track what the sweep chooses by: sweep.metric becomes their
// stopping.validation_metric; a spec that tracks another one is refused.
TEST(SweepTest, TrialsTrackTheSweepsMetric) {
  auto trials = ExpandSweep(Spec(R"({"seeds": 2, "metric": "METRIC_BFR"})"));
  ASSERT_TRUE(trials.ok()) << trials.status();
  for (const Trial& t : *trials) {
    EXPECT_EQ(t.spec.stopping().validation_metric(), v1::Sweep::METRIC_BFR);
    EXPECT_FALSE(t.spec.has_sweep());
  }
  v1::JobSpec both = Spec(R"({"seeds": 2, "metric": "METRIC_BFR"})");
  both.mutable_stopping()->set_validation_metric(v1::Sweep::METRIC_RMSE);
  ExpectError(ExpandSweep(both).status(),
              "sweep.metric: the trials would track "
              "stopping.validation_metric METRIC_RMSE but the sweep chooses "
              "by METRIC_BFR");
  both.mutable_stopping()->set_validation_metric(v1::Sweep::METRIC_BFR);
  EXPECT_TRUE(ExpandSweep(both).ok());
  // Tracked but not chosen by: the sweep must name it.
  v1::JobSpec unnamed = Spec(R"({"seeds": 2})");
  unnamed.mutable_stopping()->set_validation_metric(v1::Sweep::METRIC_BFR);
  ExpectError(ExpandSweep(unnamed).status(),
              "sweep.metric: unset, while stopping.validation_metric is "
              "METRIC_BFR; set \"metric\": \"METRIC_BFR\" in the sweep too");
  // A grid cannot vary it either.
  ExpectError(ExpandSweep(Spec(R"({"grid": [{"field":
      "stopping.validation_metric", "values": ["METRIC_RMSE", "METRIC_BFR"]}]})"))
                  .status(),
              "the trials track the metric the sweep chooses by");
  // Without a sweep the spec is its own single trial, metric and all.
  v1::JobSpec single = Spec(R"({"seeds": 2})");
  single.clear_sweep();
  single.mutable_stopping()->set_validation_metric(v1::Sweep::METRIC_BFR);
  auto one = ExpandSweep(single);
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0].spec.stopping().validation_metric(),
            v1::Sweep::METRIC_BFR);
}

// SelectionOf reads the metric the sweep names; BFR and accuracy count as
// 100 - the value, so that a lower error is better for every metric.
TEST(SweepTest, SelectionReadsTheSweepsMetric) {
  v1::Metrics m;
  m.set_validation_rmse(0.5);
  m.set_validation_one_step_rmse(0.1);
  m.set_validation_bfr(80.0);
  m.set_validation_accuracy(std::nan(""));
  v1::Sweep sweep;
  EXPECT_STREQ(SelectionOf(sweep, m).name, "validation_rmse");
  EXPECT_EQ(SelectionOf(sweep, m).error, 0.5);
  sweep.set_metric(v1::Sweep::METRIC_ONE_STEP_RMSE);
  EXPECT_EQ(SelectionOf(sweep, m).error, 0.1);
  sweep.set_metric(v1::Sweep::METRIC_BFR);
  EXPECT_EQ(SelectionOf(sweep, m).value, 80.0);
  EXPECT_EQ(SelectionOf(sweep, m).error, 20.0);
  // Unset, a classifier's accuracy decides.
  m.set_validation_accuracy(90.0);
  sweep.clear_metric();
  EXPECT_STREQ(SelectionOf(sweep, m).name, "validation_accuracy");
  EXPECT_EQ(SelectionOf(sweep, m).error, 10.0);
}

TEST(SweepTest, ChoosesTheBestOrTheSparsestWithinAMargin) {
  v1::Sweep best;
  std::vector<TrialScore> scores = {{true, 1.00, 0.1, 0.0},
                                    {true, 0.90, 0.1, 10.0},
                                    {true, 0.905, 0.1, 40.0},
                                    {true, 0.95, 0.1, 80.0},
                                    {false, 0.10, 0.1, 99.0}};
  EXPECT_EQ(ChooseTrial(best, scores), 1);
  v1::Sweep sparse;
  sparse.set_select(v1::Sweep::RULE_SPARSEST_WITHIN);
  EXPECT_EQ(ChooseTrial(sparse, scores), 2);  // within 1 % of 0.90
  sparse.set_within_pct(10);
  EXPECT_EQ(ChooseTrial(sparse, scores), 3);
  // Without validation data (seeds only): the lowest training loss.
  const double nan = std::nan("");
  EXPECT_EQ(ChooseTrial(best, {{true, nan, 0.3, 0}, {true, nan, 0.2, 0}}), 1);
  EXPECT_EQ(ChooseTrial(best, {{false, 1, 1, 0}}), -1);
  // A grid or path never falls back to training loss.
  v1::Sweep path;
  path.mutable_path()->set_points(2);
  EXPECT_EQ(ChooseTrial(path, {{true, nan, 0.3, 0}, {true, nan, 0.2, 0}}), -1);
}

// The reason given for a choice names the rule, the figure and, for the
// sparsest within a margin, the best trial it was measured against.
TEST(SweepTest, TheChoiceSaysWhy) {
  const double nan = std::nan("");
  std::vector<TrialScore> scores = {{true, 1.00, 0.1, 0.0, nan, 0},
                                    {true, 0.90, 0.1, 10.0, nan, 1},
                                    {true, 0.905, 0.1, 40.0, nan, 2}};
  Selection rmse;
  v1::Sweep best;
  EXPECT_EQ(ChoiceBasis(best, scores, 1, rmse), "the best validation_rmse 0.9");
  v1::Sweep sparse;
  sparse.set_select(v1::Sweep::RULE_SPARSEST_WITHIN);
  EXPECT_EQ(ChoiceBasis(sparse, scores, 2, rmse),
            "the sparsest within 1 % of the best validation_rmse (0.9, trial "
            "1): validation_rmse 0.905");
  EXPECT_EQ(ChoiceBasis(sparse, {scores[1]}, 0, rmse),
            "the best validation_rmse 0.9, and the sparsest within 1 % of it");
  Selection bfr;
  bfr.name = "validation_bfr";
  bfr.higher_is_better = true;
  EXPECT_EQ(ChoiceBasis(best, {{true, 4.5, 0.1, 0.0}}, 0, bfr),
            "the best validation_bfr 95.5");
  EXPECT_EQ(
      ChoiceBasis(best, {{true, nan, 0.3, 0}, {true, nan, 0.2, 0}}, 1, rmse),
      "the lowest final training loss, 0.2 (no validation split)");
}

// For state-space models the sparsest is the lowest model order (the states
// group Lasso removes), then the most zero weights; the margin still holds.
TEST(SweepTest, SparsestMeansTheLowestModelOrderWhereThereIsOne) {
  v1::Sweep sparse;
  sparse.set_select(v1::Sweep::RULE_SPARSEST_WITHIN);
  sparse.set_within_pct(5);
  const std::vector<TrialScore> scores = {{true, 1.00, 0.1, 70.0, 6},
                                          {true, 1.03, 0.1, 40.0, 3},
                                          {true, 1.04, 0.1, 50.0, 3},
                                          {true, 1.20, 0.1, 90.0, 2}};
  // Order 3 beats order 6's 70 % zeros; of the two at order 3, more zeros;
  // order 2 is outside the 5 % margin.
  EXPECT_EQ(ChooseTrial(sparse, scores), 2);
  // Without orders (other kinds: 0 or NaN) zero weights decide, as before.
  std::vector<TrialScore> unordered = scores;
  for (TrialScore& s : unordered) s.model_order = 0;
  EXPECT_EQ(ChooseTrial(sparse, unordered), 0);
}

}  // namespace
}  // namespace sparrow::translate
