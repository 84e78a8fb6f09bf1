#include "server/spec/convert.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/metrics/metrics.h"
#include "gtest/gtest.h"

namespace sparrow::spec {
namespace {

std::string Csv(int rows) {
  std::string s = "u,y\n";
  for (int i = 0; i < rows; ++i) {
    s += std::to_string(std::sin(0.1 * i)) + "," +
         std::to_string(std::cos(0.07 * i)) + "\n";
  }
  return s;
}

constexpr char kRnnSpec[] = R"({
  "data": {"csv_path": "x.csv", "inputs": ["u"], "outputs": ["y"]},
  "split": {"train": [{"first": 1, "last": 150}], "test": [{"first": 151, "last": 200}]},
  "model": {"state_space_rnn": {"nx": 2, "fx_hidden": [3], "fy_hidden": [3]}},
  "optimizer": {"lbfgs": {}},
  "stopping": {"max_epochs": 30},
  "seed": 7
})";

absl::Status Load(const std::string& json, const std::string& csv) {
  auto spec = ParseJobSpecJson(json);
  if (!spec.ok()) return spec.status();
  auto config = ToTrainConfig(*spec);
  if (!config.ok()) return config.status();
  return LoadTrainData(*spec, *config, csv).status();
}

std::string Replace(std::string s, const std::string& from,
                    const std::string& to) {
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

void ExpectError(const absl::Status& s, const std::string& needle) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find(needle), std::string::npos)
      << "message: " << s.message();
}

TEST(ConvertTest, ValidSpecLoads) {
  EXPECT_TRUE(Load(kRnnSpec, Csv(200)).ok());
}

TEST(ConvertTest, UnknownFieldIsAnError) {
  ExpectError(Load(Replace(kRnnSpec, "\"seed\": 7", "\"seed\": 7, \"sede\": 1"),
                   Csv(200)),
              "sede");
}

TEST(ConvertTest, NegativeLayerSizeIsNamed) {
  ExpectError(
      Load(Replace(kRnnSpec, "\"fx_hidden\": [3]", "\"fx_hidden\": [-3]"),
           Csv(200)),
      "fx.hidden[0] is -3");
}

TEST(ConvertTest, SplitOutsideTheDataIsNamed) {
  ExpectError(
      Load(Replace(kRnnSpec, "\"last\": 200", "\"last\": 260"), Csv(200)),
      "split.test");
}

TEST(ConvertTest, LagLongerThanTheDataIsNamed) {
  const std::string narx = Replace(
      kRnnSpec,
      R"({"state_space_rnn": {"nx": 2, "fx_hidden": [3], "fy_hidden": [3]}})",
      R"({"narx_mlp": {"input_lags": 80, "output_lags": 2, "hidden": [4]}})");
  ExpectError(Load(narx, Csv(200)), "lag 80 is longer than the data");
}

TEST(ConvertTest, UnknownColumnIsNamed) {
  ExpectError(Load(Replace(kRnnSpec, "[\"y\"]", "[\"force\"]"), Csv(200)),
              "force");
}

TEST(ConvertTest, MissingPiecesAreExplained) {
  ExpectError(
      Load(Replace(kRnnSpec, "\"optimizer\": {\"lbfgs\": {}},", ""), Csv(200)),
      "optimizer: set one of");
  ExpectError(Load(Replace(kRnnSpec, "\"inputs\": [\"u\"], ", ""), Csv(200)),
              "data.inputs");
  auto s = Load(Replace(kRnnSpec, "\"optimizer\": {\"lbfgs\": {}}",
                        "\"optimizer\": {\"rls\": {}}"),
                Csv(200));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  ExpectError(Load(Replace(kRnnSpec, "\"optimizer\": {\"lbfgs\": {}}",
                           "\"optimizer\": {\"sbdl\": {}}"),
                   Csv(200)),
              "optimizer.sbdl trains narx_mlp and mlp models");
}

