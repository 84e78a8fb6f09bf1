#include "translate/predict.h"

#include <cmath>
#include <map>
#include <memory>
#include <string>

#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "core/metrics/metrics.h"
#include "core/train/trainer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/translate/testing/image_fixture.h"
#include "translate/config.h"
#include "translate/data.h"
#include "translate/images.h"
#include "translate/json.h"
#include "translate/model.h"

namespace sparrow::translate {
namespace {

using ::testing::HasSubstr;

constexpr int kSamples = 240;

// One trace of a small nonlinear system: input u, outputs y (dynamic, from u)
// and z (a static function of u, for the MLP).
struct Trace {
  Eigen::MatrixXd u, y, z;
};

Trace MakeTrace() {
  Trace t;
  t.u.resize(1, kSamples);
  t.y.resize(1, kSamples);
  t.z.resize(1, kSamples);
  double y = 0.0;
  for (int k = 0; k < kSamples; ++k) {
    const double u = std::sin(0.13 * k) + 0.5 * std::sin(0.031 * k + 1.0);
    t.u(0, k) = u;
    t.y(0, k) = y;
    t.z(0, k) = std::tanh(2.0 * u) + 0.1 * u * u;
    y = 0.7 * y + 0.4 * std::tanh(u) - 0.05 * y * y;
  }
  return t;
}

// %.17g round-trips, so the parsed CSV holds exactly the matrices' values.
std::string ToCsv(const Trace& t) {
  std::string s = "u,y,z\n";
  for (int k = 0; k < kSamples; ++k) {
    absl::StrAppendFormat(&s, "%.17g,%.17g,%.17g\n", t.u(0, k), t.y(0, k),
                          t.z(0, k));
  }
  return s;
}

struct Trained {
  v1::TrainedModel proto;
  core::Model model;  // as trained, not read back from the proto
};

Trained Train(const std::string& model_json, const std::string& optimizer_json,
              const std::string& outputs) {
  const std::string json = absl::StrFormat(
      R"({
        "data": {"csv_path": "x.csv", "inputs": ["u"], "outputs": %s},
        "split": {"train": [{"first": 1, "last": 180}],
                  "test": [{"first": 181, "last": %d}]},
        "model": %s,
        "loss": {"kind": "LOSS_MSE"},
        "optimizer": %s,
        "stopping": {"max_epochs": 15},
        "seed": 3
      })",
      outputs, kSamples, model_json, optimizer_json);
  auto spec = ParseJobSpecJson(json);
  EXPECT_TRUE(spec.ok()) << spec.status();
  auto config = ToTrainConfig(*spec);
  EXPECT_TRUE(config.ok()) << config.status();
  auto data = LoadTrainData(*spec, *config, ToCsv(MakeTrace()));
  EXPECT_TRUE(data.ok()) << data.status();
  auto result = core::Train(*config, *data, nullptr);
  EXPECT_TRUE(result.ok()) << result.status();
  return {ToProto(*spec, *result), result->model};
}

