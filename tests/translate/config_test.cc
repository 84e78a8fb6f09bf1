#include "translate/config.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <variant>

#include "core/train/methods.h"
#include "gtest/gtest.h"
#include "tests/translate/testing/spec_fixture.h"
#include "translate/json.h"

namespace sparrow::translate {
namespace {

TEST(ConfigTest, NormalizationChoosesTheScaling) {
  for (const auto& [value, scaling] :
       {std::pair{"\"NORMALIZATION_MINMAX\"",
                  core::TrainConfig::Scaling::kMinMax},
        std::pair{"\"NORMALIZATION_NONE\"", core::TrainConfig::Scaling::kNone},
        std::pair{"\"NORMALIZATION_ZSCORE\"",
                  core::TrainConfig::Scaling::kZScore}}) {
    auto spec = ParseJobSpecJson(
        Replace(kRnnSpec, "\"seed\": 7",
                std::string("\"seed\": 7, \"normalization\": ") + value));
    ASSERT_TRUE(spec.ok()) << spec.status();
    auto config = ToTrainConfig(*spec);
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_EQ(config->scaling, scaling) << value;
  }
  auto spec = ParseJobSpecJson(kRnnSpec);
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(ToTrainConfig(*spec)->scaling, core::TrainConfig::Scaling::kZScore);
  spec->set_normalization(static_cast<v1::Normalization>(9));
  ExpectError(ToTrainConfig(*spec).status(), "normalization has an unknown");
}

TEST(ConfigTest, LinearPartAndItsBlockRows) {
  auto spec = ParseJobSpecJson(kRnnSpec);
  ASSERT_TRUE(spec.ok());
  v1::StateSpaceRnnModel* rnn =
      spec->mutable_model()->mutable_state_space_rnn();
  rnn->set_linear(true);
  auto config = ToTrainConfig(*spec);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->model.as<core::StateSpaceRnnKind>().rnn.linear);
  EXPECT_EQ(config->model.as<core::StateSpaceRnnKind>().linear_block_rows, 0);
  rnn->set_linear_block_rows(rnn->nx());
  ExpectError(ToTrainConfig(*spec).status(),
              "model.state_space_rnn.linear_block_rows is 2; it must be more "
              "than nx (2)");
  rnn->set_linear_block_rows(201);
  ExpectError(ToTrainConfig(*spec).status(), "at most 200");
  rnn->set_linear_block_rows(12);
  config = ToTrainConfig(*spec);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->model.as<core::StateSpaceRnnKind>().linear_block_rows, 12);
  rnn->set_linear(false);
  ExpectError(ToTrainConfig(*spec).status(), "with linear: true");
}

TEST(ConfigTest, SubsequencesNeedAFreeOrEncodedInitialState) {
  auto spec = ParseJobSpecJson(kRnnSpec);
  ASSERT_TRUE(spec.ok());
  v1::StateSpaceRnnModel* rnn =
      spec->mutable_model()->mutable_state_space_rnn();
  rnn->set_subsequence_length(500);
  auto config = ToTrainConfig(*spec);  // unspecified = a free x0 per window
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->model.as<core::StateSpaceRnnKind>().subsequence_length,
            500);
  rnn->set_initial_state(v1::INITIAL_STATE_ZERO);
  ExpectError(ToTrainConfig(*spec).status(),
              "subsequence_length needs initial_state INITIAL_STATE_FREE");
  rnn->set_initial_state(v1::INITIAL_STATE_ENCODER);
  rnn->mutable_encoder()->set_past_outputs(4);
  config = ToTrainConfig(*spec);
  ASSERT_TRUE(config.ok()) << config.status();
  const auto& kind = config->model.as<core::StateSpaceRnnKind>();
  EXPECT_EQ(kind.subsequence_length, 500);
  EXPECT_EQ(kind.subsequence_stride, 500);  // 0 = the length
  rnn->set_subsequence_stride(-1);
  ExpectError(ToTrainConfig(*spec).status(), "subsequence_stride is -1");
  rnn->set_subsequence_stride(2147483647);
  ExpectError(ToTrainConfig(*spec).status(), "in [1, 10000000]");
  rnn->set_subsequence_length(1);
  rnn->set_subsequence_stride(0);
  ExpectError(ToTrainConfig(*spec).status(), "subsequence_length is 1");
  rnn->set_subsequence_length(0);
  rnn->set_subsequence_stride(5);
  ExpectError(ToTrainConfig(*spec).status(), "0 without subsequence_length");
  rnn->set_subsequence_length(-2);
  rnn->set_subsequence_stride(0);
  ExpectError(ToTrainConfig(*spec).status(),
              "(0 = automatic, -1 = whole traces)");
  rnn->set_subsequence_length(-1);  // whole traces, also for a long record
  config = ToTrainConfig(*spec);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->model.as<core::StateSpaceRnnKind>().subsequence_length,
            core::kWholeTraces);
}

