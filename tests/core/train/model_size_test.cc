// Model sizes from a spec are counted in 64 bits, and sizes the library
// cannot hold are refused with a message naming the field and the limit (an
// nx of 2^31 - 1 used to overflow into "fx: the number of inputs is
// -2147483648").
#include <climits>
#include <string>

#include "core/train/model.h"
#include "gtest/gtest.h"

namespace sparrow::core {
namespace {

bool Contains(const absl::Status& s, const std::string& text) {
  return std::string(s.message()).find(text) != std::string::npos;
}

ModelConfig Rnn(int nx) {
  ModelConfig c;
  StateSpaceRnnSpec& rnn = c.kind.emplace<StateSpaceRnnKind>().rnn;
  rnn.nx = nx;
  rnn.fx_hidden = {8};
  rnn.fy_hidden = {8};
  return c;
}

TEST(ModelSizeTest, AHugeStateDimensionIsRefusedNamingNxAndTheLimit) {
  for (int nx : {INT_MAX, kMaxLayerWidth + 1}) {
    const auto count = CountParameters(Rnn(nx), 1, 1);
    ASSERT_FALSE(count.ok());
    EXPECT_EQ(count.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(Contains(count.status(), "state_space_rnn.nx is"))
        << count.status();
    EXPECT_TRUE(Contains(count.status(), std::to_string(kMaxLayerWidth)))
        << count.status();
    EXPECT_FALSE(Contains(count.status(), "-")) << count.status();
  }
}

TEST(ModelSizeTest, CountsMatchTheBuiltModel) {
  const auto count = CountParameters(Rnn(3), 2, 1);
  ASSERT_TRUE(count.ok()) << count.status();
  StateSpaceRnnSpec spec = Rnn(3).as<StateSpaceRnnKind>().rnn;
  spec.nu = 2;
  spec.ny = 1;
  EXPECT_EQ(*count, StateSpaceRnn(spec).num_params());
}

TEST(ModelSizeTest, ANetworkBeyondIntIndexingIsCountedThenRefused) {
  // Five hidden layers of 100000: 4e10 weights, beyond any int. The count is
  // exact (a service compares it with its own limit and names that) ...
  ModelConfig c;
  c.kind = MlpKind{};
  c.hidden = std::vector<int>(5, kMaxLayerWidth);
  const auto count = CountParameters(c, 10, 1);
  ASSERT_TRUE(count.ok()) << count.status();
  EXPECT_EQ(*count,
            11 * int64_t{100000} + 4 * int64_t{100001} * 100000 + 100001);
  // ... and building such a network is refused, not wrapped around.
  const absl::Status s = ValidateMlpSpec(NetworkSpec(c, 10, 1), "model.mlp");
  EXPECT_TRUE(Contains(s, "model.mlp would have 40001600001 parameters")) << s;
  EXPECT_TRUE(Contains(s, "at most 2147483647")) << s;
  // The state-space model's networks, too.
  ModelConfig r = Rnn(kMaxLayerWidth);
  r.as<StateSpaceRnnKind>().rnn.fx_hidden = {kMaxLayerWidth, kMaxLayerWidth};
  const auto rnn_count = CountParameters(r, 1, 1);
  ASSERT_TRUE(rnn_count.ok()) << rnn_count.status();
  EXPECT_GT(*rnn_count, kMaxNetworkParams);
  StateSpaceRnnSpec spec = r.as<StateSpaceRnnKind>().rnn;
  spec.nu = spec.ny = 1;
  EXPECT_FALSE(ValidateStateSpaceRnnSpec(spec, "model.state_space_rnn").ok());
}

}  // namespace
}  // namespace sparrow::core