// Trains each model once for the whole suite.
class PredictTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    trace_ = new Trace(MakeTrace());
    csv_ = new std::string(ToCsv(*trace_));
    narx_ =
        new Trained(Train(R"({"narx_mlp": {"input_lags": 2, "output_lags": 2,
                               "hidden": [5]}})",
                          R"({"lbfgs": {}})", R"(["y"])"));
    sbdl_narx_ =
        new Trained(Train(R"({"narx_mlp": {"input_lags": 2, "output_lags": 2,
                               "hidden": [5]}})",
                          R"({"sbdl": {"lambda": [1.0], "outer_iterations": 2,
                           "inner_epochs": 5, "learning_rate": 0.01}})",
                          R"(["y"])"));
    rnn_ = new Trained(Train(R"({"state_space_rnn": {"nx": 2, "fx_hidden": [4],
                  "fy_hidden": [4], "initial_state": "INITIAL_STATE_FREE"}})",
                             R"({"lbfgs": {}})", R"(["y"])"));
    mlp_ = new Trained(Train(R"({"mlp": {"hidden": [6]}})", R"({"lbfgs": {}})",
                             R"(["y", "z"])"));
  }
  static void TearDownTestSuite() {
    for (Trained* t : {narx_, sbdl_narx_, rnn_, mlp_}) delete t;
    delete csv_;
    delete trace_;
  }

  static const Trace& trace() { return *trace_; }
  static const std::string& csv() { return *csv_; }
  static const Trained& narx() { return *narx_; }
  static const Trained& sbdl_narx() { return *sbdl_narx_; }
  static const Trained& rnn() { return *rnn_; }
  static const Trained& mlp() { return *mlp_; }

  // Checks bfr / rmse against core's metrics over the predicted samples.
  static void ExpectFit(const PredictOutput& out, int first) {
    const int n = kSamples - first;
    ASSERT_TRUE(out.bfr.has_value());
    ASSERT_TRUE(out.rmse.has_value());
    EXPECT_EQ(*out.bfr, core::Bfr(trace().y.rightCols(n), out.y.rightCols(n)));
    EXPECT_EQ(*out.rmse,
              core::Rmse(trace().y.rightCols(n), out.y.rightCols(n)));
  }

 private:
  static Trace* trace_;
  static std::string* csv_;
  static Trained* narx_;
  static Trained* sbdl_narx_;
  static Trained* rnn_;
  static Trained* mlp_;
};

Trace* PredictTest::trace_ = nullptr;
std::string* PredictTest::csv_ = nullptr;
Trained* PredictTest::narx_ = nullptr;
Trained* PredictTest::sbdl_narx_ = nullptr;
Trained* PredictTest::rnn_ = nullptr;
Trained* PredictTest::mlp_ = nullptr;

TEST_F(PredictTest, NarxSimulationMatchesCore) {
  auto out = Predict(narx().proto, csv(), {});
  ASSERT_TRUE(out.ok()) << out.status();
  auto want = core::Simulate(narx().model, trace().u, trace().y);
  ASSERT_TRUE(want.ok()) << want.status();
  EXPECT_EQ(out->y, want->y);
  EXPECT_EQ(out->stddev.size(), 0);
  EXPECT_EQ(out->output_names, std::vector<std::string>{"y"});
  ExpectFit(*out, want->first);
}

TEST_F(PredictTest, NarxOneStepMatchesCore) {
  PredictOptions options;
  options.one_step = true;
  auto out = Predict(narx().proto, csv(), options);
  ASSERT_TRUE(out.ok()) << out.status();
  auto want = core::PredictOneStep(narx().model, trace().u, trace().y);
  ASSERT_TRUE(want.ok()) << want.status();
  EXPECT_EQ(out->y, want->y);
  ExpectFit(*out, want->first);
  auto simulated = Predict(narx().proto, csv(), {});
  ASSERT_TRUE(simulated.ok());
  EXPECT_NE(out->y, simulated->y);
}