TEST(ConfigTest, StallEpochsDefaultOffAndErrors) {
  auto spec = ParseJobSpecJson(kRnnSpec);
  ASSERT_TRUE(spec.ok());
  auto config = ToTrainConfig(*spec);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(core::Stop(config->optimizer).stall_window, 100);
  spec->mutable_stopping()->set_stall_epochs(-1);
  EXPECT_EQ(core::Stop(ToTrainConfig(*spec)->optimizer).stall_window, 0);
  spec->mutable_stopping()->set_stall_epochs(7);
  EXPECT_EQ(core::Stop(ToTrainConfig(*spec)->optimizer).stall_window, 7);
  spec->mutable_stopping()->set_stall_epochs(-2);
  ExpectError(ToTrainConfig(*spec).status(),
              "stopping.stall_epochs is -2; it must be >= 1, 0 (the default "
              "100) or -1 (never)");
}

// The batch options' messages name the method whose block holds them, and a
// P limit below a kilobyte (a typo) is refused with the value given.
TEST(ConfigTest, BatchAndRlsLimitErrorsNameTheirField) {
  auto spec = ParseJobSpecJson(kRnnSpec);
  ASSERT_TRUE(spec.ok());
  spec->mutable_optimizer()->mutable_adam()->mutable_batch()->set_batch_size(
      -5);
  ExpectError(ToTrainConfig(*spec).status(),
              "optimizer.adam.batch.batch_size is -5");
  spec->mutable_optimizer()->mutable_rls()->set_max_p_megabytes(1e-9);
  ExpectError(ToTrainConfig(*spec).status(),
              "optimizer.rls.max_p_megabytes is 1e-09; it must be in [0.001, "
              "1e9], or 0 (= 1024)");
}

// A stride longer than the windows would leave samples out of training, and
// an encoder block without the encoder initial state would be ignored.
TEST(ConfigTest, WindowsCoverTheDataAndAnEncoderNeedsItsInitialState) {
  auto spec = ParseJobSpecJson(kRnnSpec);
  ASSERT_TRUE(spec.ok());
  v1::StateSpaceRnnModel* rnn =
      spec->mutable_model()->mutable_state_space_rnn();
  rnn->set_subsequence_length(50);
  rnn->set_subsequence_stride(1000);
  ExpectError(ToTrainConfig(*spec).status(),
              "subsequence_stride is 1000; it must be at most "
              "subsequence_length (50)");
  rnn->set_subsequence_stride(50);
  EXPECT_TRUE(ToTrainConfig(*spec).ok());
  rnn->set_subsequence_length(10000001);
  ExpectError(ToTrainConfig(*spec).status(),
              "subsequence_length is 10000001; it must be in [2, 10000000]");
  rnn->clear_subsequence_length();
  rnn->clear_subsequence_stride();
  rnn->mutable_encoder()->set_past_outputs(3);
  ExpectError(ToTrainConfig(*spec).status(),
              "encoder is set, but initial_state is not INITIAL_STATE_ENCODER");
  rnn->set_initial_state(v1::INITIAL_STATE_ENCODER);
  rnn->mutable_encoder()->set_past_inputs(3);
  EXPECT_TRUE(ToTrainConfig(*spec).ok()) << ToTrainConfig(*spec).status();
}

