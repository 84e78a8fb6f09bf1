// Inputs the fuzz targets (fuzz/) crashed on, fed through the same code paths
// as the target that found them. Run under `make sanitize` these fail the way
// the fuzzer did (UBSan / ASan abort) if the fix regresses; in the plain build
// they check the error the input gets instead.
#include <string>

#include "core/train/model.h"
#include "core/train/trainer.h"
#include "fuzz/fuzz_common.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/jobs/resume.h"
#include "sparrow/v1/checkpoint.pb.h"
#include "tests/server/testing/service_fixture.h"
#include "translate/config.h"
#include "translate/data.h"
#include "translate/json.h"

namespace sparrow::fuzz {
namespace {

using ::testing::HasSubstr;

// spec_fuzz's path: JSON -> JobSpec -> TrainConfig -> parameter count.
absl::Status SpecPath(const std::string& json) {
  auto spec = translate::ParseJobSpecJson(json);
  if (!spec.ok()) return spec.status();
  auto config = translate::ToTrainConfig(*spec);
  if (!config.ok()) return config.status();
  return core::CountParameters(config->model, 1, 1).status();
}

std::string RnnSpec(const std::string& rnn) {
  return R"({"data": {"csv_path": "x.csv", "inputs": ["u"], "outputs": ["y"]},
             "model": {"state_space_rnn": )" +
         rnn + R"(}, "optimizer": {"lbfgs": {}}})";
}

// nx + nu overflowed int in the fx network's input count (UBSan: signed
// integer overflow); the message spoke of -2147483648 inputs.
TEST(FuzzRegressionTest, StateDimensionNearIntMaxIsRefusedByName) {
  const absl::Status s = SpecPath(RnnSpec(R"({"nx": 2147483647})"));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("model.state_space_rnn.nx is 2147483647"));
  EXPECT_THAT(s.message(), HasSubstr("100000"));
}

// Widths within the per-layer limit whose product overflowed int in
// Mlp::Layer::num_params (the parameter count of the submission check).
TEST(FuzzRegressionTest, ParametersPastIntAreCountedIn64Bits) {
  auto spec = translate::ParseJobSpecJson(
      RnnSpec(R"({"nx": 50000, "fx_hidden": [100000]})"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto config = translate::ToTrainConfig(*spec);
  ASSERT_TRUE(config.ok()) << config.status();
  auto n = core::CountParameters(config->model, 1, 1);
  ASSERT_TRUE(n.ok()) << n.status();
  // fx alone: 100000 x (50001 + 1) + 50000 x (100000 + 1), past INT_MAX;
  // the service then refuses it naming --max-model-params.
  EXPECT_GT(*n, int64_t{100000} * 50002 + int64_t{50000} * 100001 - 1);
}

// ny * past_outputs overflowed int in the encoder's input count.
TEST(FuzzRegressionTest, EncoderWindowOverflowIsRefused) {
  core::StateSpaceRnnSpec spec;
  spec.nx = 2;
  spec.nu = 1;
  spec.ny = 100000;
  spec.initial_state = core::InitialState::kEncoder;
  spec.encoder.past_outputs = 100000;
  const absl::Status s = core::ValidateStateSpaceRnnSpec(spec, "m");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("m.encoder"));
}

// checkpoint_fuzz's path: a checkpoint applied to a small job, then trained.
absl::StatusOr<core::TrainResult> Resume(int spec_index,
                                         const v1::JobCheckpoint& checkpoint) {
  auto spec = translate::ParseJobSpecJson(kSmallSpecs[spec_index]);
  if (!spec.ok()) return spec.status();
  auto config = translate::ToTrainConfig(*spec);
  if (!config.ok()) return config.status();
  auto data = translate::LoadTrainData(*spec, *config, SmallCsv());
  if (!data.ok()) return data.status();
  const absl::Status applied = server::ApplyCheckpoint(checkpoint, &*config);
  if (!applied.ok()) return applied;
  return core::Train(*config, *data, nullptr);
}

// An Adam checkpoint whose update count does not fit a long long (UBSan:
// float-cast-overflow in FirstOrderOptimizer::UnpackState). The state is
// refused: the job fails saying so (DATA_LOSS).
TEST(FuzzRegressionTest, AdamCheckpointWithHugeUpdateCountIsRefused) {
  auto reference = Resume(0, v1::JobCheckpoint());
  ASSERT_TRUE(reference.ok()) << reference.status();
  const Eigen::Index n = reference->model.params.size();
  v1::JobCheckpoint checkpoint;
  checkpoint.set_iteration(1);
  checkpoint.add_optimizer_state(1e300);
  for (Eigen::Index k = 0; k < 2 * n; ++k) checkpoint.add_optimizer_state(0);
  auto resumed = Resume(0, checkpoint);
  EXPECT_EQ(resumed.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(resumed.status().message(), HasSubstr("does not fit"));
}

// A checkpoint with a negative iteration overflowed the remaining budget
// (UBSan: signed integer overflow in the job manager's resume step) or
// multiplied it. server::ApplyCheckpoint refuses it, and the job fails with
// the reason rather than run a wrong budget.
TEST(FuzzRegressionTest, CheckpointWithNegativeIterationIsRefused) {
  for (int iteration : {-2147483647, -1000}) {
    v1::JobCheckpoint checkpoint;
    checkpoint.set_iteration(iteration);
    auto resumed = Resume(0, checkpoint);
    EXPECT_EQ(resumed.status().code(), absl::StatusCode::kDataLoss)
        << iteration;
    EXPECT_THAT(resumed.status().message(),
                HasSubstr("cannot come from a run of this job"));
  }
  v1::JobCheckpoint checkpoint;
  checkpoint.set_iteration(1);
  checkpoint.set_elapsed_seconds(-1);
  EXPECT_FALSE(Resume(0, checkpoint).ok());
}

// rpc_fuzz's path: requests to an in-process sparrowd.
class FuzzRpcRegressionTest : public server::testing::ServiceFixture {};

// An upload whose header has a byte that is not UTF-8 ("u,\xf9,z") was
// stored; its reply could not be serialized, and the client's
// ClientWriter::Finish aborted on a gRPC assertion (issue 15, defect 2).
TEST_F(FuzzRpcRegressionTest, UploadWithInvalidUtf8ColumnNameIsRefused) {
  const std::string csv = "u,\xf9,z\n1,2,3\n4,5,6\n";
  const grpc::Status s =
      UploadRequests({Chunk(0, csv, true, server::Sha256Hex(csv))});
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("column 2"));
  EXPECT_THAT(s.error_message(), HasSubstr("UTF-8"));
  EXPECT_TRUE(AllDatasetIds().empty());
  // Truncated and overlong sequences too; well-formed UTF-8 is accepted.
  for (const std::string bad :
       {"u,y\xc3\n1,2\n", "\xc0\xafu,y\n1,2\n", "u,\xed\xa0\x80\n1,2\n"}) {
    EXPECT_EQ(UploadRequests({Chunk(0, bad, true, server::Sha256Hex(bad))})
                  .error_code(),
              grpc::StatusCode::INVALID_ARGUMENT);
  }
  const std::string good =
      "u,temp \xc2\xb0"
      "C,\xe2\x82\xac\n1,2,3\n";
  const grpc::Status ok =
      UploadRequests({Chunk(0, good, true, server::Sha256Hex(good))});
  EXPECT_TRUE(ok.ok()) << ok.error_message();
  EXPECT_EQ(AllDatasetIds().size(), 1u);
}

}  // namespace
}  // namespace sparrow::fuzz