TEST_F(PredictTest, SbdlNarxIntervalsMatchCoreAndFillTheCsv) {
  PredictOptions options;
  options.one_step = true;
  options.intervals = true;
  auto out = Predict(sbdl_narx().proto, csv(), options);
  ASSERT_TRUE(out.ok()) << out.status();
  auto want = core::PredictOneStepWithUncertainty(sbdl_narx().model, trace().u,
                                                  trace().y);
  ASSERT_TRUE(want.ok()) << want.status();
  EXPECT_EQ(out->y, want->mean.y);
  EXPECT_EQ(out->stddev, want->stddev);
  ExpectFit(*out, want->mean.first);

  const std::vector<std::string> lines =
      absl::StrSplit(out->Csv(), '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), kSamples + 1u);
  EXPECT_EQ(lines[0], "y_pred,y_lower95,y_upper95");
  const int t = kSamples - 1;
  const double y = out->y(0, t);
  const double sd = out->stddev(0, t);
  EXPECT_GT(sd, 0.0);
  EXPECT_EQ(lines[t + 1], absl::StrFormat("%.17g,%.17g,%.17g", y, y - 1.96 * sd,
                                          y + 1.96 * sd));
}

TEST_F(PredictTest, StateSpaceSimulationMatchesCore) {
  auto out = Predict(rnn().proto, csv(), {});
  ASSERT_TRUE(out.ok()) << out.status();
  auto want = core::Simulate(rnn().model, trace().u, trace().y);
  ASSERT_TRUE(want.ok()) << want.status();
  EXPECT_EQ(out->y, want->y);
  ExpectFit(*out, want->first);
}

TEST_F(PredictTest, X0SamplesOverridesTheModelsSetting) {
  PredictOptions options;
  options.x0_samples = 7;
  auto out = Predict(rnn().proto, csv(), options);
  ASSERT_TRUE(out.ok()) << out.status();
  core::Model model = rnn().model;
  int& n0 = model.config.as<core::StateSpaceRnnKind>().x0_estimation_samples;
  ASSERT_NE(n0, 7);
  n0 = 7;
  auto want = core::Simulate(model, trace().u, trace().y);
  ASSERT_TRUE(want.ok()) << want.status();
  EXPECT_EQ(out->y, want->y);
  auto by_default = Predict(rnn().proto, csv(), {});
  ASSERT_TRUE(by_default.ok());
  EXPECT_NE(out->y, by_default->y);
}

// The estimated x0 is returned; given back, it reproduces the simulation
// from the inputs alone; x0 = 0 needs no output column either.
TEST_F(PredictTest, StateSpaceSimulationFromAZeroOrGivenState) {
  auto estimated = Predict(rnn().proto, csv(), {});
  ASSERT_TRUE(estimated.ok()) << estimated.status();
  ASSERT_EQ(estimated->x0.size(), 2u);
  std::string inputs_only = "u\n";
  for (int k = 0; k < kSamples; ++k) {
    absl::StrAppendFormat(&inputs_only, "%.17g\n", trace().u(0, k));
  }
  PredictOptions given;
  given.initial_state = PredictOptions::InitialState::kGiven;
  given.x0 = estimated->x0;
  auto again = Predict(rnn().proto, inputs_only, given);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->y, estimated->y);
  EXPECT_EQ(again->x0, estimated->x0);
  EXPECT_FALSE(again->bfr.has_value());  // no measured outputs
  // With the outputs in the CSV, the fit over every sample.
  auto fitted = Predict(rnn().proto, csv(), given);
  ASSERT_TRUE(fitted.ok()) << fitted.status();
  ExpectFit(*fitted, 0);

  PredictOptions zero;
  zero.initial_state = PredictOptions::InitialState::kZero;
  auto rest = Predict(rnn().proto, inputs_only, zero);
  ASSERT_TRUE(rest.ok()) << rest.status();
  EXPECT_EQ(rest->x0, std::vector<double>(2, 0.0));
  EXPECT_EQ(rest->y.cols(), kSamples);

  given.x0 = {1.0};
  EXPECT_THAT(Predict(rnn().proto, inputs_only, given).status().message(),
              HasSubstr("x0 has 1 values; this model's state has 2 (nx)"));
  EXPECT_THAT(Predict(narx().proto, csv(), zero).status().message(),
              HasSubstr("for state_space_rnn models; this is a narx_mlp"));
  zero.one_step = true;
  EXPECT_THAT(Predict(rnn().proto, csv(), zero).status().message(),
              HasSubstr("leave out one-step"));
}