TEST(ConfigTest, PrecisionIsFloat64OrFloat32) {
  auto spec = ParseJobSpecJson(kRnnSpec);
  ASSERT_TRUE(spec.ok());
  spec->mutable_model()->set_precision("float16");
  ExpectError(ToTrainConfig(*spec).status(),
              "model.precision is \"float16\"; use \"float64\"");
  spec->mutable_model()->set_precision("float64");
  EXPECT_EQ(ToTrainConfig(*spec)->model.precision, core::Precision::kFloat64);
  // A state_space_rnn computes in float64 only.
  spec->mutable_model()->set_precision("float32");
  ExpectError(ToTrainConfig(*spec).status(), "applies to mlp and cnn models");
}

TEST(ConfigTest, NegativeLayerSizeIsNamed) {
  ExpectError(
      Load(Replace(kRnnSpec, "\"fx_hidden\": [3]", "\"fx_hidden\": [-3]"),
           Csv(200)),
      "fx.hidden[0] is -3");
}

TEST(ConfigTest, MissingPiecesAreExplained) {
  ExpectError(
      Load(Replace(kRnnSpec, "\"optimizer\": {\"lbfgs\": {}},", ""), Csv(200)),
      "optimizer: set one of");
  ExpectError(Load(Replace(kRnnSpec, "\"inputs\": [\"u\"], ", ""), Csv(200)),
              "data.inputs");
  ExpectError(Load(Replace(kRnnSpec, "\"optimizer\": {\"lbfgs\": {}}",
                           "\"optimizer\": {\"rls\": {}}"),
                   Csv(200)),
              "optimizer.rls trains mlp, cnn, rnn and lstm models");
  ExpectError(Load(Replace(kRnnSpec, "\"optimizer\": {\"lbfgs\": {}}",
                           "\"optimizer\": {\"sbdl\": {}}"),
                   Csv(200)),
              "optimizer.sbdl trains narx_mlp and mlp models");
}

TEST(ConfigTest, ALinearNarxNeedsALinearOutput) {
  const std::string narx = Replace(
      kRnnSpec,
      R"({"state_space_rnn": {"nx": 2, "fx_hidden": [3], "fy_hidden": [3]}})",
      R"({"narx_mlp": {"input_lags": 2, "output_lags": 2, "hidden": [3], "linear": true}})");
  auto spec = ParseJobSpecJson(narx);
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto config = ToTrainConfig(*spec);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->model.as<core::NarxMlpKind>().linear);
  spec->mutable_loss()->set_kind(v1::LOSS_BINARY_CROSS_ENTROPY);
  ExpectError(ToTrainConfig(*spec).status(),
              "model.narx_mlp.linear needs a linear output, and this loss "
              "gives a sigmoid one");
}

TEST(ConfigTest, PenaltiesNeedAdmmAndAdmmNeedsAPenalty) {
  const std::string l1 = Replace(kRnnSpec, "\"optimizer\": {\"lbfgs\": {}}",
                                 "\"regularization\": {\"l1\": {\"tau\": "
                                 "0.2}}, \"optimizer\": {\"lbfgs\": {}}");
  ExpectError(Load(l1, Csv(200)),
              "solved by ADMM around optimizer nails or nailm");
  EXPECT_TRUE(
      Load(Replace(l1, "\"lbfgs\": {}", "\"nails\": {\"admm_rho\": 10}"),
           Csv(200))
          .ok());
  ExpectError(
      Load(Replace(kRnnSpec, "\"lbfgs\": {}", "\"nailm\": {\"admm_rho\": 10}"),
           Csv(200)),
      "need a non-smooth regularization");
  ExpectError(
      Load(Replace(l1, "\"lbfgs\": {}", "\"nails\": {\"admm_rho\": -1}"),
           Csv(200)),
      "optimizer.nails.admm_rho is -1");
}

