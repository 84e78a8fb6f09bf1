#include "translate/warm_start.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/translate/testing/spec_fixture.h"
#include "translate/config.h"
#include "translate/data.h"
#include "translate/json.h"
#include "translate/model.h"

namespace sparrow::translate {
namespace {

// The model of kRnnSpec trained for `epochs` on Csv(200).
v1::TrainedModel TrainedRnn(int epochs) {
  auto spec =
      ParseJobSpecJson(Replace(kRnnSpec, "\"max_epochs\": 30",
                               absl::StrCat("\"max_epochs\": ", epochs)));
  EXPECT_TRUE(spec.ok()) << spec.status();
  auto config = ToTrainConfig(*spec);
  EXPECT_TRUE(config.ok()) << config.status();
  auto data = LoadTrainData(*spec, *config, Csv(200));
  EXPECT_TRUE(data.ok()) << data.status();
  auto result = core::Train(*config, *data, nullptr);
  EXPECT_TRUE(result.ok()) << result.status();
  return ToProto(*spec, *result);
}

v1::JobSpec Spec(const std::string& warm_start) {
  auto spec = ParseJobSpecJson(Replace(
      kRnnSpec, "\"seed\": 7", "\"seed\": 7, \"warm_start\": " + warm_start));
  EXPECT_TRUE(spec.ok()) << spec.status();
  return *spec;
}

TEST(WarmStartTest, ASpecWithoutOneHasNone) {
  auto spec = ParseJobSpecJson(kRnnSpec);
  ASSERT_TRUE(spec.ok());
  auto model = WarmStartModel(*spec, nullptr);
  ASSERT_TRUE(model.ok());
  EXPECT_FALSE(model->has_value());
}

TEST(WarmStartTest, SaysWhereAnUnresolvedSourceCanBeRead) {
  ExpectError(WarmStartModel(Spec(R"({"job_id": "job-1"})"), nullptr).status(),
              "sparrow model get");
  ExpectError(
      WarmStartModel(Spec(R"({"model_path": "m.json"})"), nullptr).status(),
      "sparrow submit");
  ExpectError(WarmStartModel(Spec("{}"), nullptr).status(),
              "one of job_id, model_path or model");
  v1::JobSpec bad = Spec("{}");
  bad.mutable_warm_start()->set_model("not a model");
  ExpectError(WarmStartModel(bad, nullptr).status(), "TrainedModel");
}

TEST(WarmStartTest, TrainingGoesOnFromTheModel) {
  const v1::TrainedModel first = TrainedRnn(10);
  v1::JobSpec spec = Spec("{}");
  spec.mutable_warm_start()->set_model(first.SerializeAsString());
  auto model = WarmStartModel(spec, nullptr);
  ASSERT_TRUE(model.ok() && model->has_value()) << model.status();
  auto config = ToTrainConfig(spec);
  ASSERT_TRUE(config.ok());
  ASSERT_TRUE(ApplyWarmStart(spec, **model, 1, &*config).ok());
  ASSERT_NE(config->warm_start, nullptr);
  auto data = LoadTrainData(spec, *config, Csv(200));
  ASSERT_TRUE(data.ok());
  auto result = core::Train(*config, *data, nullptr);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_LT(result->summary.final_loss, result->summary.initial_loss);
  // The resolved source of a job id or file is used the same way.
  auto resolved = WarmStartModel(Spec(R"({"job_id": "job-1"})"), &first);
  ASSERT_TRUE(resolved.ok() && resolved->has_value());
  EXPECT_EQ((*resolved)->parameters_size(), first.parameters_size());
}

TEST(WarmStartTest, RefusesAnotherKindLossOrInputCount) {
  const v1::TrainedModel first = TrainedRnn(2);
  v1::JobSpec spec = Spec(R"({"job_id": "job-1"})");
  auto config = ToTrainConfig(spec);
  ASSERT_TRUE(config.ok());
  ExpectError(ApplyWarmStart(spec, first, 2, &*config), "1 input columns");
  v1::JobSpec bce = spec;
  bce.mutable_loss()->set_kind(v1::LOSS_BINARY_CROSS_ENTROPY);
  ExpectError(ApplyWarmStart(bce, first, 1, &*config),
              "LOSS_BINARY_CROSS_ENTROPY");
  v1::JobSpec narx = spec;
  narx.mutable_model()->mutable_narx_mlp()->set_input_lags(2);
  ExpectError(ApplyWarmStart(narx, first, 1, &*config),
              "the model is a state_space_rnn but this spec's model is a "
              "narx_mlp");
  // An empty file parses as an empty binary model.
  ExpectError(ApplyWarmStart(spec, v1::TrainedModel(), 1, &*config),
              "the model is empty (no model kind, no parameters)");
  EXPECT_EQ(config->warm_start, nullptr);
}

// Blocks of the same sizes can mean other things: another activation, or a
// NARX model's lags 3 and 1 against 2 and 2 (both 4 regressors).
TEST(WarmStartTest, RefusesTheSameSizesWithAnotherStructure) {
  const v1::TrainedModel first = TrainedRnn(2);
  v1::JobSpec spec = Spec(R"({"job_id": "job-1"})");
  spec.mutable_model()->mutable_state_space_rnn()->set_activation(
      v1::ACTIVATION_RELU);
  auto config = ToTrainConfig(spec);
  ASSERT_TRUE(config.ok()) << config.status();
  ExpectError(ApplyWarmStart(spec, first, 1, &*config),
              "warm_start: the model has activation tanh but this spec has "
              "relu");
  EXPECT_EQ(config->warm_start, nullptr);

  auto narx_spec = [](int input_lags, int output_lags) {
    std::string json = Replace(
        kRnnSpec,
        R"("state_space_rnn": {"nx": 2, "fx_hidden": [3], "fy_hidden": [3]})",
        absl::StrCat(R"("narx_mlp": {"hidden": [3], "input_lags": )",
                     input_lags, R"(, "output_lags": )", output_lags, "}"));
    auto spec = ParseJobSpecJson(json);
    EXPECT_TRUE(spec.ok()) << spec.status();
    return *spec;
  };
  const v1::JobSpec a = narx_spec(2, 2);
  auto a_config = ToTrainConfig(a);
  ASSERT_TRUE(a_config.ok()) << a_config.status();
  auto data = LoadTrainData(a, *a_config, Csv(200));
  ASSERT_TRUE(data.ok()) << data.status();
  auto trained = core::Train(*a_config, *data, nullptr);
  ASSERT_TRUE(trained.ok()) << trained.status();
  const v1::TrainedModel narx = ToProto(a, *trained);
  const v1::JobSpec b = narx_spec(3, 1);
  auto b_config = ToTrainConfig(b);
  ASSERT_TRUE(b_config.ok());
  ExpectError(ApplyWarmStart(b, narx, 1, &*b_config),
              "the model has input_lags 2 but this spec has 3");
  auto same = ToTrainConfig(a);
  ASSERT_TRUE(same.ok());
  EXPECT_TRUE(ApplyWarmStart(a, narx, 1, &*same).ok());
}

}  // namespace
}  // namespace sparrow::translate