// A model trained from x0 = 0 simulates an inputs-only file from there: it
// has no initial state to estimate.
TEST(PredictZeroStateTest, AZeroInitialStateModelNeedsNoOutputs) {
  const Trained zero = Train(R"({"state_space_rnn": {"nx": 2, "fx_hidden": [4],
                "fy_hidden": [4], "initial_state": "INITIAL_STATE_ZERO"}})",
                             R"({"lbfgs": {}})", R"(["y"])");
  const Trace trace = MakeTrace();
  std::string inputs_only = "u\n";
  for (int k = 0; k < kSamples; ++k) {
    absl::StrAppendFormat(&inputs_only, "%.17g\n", trace.u(0, k));
  }
  auto alone = Predict(zero.proto, inputs_only, {});
  ASSERT_TRUE(alone.ok()) << alone.status();
  EXPECT_EQ(alone->x0, std::vector<double>(2, 0.0));
  auto with_outputs = Predict(zero.proto, ToCsv(trace), {});
  ASSERT_TRUE(with_outputs.ok()) << with_outputs.status();
  EXPECT_EQ(alone->y, with_outputs->y);
}

// x0_samples is for an estimated x0: more samples than the file has, or a
// count with a zero or given x0, is refused rather than ignored.
TEST_F(PredictTest, X0SamplesMustFitTheFileAndAnEstimate) {
  PredictOptions options;
  options.x0_samples = kSamples + 1;
  EXPECT_THAT(
      Predict(rnn().proto, csv(), options).status().message(),
      HasSubstr(absl::StrFormat(
          "x0_samples (--x0-samples) is %d, but the file has %d samples",
          kSamples + 1, kSamples)));
  options.x0_samples = kSamples;
  EXPECT_TRUE(Predict(rnn().proto, csv(), options).ok());
  options.initial_state = PredictOptions::InitialState::kZero;
  EXPECT_THAT(Predict(rnn().proto, csv(), options).status().message(),
              HasSubstr("with a zero or given x0 nothing is estimated"));
}

// Where no free initial state is estimated, x0_samples would be ignored
// without a word; it is refused, saying why.
TEST_F(PredictTest, X0SamplesIsRefusedWhereNothingIsEstimated) {
  PredictOptions options;
  options.x0_samples = 5;
  EXPECT_THAT(Predict(narx().proto, csv(), options).status().message(),
              HasSubstr("this narx_mlp model starts from its measured output "
                        "lags; leave it out"));
  EXPECT_THAT(Predict(mlp().proto, csv(), options).status().message(),
              HasSubstr("this mlp model has no state; leave it out"));
}

// Measured outputs whose fit overflows (1e160 squared) leave every start of
// the x0 estimate at an infinite loss: an error, not x0 = 0 passed off as an
// estimate.
TEST_F(PredictTest, AnEstimateWhoseFitOverflowsIsAnError) {
  Trace huge = trace();
  huge.y.setConstant(1e160);
  const absl::Status s = Predict(rnn().proto, ToCsv(huge), {}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("the initial state cannot be estimated"));
}

TEST_F(PredictTest, NegativeX0SamplesIsRejected) {
  PredictOptions options;
  options.x0_samples = -1;
  const absl::Status s = Predict(rnn().proto, csv(), options).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("x0_samples is -1; it must be >= 0"));
}