TEST(ConvertTest, PenaltiesNeedAdmmAndAdmmNeedsAPenalty) {
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

TEST(ConvertTest, AColumnHasOneRole) {
  ExpectError(
      Load(Replace(kRnnSpec, "\"outputs\": [\"y\"]", "\"outputs\": [\"0\"]"),
           Csv(200)),
      "selected twice");
}

TEST(ConvertTest, HeldOutRowsMustNotBeTrainedOn) {
  ExpectError(
      Load(Replace(kRnnSpec, "\"first\": 151", "\"first\": 141"), Csv(200)),
      "split.test overlaps split.train at rows 141-150");
}

TEST(ConvertTest, BadCsvIsNamedWithRowAndColumn) {
  std::string csv = Csv(200);
  csv = Replace(csv, "\n0.0998", "\nabc");
  const absl::Status s = Load(kRnnSpec, csv);
  ExpectError(s, "line 3");
  EXPECT_NE(s.message().find("u"), std::string::npos);
}

TEST(ConvertTest, TrainedModelRoundTripsThroughProto) {
  auto spec = ParseJobSpecJson(kRnnSpec);
  ASSERT_TRUE(spec.ok());
  auto config = ToTrainConfig(*spec);
  ASSERT_TRUE(config.ok());
  auto data = LoadTrainData(*spec, *config, Csv(200));
  ASSERT_TRUE(data.ok());
  auto result = core::Train(*config, *data, nullptr);
  ASSERT_TRUE(result.ok()) << result.status();
  const v1::TrainedModel proto = ToProto(*spec, *result);
  EXPECT_EQ(proto.parameters_size(), result->model.params.size());
  EXPECT_EQ(proto.blocks_size(), 3);
  std::string bytes;
  ASSERT_TRUE(proto.SerializeToString(&bytes));
  v1::TrainedModel parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  auto model = FromProto(parsed);
  ASSERT_TRUE(model.ok()) << model.status();
  const auto& trace = data->test_seq.traces[0];
  auto a = core::Simulate(result->model, trace.u, trace.y);
  auto b = core::Simulate(*model, trace.u, trace.y);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->y, b->y);
  EXPECT_NEAR(core::Bfr(trace.y, b->y), result->metrics.test_bfr, 1e-9);
}

TEST(ConvertTest, CorruptStoredModelIsRejected) {
  v1::TrainedModel bad;
  bad.mutable_model()->mutable_mlp()->add_hidden(3);
  bad.set_num_inputs(2);
  bad.set_num_outputs(1);
  for (auto* s : {bad.mutable_input_scaling(), bad.mutable_output_scaling()}) {
    const int n = s == bad.mutable_input_scaling() ? 2 : 1;
    for (int i = 0; i < n; ++i) {
      s->add_mean(0);
      s->add_scale(1);
    }
  }
  bad.add_parameters(1.0);
  const auto m = FromProto(bad);
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("needs 13"), std::string::npos)
      << m.status();
}

TEST(ConvertTest, StoredModelMustNameEveryChannel) {
  v1::TrainedModel bad;
  bad.mutable_model()->mutable_mlp()->add_hidden(3);
  bad.set_num_inputs(2);
  bad.set_num_outputs(1);
  for (auto* s : {bad.mutable_input_scaling(), bad.mutable_output_scaling()}) {
    const int n = s == bad.mutable_input_scaling() ? 2 : 1;
    for (int i = 0; i < n; ++i) {
      s->add_mean(0);
      s->add_scale(1);
    }
  }
  bad.mutable_input_scaling()->add_names("u1");
  bad.mutable_input_scaling()->add_names("u2");
  for (int i = 0; i < 13; ++i) bad.add_parameters(0.1);
  const auto m = FromProto(bad);
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("names 2 inputs and 0 outputs"),
            std::string::npos)
      << m.status();
  bad.mutable_output_scaling()->add_names("y");
  EXPECT_TRUE(FromProto(bad).ok()) << FromProto(bad).status();
}

TEST(ConvertTest, EveryExampleSpecIsValid) {
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
}  // namespace sparrow::spec