TEST(ConfigTest, NailsMinCosineDefaultsOnAndZeroTurnsItOff) {
  auto config = [](const std::string& nails) {
    auto spec = ParseJobSpecJson(
        Replace(kRnnSpec, "\"lbfgs\": {}", "\"nails\": " + nails));
    EXPECT_TRUE(spec.ok()) << spec.status();
    return ToTrainConfig(*spec);
  };
  auto unset = config("{}");
  ASSERT_TRUE(unset.ok()) << unset.status();
  EXPECT_EQ(std::get<core::NailsOptions>(unset->optimizer).min_cosine, 1e-5);
  auto off = config("{\"min_cosine\": 0}");
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_EQ(std::get<core::NailsOptions>(off->optimizer).min_cosine, 0.0);
  ExpectError(
      Load(Replace(kRnnSpec, "\"lbfgs\": {}", "\"nails\": {\"min_cosine\": 1}"),
           Csv(200)),
      "optimizer.nails.min_cosine is 1");
}

TEST(ConfigTest, EveryExampleSpecIsValid) {
  const std::filesystem::path dir =
      std::filesystem::path(SPARROW_SOURCE_DIR) / "examples";
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    auto spec = ParseJobSpecJson(text.str());
    ASSERT_TRUE(spec.ok()) << entry.path() << ": " << spec.status();
    auto config = ToTrainConfig(*spec);
    EXPECT_TRUE(config.ok()) << entry.path() << ": " << config.status();
    ++count;
  }
  EXPECT_GE(count, 2);
}

}  // namespace
}  // namespace sparrow::translate