TEST_F(PredictTest, StaticMlpMatchesPredictTableWithoutFit) {
  auto out = Predict(mlp().proto, csv(), {});
  ASSERT_TRUE(out.ok()) << out.status();
  auto want = core::PredictTable(mlp().model, trace().u);
  ASSERT_TRUE(want.ok()) << want.status();
  EXPECT_EQ(out->y, *want);
  EXPECT_FALSE(out->bfr.has_value());
  EXPECT_FALSE(out->rmse.has_value());
  EXPECT_EQ(out->output_names, (std::vector<std::string>{"y", "z"}));

  const std::vector<std::string> lines =
      absl::StrSplit(out->Csv(), '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), kSamples + 1u);
  EXPECT_EQ(lines[0], "y_pred,z_pred");
  EXPECT_EQ(lines[1],
            absl::StrFormat("%.17g,%.17g", (*want)(0, 0), (*want)(1, 0)));
}

TEST_F(PredictTest, StaticMlpIgnoresSequenceOptions) {
  PredictOptions options;
  options.one_step = true;
  options.intervals = true;
  auto out = Predict(mlp().proto, csv(), options);
  ASSERT_TRUE(out.ok()) << out.status();
  auto want = core::PredictTable(mlp().model, trace().u);
  ASSERT_TRUE(want.ok());
  EXPECT_EQ(out->y, *want);
  EXPECT_EQ(out->stddev.size(), 0);
}

TEST_F(PredictTest, StaticMlpNeedsOnlyItsInputColumns) {
  std::string inputs_only = "u\n";
  for (int k = 0; k < 3; ++k) {
    absl::StrAppendFormat(&inputs_only, "%.17g\n", trace().u(0, k));
  }
  auto out = Predict(mlp().proto, inputs_only, {});
  ASSERT_TRUE(out.ok()) << out.status();
  auto want = core::PredictTable(mlp().model, trace().u.leftCols(3));
  ASSERT_TRUE(want.ok());
  EXPECT_EQ(out->y, *want);
}

TEST_F(PredictTest, IntervalsNeedOneStep) {
  PredictOptions options;
  options.intervals = true;
  const absl::Status s = Predict(sbdl_narx().proto, csv(), options).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "intervals are one-step prediction intervals; ask for one-step "
            "prediction");
}

// An input far outside the training range gives a non-finite interval: an
// error naming the sample, never a NaN row in the output file.
TEST_F(PredictTest, ANonFiniteIntervalIsAnError) {
  Trace t = trace();
  t.y(0, 3) = 1e300;
  PredictOptions options;
  options.one_step = true;
  options.intervals = true;
  const absl::Status s = Predict(sbdl_narx().proto, ToCsv(t), options).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(),
              HasSubstr("the one-step prediction or its interval is not "
                        "finite at sample"));
}

TEST_F(PredictTest, IntervalsNeedAnSbdlModel) {
  PredictOptions options;
  options.one_step = true;
  options.intervals = true;
  const absl::Status s = Predict(narx().proto, csv(), options).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("trained with optimizer sbdl"));
}

TEST_F(PredictTest, OneStepNeedsANarxModel) {
  PredictOptions options;
  options.one_step = true;
  const absl::Status s = Predict(rnn().proto, csv(), options).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("needs a narx_mlp model"));
}

TEST_F(PredictTest, MissingColumnIsNamed) {
  std::string no_y = "u,z\n";
  for (int k = 0; k < 10; ++k) {
    absl::StrAppendFormat(&no_y, "%.17g,%.17g\n", trace().u(0, k),
                          trace().z(0, k));
  }
  // Without the measured outputs a sequence model says what it needs them
  // for, and a state-space model how to simulate without them.
  for (const Trained* t : {&narx(), &rnn()}) {
    const absl::Status s = Predict(t->proto, no_y, {}).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("the file has no measured outputs (y)"));
  }
  EXPECT_THAT(Predict(rnn().proto, no_y, {}).status().message(),
              HasSubstr("simulate from the inputs alone with x0 = 0 (--x0 "
                        "zero)"));
  EXPECT_THAT(Predict(narx().proto, no_y, {}).status().message(),
              HasSubstr("a NARX model needs its first output lags measured"));
  const absl::Status s = Predict(mlp().proto, "y,z\n1,2\n", {}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("unknown column 'u'"));
}

