// B2LD and BLInG through the trainer: bias-free sigmoid networks on held-out
// data, the reported objective, and the option checks.
#include <cmath>

#include "core/train/trainer.h"
#include "gtest/gtest.h"
#include "tests/core/train/testing/small_problems.h"

namespace sparrow::core {
namespace {

TrainData SineData() { return testing::SineTables(500, 0, 200); }

enum class Kind { kB2ld, kBling };

TrainConfig BldConfig(Kind kind) {
  TrainConfig c;
  c.model.kind = MlpKind{};
  c.model.hidden = {10, 10, 10};
  c.model.activation = Activation::kSigmoid;
  c.model.bias = false;
  if (kind == Kind::kB2ld) {
    B2ldOptions o;
    o.stop.max_iterations = 40;
    c.optimizer = o;
  } else {
    BlingOptions o;
    o.stop.max_iterations = 200;
    o.batch_size = 50;
    c.optimizer = o;
  }
  c.seed = 3;
  return c;
}

TEST(BldTrainerTest, B2ldAndBlingFitHeldOutData) {
  const TrainData data = SineData();
  for (Kind kind : {Kind::kB2ld, Kind::kBling}) {
    auto r = Train(BldConfig(kind), data, nullptr);
    ASSERT_TRUE(r.ok()) << r.status();
    // The target's standard deviation is about 3.9 in data units.
    EXPECT_LT(r->metrics.test_rmse, 1.0)
        << (kind == Kind::kB2ld ? "b2ld" : "bling");
    EXPECT_LT(r->summary.final_loss, r->summary.initial_loss);
    // 2*10 + 10*10 + 10*10 + 10*1 weights, no biases.
    EXPECT_EQ(r->model.params.size(), 230);
  }
}

TEST(BldTrainerTest, B2ldReportsPerLayerUpdates) {
  auto r = Train(BldConfig(Kind::kB2ld), SineData(), nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_FALSE(r->summary.history.empty());
  int found = 0;
  for (const auto& [name, value] : r->summary.history.back().extras) {
    if (name.rfind("updates_layer_", 0) == 0) {
      ++found;
      EXPECT_GE(value, 0);
    }
  }
  EXPECT_EQ(found, 4);
}

TEST(BldTrainerTest, OnlyLeastSquaresMlps) {
  TrainConfig c = BldConfig(Kind::kB2ld);
  c.loss.kind = LossKind::kSoftmaxCrossEntropy;
  EXPECT_FALSE(c.Validate().ok());
  c = BldConfig(Kind::kBling);
  data::NarxLags& lags = c.model.kind.emplace<NarxMlpKind>().lags;
  lags.input_lags = lags.output_lags = 1;
  const absl::Status s = c.Validate();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("optimizer.bling"), std::string::npos);
  c = BldConfig(Kind::kB2ld);
  std::get<B2ldOptions>(c.optimizer).epsilon_decay = 2.0;
  EXPECT_NE(c.Validate().message().find("optimizer.b2ld.delta"),
            std::string::npos);
}

}  // namespace
}  // namespace sparrow::core