namespace sparrow::translate {
namespace {

// kRnnSpec trained in stages instead of by its optimizer.
std::string Staged(const std::string& stages) {
  return Replace(Replace(kRnnSpec, "\"optimizer\": {\"lbfgs\": {}},", ""),
                 "\"seed\": 7", "\"seed\": 7, \"stages\": " + stages);
}

// stopping.validation_metric reaches the config; one the model does not
// measure, one without validation data, and one in a stage are refused.
TEST(ConfigTest, TheValidationMetricIsCheckedAndTranslated) {
  using Metric = core::TrainConfig::ValidationMetric;
  auto spec = ParseJobSpecJson(
      Replace(kRnnSpec, R"("train": [{"first": 1, "last": 150}])",
              R"("train": [{"first": 1, "last": 120}],
         "validation": [{"first": 121, "last": 150}])"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(ToTrainConfig(*spec)->validation_metric, Metric::kDefault);
  spec->mutable_stopping()->set_validation_metric(v1::Sweep::METRIC_BFR);
  auto config = ToTrainConfig(*spec);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->validation_metric, Metric::kBfr);
  spec->mutable_stopping()->set_validation_metric(
      v1::Sweep::METRIC_ONE_STEP_RMSE);
  ExpectError(ToTrainConfig(*spec).status(),
              "stopping.validation_metric: METRIC_ONE_STEP_RMSE needs a "
              "narx_mlp model");
  spec->mutable_stopping()->set_validation_metric(v1::Sweep::METRIC_RMSE);
  spec->mutable_split()->clear_validation();
  ExpectError(ToTrainConfig(*spec).status(),
              "stopping.validation_metric: METRIC_RMSE is measured on "
              "validation data");
  auto staged = ParseJobSpecJson(Staged(R"([{"optimizer": {"adam": {}},
      "stopping": {"validation_metric": "METRIC_RMSE"}}])"));
  ASSERT_TRUE(staged.ok()) << staged.status();
  ExpectError(ToTrainConfig(*staged).status(),
              "stages[0].stopping.validation_metric: the stages of a job "
              "share one");
}

TEST(ConfigTest, StagesHaveTheirOwnOptimizerAndStopping) {
  auto spec = ParseJobSpecJson(Staged(R"([
    {"name": "warm-up", "optimizer": {"adam": {"learning_rate": 0.01,
                                               "batch": {"bptt_window": 40}}},
     "stopping": {"max_epochs": 50, "patience": 3}},
    {"optimizer": {"nailm": {}}}])"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto config = ToTrainConfig(*spec);
  ASSERT_TRUE(config.ok()) << config.status();
  ASSERT_EQ(config->stages.size(), 2u);
  EXPECT_EQ(config->stages[0].name, "warm-up");
  // The first stage's fields are the config's; the second keeps the job's
  // stopping (max_epochs 30) and its own batch options.
  EXPECT_TRUE(std::holds_alternative<core::AdamOptions>(config->optimizer));
  EXPECT_EQ(config->patience, 3);
  EXPECT_EQ(config->bptt_window, 40);
  EXPECT_EQ(core::Stop(config->stages[0].optimizer).max_iterations, 50);
  EXPECT_TRUE(
      std::holds_alternative<core::NailmOptions>(config->stages[1].optimizer));
  EXPECT_EQ(core::Stop(config->stages[1].optimizer).max_iterations, 30);
  EXPECT_EQ(config->stages[1].bptt_window, 0);
  EXPECT_EQ(config->stages[1].patience, 0);
  EXPECT_EQ(core::IterationBudget(*config), 80);
}

// A stage's stopping replaces the fields it sets, not the whole block: a
// stage that sets only report_every keeps the job's max_epochs (30).
TEST(ConfigTest, AStagesStoppingReplacesOnlyTheFieldsItSets) {
  auto spec = ParseJobSpecJson(Staged(R"([
    {"optimizer": {"adam": {}}, "stopping": {"report_every": 1}},
    {"optimizer": {"sgd": {}}, "stopping": {"max_epochs": 7}}])"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto config = ToTrainConfig(*spec);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(core::Stop(config->stages[0].optimizer).max_iterations, 30);
  EXPECT_EQ(core::Stop(config->stages[0].optimizer).report_every, 1);
  EXPECT_EQ(core::Stop(config->stages[1].optimizer).max_iterations, 7);
}

TEST(ConfigTest, StagesAreCheckedAndNamed) {
  auto both =
      ParseJobSpecJson(Replace(kRnnSpec, "\"seed\": 7",
                               "\"seed\": 7, \"stages\": [{\"optimizer\":"
                               " {\"adam\": {}}}]"));
  ASSERT_TRUE(both.ok());
  ExpectError(ToTrainConfig(*both).status(), "leave it unset");
  auto bad = ParseJobSpecJson(Staged(R"([{"optimizer": {"adam": {}}},
                 {"optimizer": {"adam": {"learning_rate": -1}}}])"));
  ASSERT_TRUE(bad.ok());
  ExpectError(ToTrainConfig(*bad).status(),
              "stages[1]: optimizer.adam.learning_rate");
  auto none = ParseJobSpecJson(Staged(R"([{"optimizer": {}}])"));
  ASSERT_TRUE(none.ok());
  ExpectError(ToTrainConfig(*none).status(), "stages[0].optimizer");
  auto narx_only = ParseJobSpecJson(
      Staged(R"([{"optimizer": {"adam": {}}, "simulation_error": true}])"));
  ASSERT_TRUE(narx_only.ok());
  ExpectError(ToTrainConfig(*narx_only).status(),
              "stages[0].simulation_error is for narx_mlp models");
  std::string many = "[";
  for (int k = 0; k < 33; ++k) {
    many += std::string(k ? ", " : "") + R"({"optimizer": {"adam": {}}})";
  }
  auto too_many = ParseJobSpecJson(Staged(many + "]"));
  ASSERT_TRUE(too_many.ok());
  ExpectError(ToTrainConfig(*too_many).status(),
              "stages has 33 stages; at most 32");
}

}  // namespace
}  // namespace sparrow::translate