TEST_F(PredictTest, NonFiniteValuesAreRejectedWithLineAndColumn) {
  const std::map<std::string, std::string> cases = {
      {"NaN", "line 3, column 'u'"},
      {"nan", "line 3, column 'u'"},
      {"Inf", "line 3, column 'u'"},
      {"-inf", "line 3, column 'u'"}};
  for (const auto& [value, where] : cases) {
    const std::string bad =
        "u,y,z\n0.1,0.2,0.3\n" + value + ",0.2,0.3\n0.3,0.1,0.2\n0.4,0.1,0.2\n";
    for (const Trained* t : {&narx(), &rnn(), &mlp()}) {
      const absl::Status s = Predict(t->proto, bad, {}).status();
      EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << value;
      EXPECT_THAT(s.message(), HasSubstr(where)) << value;
    }
  }
  const absl::Status s =
      Predict(rnn().proto, "u,y\n0.1,0.2\n0.2,inf\n0.3,0.1\n", {}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("line 3, column 'y'"));
}

TEST_F(PredictTest, ConstantMeasuredOutputsGiveNoFit) {
  // The BFR divides by the spread of y, which is zero here.
  std::string flat = "u,y\n";
  for (int k = 0; k < 50; ++k) {
    absl::StrAppendFormat(&flat, "%.17g,5\n", trace().u(0, k));
  }
  auto out = Predict(narx().proto, flat, {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->y.cols(), 50);
  EXPECT_FALSE(out->bfr.has_value());
  EXPECT_FALSE(out->rmse.has_value());
}

TEST_F(PredictTest, CorruptModelIsRejected) {
  v1::TrainedModel bad = narx().proto;
  bad.add_parameters(1.0);
  const absl::Status s = Predict(bad, csv(), {}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("parameters but its architecture needs"));
}

TEST(PredictOutputTest, CsvHasHeaderBandsAndRoundTripValues) {
  PredictOutput out;
  out.output_names = {"a", "b"};
  out.y.resize(2, 2);
  out.y << 0.1, 1.0 / 3.0, -2.0, 1e300;
  out.stddev.resize(2, 2);
  out.stddev << 0.5, 0.0, 1.0, 2.0;
  const std::string want = absl::StrFormat(
      "a_pred,b_pred,a_lower95,b_lower95,a_upper95,b_upper95\n"
      "%.17g,%.17g,%.17g,%.17g,%.17g,%.17g\n"
      "%.17g,%.17g,%.17g,%.17g,%.17g,%.17g\n",
      0.1, -2.0, 0.1 - 0.98, -2.0 - 1.96, 0.1 + 0.98, -2.0 + 1.96,  //
      1.0 / 3.0, 1e300, 1.0 / 3.0, 1e300 - 3.92, 1.0 / 3.0, 1e300 + 3.92);
  EXPECT_EQ(out.Csv(), want);
  EXPECT_THAT(want, HasSubstr("0.33333333333333331,"));
}

TEST(PredictOutputTest, CsvWithoutIntervalsOrSamplesIsTheHeader) {
  PredictOutput out;
  out.output_names = {"force"};
  out.y.resize(1, 0);
  EXPECT_EQ(out.Csv(), "force_pred\n");
}

// --- Models trained with data.categorical: Predict one-hot encodes the
// columns behind the "<column>=<level>" input names. ---

// Columns u, color (red / green / blue), size (S / M / L), y.
std::string CategoricalCsv() {
  const char* colors[] = {"red", "green", "blue"};
  const char* sizes[] = {"S", "M", "L"};
  std::string s = "u,color,size,y\n";
  for (int k = 0; k < 90; ++k) {
    const double u = std::sin(0.1 * k);
    absl::StrAppendFormat(&s, "%.17g,%s,%s,%.17g\n", u, colors[k % 3],
                          sizes[(k / 3) % 3], u + (k % 3) - 0.5 * (k / 3 % 3));
  }
  return s;
}

Trained TrainCategorical(const std::string& extra_data) {
  const std::string json = absl::StrFormat(
      R"({
        "data": {"csv_path": "x.csv", "inputs": ["color", "u", "size"],
                 "outputs": ["y"], "categorical": ["size", "color"]%s},
        "split": {"test_fraction": 0.2, "shuffle_seed": 4},
        "model": {"mlp": {"hidden": [5]}},
        "optimizer": {"lbfgs": {}},
        "stopping": {"max_epochs": 10},
        "seed": 3
      })",
      extra_data);
  auto spec = ParseJobSpecJson(json);
  EXPECT_TRUE(spec.ok()) << spec.status();
  auto config = ToTrainConfig(*spec);
  EXPECT_TRUE(config.ok()) << config.status();
  auto data = LoadTrainData(*spec, *config, CategoricalCsv());
  EXPECT_TRUE(data.ok()) << data.status();
  auto result = core::Train(*config, *data, nullptr);
  EXPECT_TRUE(result.ok()) << result.status();
  return {ToProto(*spec, *result), result->model};
}

