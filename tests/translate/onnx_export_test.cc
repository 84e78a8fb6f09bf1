#include "translate/onnx_export.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/train/trainer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "translate/config.h"
#include "translate/data.h"
#include "translate/json.h"
#include "translate/model.h"
#include "translate/onnx_graph.h"

namespace sparrow::translate {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int kSamples = 120;

std::string Csv() {
  std::string s = "u,y,z\n";
  double y = 0.0;
  for (int k = 0; k < kSamples; ++k) {
    const double u = std::sin(0.13 * k) + 0.5 * std::sin(0.031 * k + 1.0);
    absl::StrAppendFormat(&s, "%.17g,%.17g,%.17g\n", u, y, std::tanh(2 * u));
    y = 0.7 * y + 0.4 * std::tanh(u);
  }
  return s;
}

// A model of `model_json` after a few L-BFGS epochs on Csv().
v1::TrainedModel Train(const std::string& model_json,
                       const std::string& outputs = R"(["y"])") {
  const std::string json = absl::StrFormat(
      R"({"data": {"csv_path": "x.csv", "inputs": ["u"], "outputs": %s},
          "model": %s, "loss": {"kind": "LOSS_MSE"},
          "optimizer": {"lbfgs": {}}, "stopping": {"max_epochs": 3},
          "seed": 3})",
      outputs, model_json);
  auto spec = ParseJobSpecJson(json);
  EXPECT_TRUE(spec.ok()) << spec.status();
  auto config = ToTrainConfig(*spec);
  EXPECT_TRUE(config.ok()) << config.status();
  auto data = LoadTrainData(*spec, *config, Csv());
  EXPECT_TRUE(data.ok()) << data.status();
  auto result = core::Train(*config, *data, nullptr);
  EXPECT_TRUE(result.ok()) << result.status();
  return ToProto(*spec, *result);
}

std::vector<std::string> Names(
    const google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>& values) {
  std::vector<std::string> names;
  for (const auto& v : values) names.push_back(v.name());
  return names;
}

std::string Metadata(const onnx::ModelProto& m, const std::string& key) {
  for (const auto& e : m.metadata_props()) {
    if (e.key() == key) return e.value();
  }
  return "";
}

int CountOps(const onnx::GraphProto& g, const std::string& op) {
  int n = 0;
  for (const auto& node : g.node()) n += node.op_type() == op;
  return n;
}

TEST(OnnxExportTest, MlpMapsRowsToOutputsInDataUnits) {
  auto m = ToOnnx(Train(R"({"mlp": {"hidden": [6, 3],
                            "activation": "ACTIVATION_LEAKY_RELU"}})",
                        R"(["y", "z"])"));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->opset_import(0).version(), 17);
  EXPECT_THAT(Names(m->graph().input()), ElementsAre("input"));
  EXPECT_THAT(Names(m->graph().output()), ElementsAre("output"));
  EXPECT_EQ(
      m->graph().output(0).type().tensor_type().shape().dim(1).dim_value(), 2);
  EXPECT_EQ(CountOps(m->graph(), "MatMul"), 3);
  EXPECT_EQ(CountOps(m->graph(), "Max"), 2);  // leaky ReLU, float64
  EXPECT_EQ(Metadata(*m, "sparrow.output_columns"), R"(["y","z"])");
  for (const auto& t : m->graph().initializer()) {
    EXPECT_TRUE(t.data_type() == onnx::TensorProto::DOUBLE ||
                t.data_type() == onnx::TensorProto::INT64);
  }
}

TEST(OnnxExportTest, ASweepsChosenModelNamesItsTrial) {
  v1::TrainedModel model = Train(R"({"mlp": {"hidden": [3]}})");
  auto plain = ToOnnx(model);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(Metadata(*plain, "sparrow.sweep_trial"), "");
  v1::SweepTrialOrigin* origin = model.mutable_sweep_trial();
  origin->set_index(0);
  origin->set_trials(6);
  origin->set_label("tau=0.1 seed=2");
  origin->add_settings()->set_field("regularization.l1.tau");
  origin->mutable_settings(0)->set_value("0.1");
  auto m = ToOnnx(model);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(Metadata(*m, "sparrow.sweep_trial"),
            R"({"index":0,"trials":6,"label":"tau=0.1 seed=2",)"
            R"("settings":[{"field":"regularization.l1.tau","value":"0.1"}]})");
}

TEST(OnnxExportTest, BiasFreeMlpHasNoAdds) {
  auto m = ToOnnx(Train(R"({"mlp": {"hidden": [4], "no_bias": true}})"));
  ASSERT_TRUE(m.ok()) << m.status();
  // Only the output scaling's Add remains.
  EXPECT_EQ(CountOps(m->graph(), "Add"), 1);
}

TEST(OnnxExportTest, NarxTakesInputsAndMeasuredOutputs) {
  auto m = ToOnnx(Train(R"({"narx_mlp": {"input_lags": 3, "output_lags": 2,
                                          "hidden": [5]}})"));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(Names(m->graph().input()), ElementsAre("u", "y"));
  EXPECT_THAT(Names(m->graph().output()), ElementsAre("y_pred"));
  // u(t), u(t-1..3), y(t-1..2): six lag blocks.
  EXPECT_EQ(CountOps(m->graph(), "Slice"), 6);
  EXPECT_EQ(Metadata(*m, "sparrow.first_predicted_sample"), "3");
}

