#include "translate/model.h"

#include <string>

#include "core/metrics/metrics.h"
#include "gtest/gtest.h"
#include "tests/translate/testing/spec_fixture.h"
#include "translate/config.h"
#include "translate/data.h"
#include "translate/json.h"

namespace sparrow::translate {
namespace {

TEST(ModelTest, TrainedModelRoundTripsThroughProto) {
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

// A stored 2 -> 3 -> 1 MLP with identity scalings and no parameters (it needs
// 13).
v1::TrainedModel StoredMlpWithoutParameters() {
  v1::TrainedModel m;
  m.mutable_model()->mutable_mlp()->add_hidden(3);
  m.set_num_inputs(2);
  m.set_num_outputs(1);
  for (auto* s : {m.mutable_input_scaling(), m.mutable_output_scaling()}) {
    const int n = s == m.mutable_input_scaling() ? 2 : 1;
    for (int i = 0; i < n; ++i) {
      s->add_mean(0);
      s->add_scale(1);
    }
  }
  return m;
}

TEST(ModelTest, CorruptStoredModelIsRejected) {
  v1::TrainedModel bad = StoredMlpWithoutParameters();
  bad.add_parameters(1.0);
  const auto m = FromProto(bad);
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("needs 13"), std::string::npos)
      << m.status();
}

TEST(ModelTest, StoredModelMustNameEveryChannel) {
  v1::TrainedModel bad = StoredMlpWithoutParameters();
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

}  // namespace
}  // namespace sparrow::translate