TEST(CategoricalPredictTest, EncodesTheColumnsBehindTheInputNames) {
  const Trained trained = TrainCategorical("");
  EXPECT_EQ(trained.model.input_names,
            (std::vector<std::string>{"color=blue", "color=green", "color=red",
                                      "u", "size=L", "size=M", "size=S"}));
  // Other column order, an extra column, and only some of the levels.
  const std::string csv =
      "size,extra,u,color\n"
      "M,x,0.5,green\n"
      "S,y,-0.25,red\n"
      "M,z,1,green\n";
  auto out = Predict(trained.proto, csv, {});
  ASSERT_TRUE(out.ok()) << out.status();
  Eigen::MatrixXd x(7, 3);
  x << 0, 0, 0,       //
      1, 0, 1,        // green
      0, 1, 0,        // red
      0.5, -0.25, 1,  //
      0, 0, 0,        // L
      1, 0, 1,        // M
      0, 1, 0;        // S
  auto want = core::PredictTable(trained.model, x);
  ASSERT_TRUE(want.ok()) << want.status();
  EXPECT_EQ(out->y, *want);
}

TEST(CategoricalPredictTest, RefusesALevelTheModelWasNotTrainedOn) {
  const Trained trained = TrainCategorical("");
  const absl::Status s =
      Predict(trained.proto, "u,color,size\n1,red,S\n2,purple,M\n", {})
          .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(),
              HasSubstr("column 'color' has the value 'purple', which the "
                        "model was not trained on; it knows color=blue, "
                        "color=green, color=red"));
  EXPECT_THAT(Predict(trained.proto, "u,size\n1,S\n", {}).status().message(),
              HasSubstr("unknown column 'color=blue'"));
  EXPECT_THAT(
      Predict(trained.proto, "u,color,size\n1,red,\n", {}).status().message(),
      HasSubstr("line 2, column 'size': missing value"));
}

// --- Images: classes and probabilities of a softmax classifier. ---

// A classifier (by default a softmax mlp trained by L-BFGS) trained on 60
// tiny images of 3 classes.
v1::TrainedModel TrainImageClassifier(
    const std::string& model = R"({"mlp": {"hidden": [6]}})",
    const std::string& loss = R"({"kind": "LOSS_SOFTMAX_CROSS_ENTROPY"})",
    const std::string& optimizer = R"({"lbfgs": {}})") {
  auto spec = ParseJobSpecJson(R"({
    "data": {"images": {"images": ["i"], "labels": ["l"]}},
    "model": )" + model + R"(,
    "loss": )" + loss + R"(,
    "optimizer": )" + optimizer +
                               R"(,
    "stopping": {"max_epochs": 60},
    "seed": 2
  })");
  EXPECT_TRUE(spec.ok()) << spec.status();
  auto config = ToTrainConfig(*spec);
  EXPECT_TRUE(config.ok()) << config.status();
  auto data =
      LoadImageTrainData(*spec, *config, sparrow::testing::TinyImages(60));
  EXPECT_TRUE(data.ok()) << data.status();
  auto result = core::Train(*config, *data, nullptr);
  EXPECT_TRUE(result.ok()) << result.status();
  return ToProto(*spec, *result);
}