TEST(OnnxExportTest, ALinearNarxAddsItsLinearTerm) {
  auto plain = ToOnnx(Train(R"({"narx_mlp": {"input_lags": 3, "output_lags": 2,
                                              "hidden": [5]}})"));
  auto linear = ToOnnx(Train(R"({"narx_mlp": {"input_lags": 3, "output_lags": 2,
                                               "hidden": [5], "linear": true}})"));
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_TRUE(linear.ok()) << linear.status();
  // One MatMul and one Add more: L z beside the two layers. (onnx_test.py
  // runs both in onnxruntime against sparrow predict.)
  EXPECT_EQ(CountOps(linear->graph(), "MatMul"),
            CountOps(plain->graph(), "MatMul") + 1);
  EXPECT_EQ(CountOps(linear->graph(), "Add"),
            CountOps(plain->graph(), "Add") + 1);
}

TEST(OnnxExportTest, StateSpaceModelsAreAScanOverTime) {
  for (const char* model :
       {R"({"state_space_rnn": {"nx": 2, "fx_hidden": [4], "fy_hidden": [3]}})",
        R"({"state_space_rnn": {"nx": 2, "fx_hidden": [4], "linear": true,
                                "no_feedthrough": true}})",
        R"({"state_space_rnn": {"nx": 3, "initial_state":
              "INITIAL_STATE_ENCODER", "encoder": {"past_outputs": 2,
              "past_inputs": 2, "hidden": [3]}}})"}) {
    SCOPED_TRACE(model);
    auto m = ToOnnx(Train(model));
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_THAT(Names(m->graph().input()), ElementsAre("u", "x0"));
    EXPECT_THAT(Names(m->graph().output()), ElementsAre("y", "x_final"));
    ASSERT_EQ(CountOps(m->graph(), "Scan"), 1);
    for (const auto& node : m->graph().node()) {
      if (node.op_type() != "Scan") continue;
      const onnx::GraphProto& body = node.attribute(1).g();
      EXPECT_THAT(Names(body.input()), ElementsAre("x", "u_t"));
      EXPECT_THAT(Names(body.output()), ElementsAre("x_next", "y_t"));
      // The weights live in the main graph, named from the body.
      EXPECT_EQ(body.initializer_size(), 0);
    }
  }
}

// onnxruntime has no float64 Conv, RNN or LSTM: those layers compute in
// float32 between Casts, with float weights.
TEST(OnnxExportTest, LayeredModelsRunTheirConvAndRecurrentLayersInFloat) {
  for (const auto& [model, op] :
       std::vector<std::pair<std::string, std::string>>{
           {R"({"lstm": {"hidden": [3, 2], "steps": 1}})", "LSTM"},
           {R"({"rnn": {"hidden": [3], "steps": 1, "sequence_output": true,
                        "activation": "ACTIVATION_LEAKY_RELU"}})",
            "RNN"},
           {R"({"cnn": {"channels": 1, "height": 1, "width": 1, "layers": [
                 {"conv": {"filters": 2, "kernel": 1}}, {"flatten": {}},
                 {"dense": {"units": 3}}]}})",
            "Conv"}}) {
    SCOPED_TRACE(model);
    auto m = ToOnnx(Train(model));
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_THAT(Names(m->graph().input()), ElementsAre("input"));
    EXPECT_THAT(Names(m->graph().output()), ElementsAre("output"));
    EXPECT_GE(CountOps(m->graph(), op), 1);
    EXPECT_EQ(CountOps(m->graph(), "Cast"), 2 * CountOps(m->graph(), op));
    for (const auto& t : m->graph().initializer()) {
      if (t.data_type() == onnx::TensorProto::FLOAT) {
        EXPECT_THAT(t.name(),
                    ::testing::AnyOf(HasSubstr("lstm"), HasSubstr("rnn"),
                                     HasSubstr("conv")));
      }
    }
  }
}

TEST(OnnxExportTest, ClassifiersAlsoGiveProbabilities) {
  std::string csv = "u,c\n";
  for (int k = 0; k < 60; ++k) {
    absl::StrAppendFormat(&csv, "%d,%d\n", k % 7, (k % 7) > 3 ? 1 : 0);
  }
  auto spec = ParseJobSpecJson(R"({"data": {"csv_path": "x.csv",
      "inputs": ["u"], "outputs": ["c"]}, "model": {"mlp": {"hidden": [3]}},
      "loss": {"kind": "LOSS_SOFTMAX_CROSS_ENTROPY"},
      "optimizer": {"lbfgs": {}}, "stopping": {"max_epochs": 2}})");
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto config = ToTrainConfig(*spec);
  ASSERT_TRUE(config.ok()) << config.status();
  auto data = LoadTrainData(*spec, *config, csv);
  ASSERT_TRUE(data.ok()) << data.status();
  auto result = core::Train(*config, *data, nullptr);
  ASSERT_TRUE(result.ok()) << result.status();
  auto m = ToOnnx(ToProto(*spec, *result));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(Names(m->graph().output()),
              ElementsAre("output", "probabilities"));
  EXPECT_EQ(CountOps(m->graph(), "Softmax"), 1);
}

TEST(OnnxExportTest, CheckerRefusesABrokenGraph) {
  auto m = ToOnnx(Train(R"({"mlp": {"hidden": [2]}})"));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(onnx_export::CheckModel(*m).ok());
  onnx::ModelProto broken = *m;
  broken.mutable_graph()->mutable_node(0)->set_input(0, "no_such_value");
  const absl::Status s = onnx_export::CheckModel(broken);
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(s.message(), HasSubstr("ONNX checker"));
}

TEST(OnnxExportTest, ExportIsDeterministic) {
  const v1::TrainedModel model = Train(R"({"narx_mlp": {"input_lags": 1,
                                           "output_lags": 1}})");
  auto a = ExportOnnx(model);
  auto b = ExportOnnx(model);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*a, *b);
  onnx::ModelProto parsed;
  EXPECT_TRUE(parsed.ParseFromString(*a));
}

}  // namespace
}  // namespace sparrow::translate