TEST(PredictImagesTest, ClassifiesImagesWithProbabilities) {
  const v1::TrainedModel model = TrainImageClassifier();
  core::data::ImageSet images = sparrow::testing::TinyImages(9);
  const std::vector<uint8_t> truth = images.labels;
  images.labels.clear();
  auto p = PredictImages(model, images);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->probabilities.rows(), 3);
  ASSERT_EQ(p->probabilities.cols(), 9);
  for (int j = 0; j < 9; ++j) {
    EXPECT_EQ(p->labels[j], truth[j]) << "image " << j;
    EXPECT_NEAR(p->probabilities.col(j).sum(), 1.0, 1e-12);
    EXPECT_GT(p->probabilities(p->labels[j], j), 0.5);
  }
}

// The all-RLS mode's classifier (MSE on one-hot targets, every layer RLS):
// the class of the largest output, and the outputs themselves. A model
// trained with plain MSE regressed the label: refused.
TEST(PredictImagesTest, OneHotMseClassifierReportsItsOutputs) {
  const v1::TrainedModel model =
      TrainImageClassifier(R"({"mlp": {"hidden": [6]}})",
                           R"({"kind": "LOSS_MSE", "one_hot_targets": true})",
                           R"({"rls": {"batch": {"batch_size": 10}}})");
  core::data::ImageSet images = sparrow::testing::TinyImages(9);
  const std::vector<uint8_t> truth = images.labels;
  images.labels.clear();
  auto p = PredictImages(model, images);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->probabilities.rows(), 3);
  for (int j = 0; j < 9; ++j) {
    EXPECT_EQ(p->labels[j], truth[j]) << "image " << j;
    Eigen::Index best = 0;
    p->probabilities.col(j).maxCoeff(&best);
    EXPECT_EQ(best, p->labels[j]);
  }
  const v1::TrainedModel regression =
      TrainImageClassifier(R"({"mlp": {"hidden": [6]}})",
                           R"({"kind": "LOSS_MSE"})", R"({"lbfgs": {}})");
  EXPECT_THAT(std::string(PredictImages(regression, images).status().message()),
              HasSubstr("not trained as a classifier"));
}

TEST(PredictImagesTest, RefusesWhatItCannotAnswer) {
  const v1::TrainedModel model = TrainImageClassifier();
  core::data::ImageSet wrong_shape = sparrow::testing::TinyImages(2);
  wrong_shape.width = 2;
  wrong_shape.height = 8;
  wrong_shape.channels = 2;
  wrong_shape.pixels.resize(2 * 32);
  EXPECT_THAT(std::string(PredictImages(model, wrong_shape).status().message()),
              HasSubstr("the model takes 16 inputs but the images have 2 x 8 "
                        "x 2 = 32 values"));
  core::data::ImageSet many = sparrow::testing::TinyImages(1);
  many.pixels.resize((kMaxPredictImages + 1) * 16);
  EXPECT_THAT(std::string(PredictImages(model, many).status().message()),
              HasSubstr("kMaxPredictImages"));
  // A cnn also needs the training images' shape, not just their size.
  const v1::TrainedModel cnn = TrainImageClassifier(
      R"({"cnn": {"layers": [{"conv": {"filters": 2, "kernel": 3,
          "padding": 1}}, {"flatten": {}}]}})");
  core::data::ImageSet tall = sparrow::testing::TinyImages(2);
  ASSERT_TRUE(PredictImages(cnn, tall).ok());
  tall.height = 8;  // the same 16 values, in another shape
  tall.width = 2;
  EXPECT_THAT(std::string(PredictImages(cnn, tall).status().message()),
              HasSubstr("the model takes 1 x 4 x 4 images but these are "
                        "1 x 8 x 2"));
}

TEST_F(PredictTest, ImagesNeedAClassifier) {
  core::data::ImageSet one = sparrow::testing::TinyImages(1);
  EXPECT_THAT(std::string(PredictImages(mlp().proto, one).status().message()),
              HasSubstr("not trained as a classifier"));
}

}  // namespace
}  // namespace sparrow::translate
