// The layered model kinds (cnn, rnn, lstm) end to end in core: shapes refused
// by name, the threaded objective against finite differences and its
// determinism, small networks that learn a synthetic image task, and the
// all-RLS mode's one-hot MSE targets.
#include <algorithm>
#include <map>
#include <memory>
#include <string>

#include "core/train/model_registry.h"
#include "core/train/network_objective.h"
#include "core/train/setup.h"
#include "core/train/trainer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/finite_difference.h"

namespace sparrow::core {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using Type = CnnLayerConfig::Type;

// n images of 1 x side x side in [0, 1]: class 0 has a bright horizontal
// bar, class 1 a vertical one, class 2 none, at random places, with noise.
data::TableData Bars(int n, int side, uint64_t seed) {
  Rng rng(seed);
  data::TableData t;
  t.x.resize(side * side, n);
  t.y.resize(1, n);
  for (int j = 0; j < n; ++j) {
    const int label = static_cast<int>(rng.Below(3));
    const int at = static_cast<int>(rng.Below(side));
    for (int r = 0; r < side; ++r) {
      for (int c = 0; c < side; ++c) {
        const bool bar = (label == 0 && r == at) || (label == 1 && c == at);
        t.x(r * side + c, j) = (bar ? 0.8 : 0.0) + 0.2 * rng.Uniform();
      }
    }
    t.y(0, j) = label;
  }
  for (int i = 0; i < side * side; ++i) t.input_names.push_back("p");
  t.output_names = {"label"};
  t.image_channels = 1;
  t.image_height = t.image_width = side;
  return t;
}

CnnLayerConfig Conv(int filters) {
  CnnLayerConfig l;
  l.type = Type::kConv;
  l.units = filters;
  l.padding = 1;
  return l;
}
// A max pool of 2 (stride 2), a flatten (size unchecked) or a dense layer.
CnnLayerConfig Of(Type type, int units = 0) {
  CnnLayerConfig l;
  l.type = type;
  l.units = units;
  l.stride = type == Type::kMaxPool ? 2 : 1;
  if (type == Type::kFlatten) l.size = 0;
  return l;
}

TrainConfig AdamConfig(ModelKind kind, int epochs, int threads) {
  TrainConfig c;
  c.model.kind = std::move(kind);
  c.model.init = InitLaw::kTorch;
  c.loss.kind = LossKind::kSoftmaxCrossEntropy;
  c.scaling = TrainConfig::Scaling::kNone;
  AdamOptions adam;
  adam.learning_rate = 0.01;
  adam.stop.max_iterations = epochs;
  c.optimizer = adam;
  c.batch_size = 16;
  c.threads = threads;
  c.seed = 3;
  return c;
}

CnnKind SmallCnn() {
  CnnKind k;
  k.layers = {Conv(4), Of(Type::kMaxPool), Of(Type::kFlatten),
              Of(Type::kDense, 8)};
  return k;
}

absl::Status CnnStatus(const CnnKind& k, int n_in) {
  ModelConfig c;
  c.kind = k;
  return CnnKind::Family().CountParameters(c, n_in, 3).status();
}

TEST(LayeredTest, ShapesThatDoNotFitAreRefusedByField) {
  CnnKind k;
  CnnLayerConfig big = Conv(2);
  big.kernel = 9;
  big.padding = 0;
  k.layers = {big, Of(Type::kFlatten)};
  EXPECT_THAT(CnnStatus(k, 64).message(),
              ::testing::HasSubstr("model.cnn.layers[0]: the 9x9 kernel is "
                                   "larger than the padded input"));
  CnnLayerConfig flat = Of(Type::kFlatten);
  flat.size = 100;
  k.layers = {Conv(2), flat};
  EXPECT_THAT(CnnStatus(k, 64).message(),
              ::testing::HasSubstr("model.cnn.layers[1]: flatten size 100 does "
                                   "not match the flattened 2 x 8 x 8 = 128"));
  k.layers = {Conv(2), Of(Type::kDense, 4)};
  EXPECT_THAT(CnnStatus(k, 64).message(),
              ::testing::HasSubstr("model.cnn.layers[1]: a dense layer needs a "
                                   "flatten before it"));
  k.layers = {Of(Type::kFlatten)};
  EXPECT_THAT(CnnStatus(k, 60).message(),
              ::testing::HasSubstr("does not match the 60 inputs"));
  ModelConfig c;
  c.kind = LstmKind{{{8}, 7, false}};
  EXPECT_THAT(LstmKind::Family().CountParameters(c, 64, 3).status().message(),
              ::testing::HasSubstr("model.lstm.steps is 7"));
}

// Sizes that would overflow the library's int indices, or ask for absurd
// buffers, are refused by name before anything is allocated.
TEST(LayeredTest, HugeLayersAreRefusedBeforeAnythingIsBuilt) {
  ModelConfig c;
  c.kind = LstmKind{{{32768}, 28, false}};
  EXPECT_THAT(LstmKind::Family().CountParameters(c, 784, 10).status().message(),
              ::testing::HasSubstr("model.lstm.hidden[0]: its parameters would "
                                   "be"));
  CnnKind k;
  CnnLayerConfig pad = Conv(1);
  pad.kernel = 1;
  pad.padding = 32754;
  k.layers = {pad, Of(Type::kFlatten)};
  EXPECT_THAT(CnnStatus(k, 784).message(),
              ::testing::HasSubstr("padding (32754) in 0..kernel - 1"));
  k.layers = {Of(Type::kFlatten), Of(Type::kDense, 50000),
              Of(Type::kDense, 99999)};
  EXPECT_THAT(CnnStatus(k, 784).message(),
              ::testing::HasSubstr("model.cnn.layers[2]: its parameters would "
                                   "be"));
  CnnLayerConfig wide = Conv(100000);
  wide.kernel = 64;
  wide.padding = 63;
  k.layers = {wide, Of(Type::kFlatten)};
  EXPECT_THAT(CnnStatus(k, 784).message(),
              ::testing::HasSubstr("model.cnn.layers[0]: its output values"));
}

TEST(LayeredTest, ParameterCountsFollowTheLayouts) {
  ModelConfig c;
  c.kind = SmallCnn();  // 8x8: conv 4 (4 * 10), pool, 64 -> 8, 8 -> 3
  EXPECT_EQ(*CnnKind::Family().CountParameters(c, 64, 3),
            4 * 10 + (64 * 8 + 8) + (8 * 3 + 3));
  c.kind = LstmKind{{{5, 6}, 4, false}};  // 4 steps of 2 features
  EXPECT_EQ(*LstmKind::Family().CountParameters(c, 8, 3),
            4 * 5 * (2 + 5 + 2) + 4 * 6 * (5 + 6 + 2) + (6 * 3 + 3));
  c.kind = RnnKind{{{5}, 4, true}};  // sequence output: 2 outputs per step
  EXPECT_EQ(*RnnKind::Family().CountParameters(c, 8, 8),
            5 * (2 + 5 + 2) + (5 * 2 + 2));
}

// The threaded minibatch objective: its gradient against finite differences,
// and the same value with 1 and 3 threads up to summation order.
TEST(LayeredTest, NetworkObjectiveGradientMatchesFiniteDifferences) {
  TrainData data;
  data.train_table = Bars(10, 6, 1);
  TrainConfig c = AdamConfig(LstmKind{{{4}, 0, false}}, 1, 3);
  c.rho_theta = 0.1;
  Model model;
  model.config = c.model;
  TrainSetup setup;
  Rng rng(1);
  ASSERT_TRUE(FamilyOf(c.model.kind).Setup(c, data, &rng, &model, &setup).ok());
  Objective& f = *setup.objective;
  VectorXd grad;
  const double v = f.Evaluate(model.params, &grad);
  const VectorXd fd = testing::NumericGradient(
      [&](const VectorXd& w) { return f.Evaluate(w, nullptr); }, model.params);
  EXPECT_LT(testing::RelativeError(grad, fd), 1e-7);
  NetworkObjective one(&setup.network, &data.train_table.x,
                       &setup.train_table.y, c.loss, c.rho_theta, 0, false, 1);
  EXPECT_NEAR(one.Evaluate(model.params, nullptr), v, 1e-12);
}

TEST(LayeredTest, TrainingIsDeterministicForASeedAndThreadCount) {
  TrainData data;
  data.train_table = Bars(64, 6, 2);
  const TrainConfig c = AdamConfig(SmallCnn(), 2, 2);
  auto a = Train(c, data, nullptr);
  auto b = Train(c, data, nullptr);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  EXPECT_EQ(a->model.params, b->model.params);
}

TEST(LayeredTest, SmallNetworksLearnBarsOnHeldOutImages) {
  TrainData data;
  data.train_table = Bars(300, 8, 3);
  data.test_table = Bars(150, 8, 4);
  const struct {
    ModelKind kind;
    int epochs;
  } cases[] = {{SmallCnn(), 15},
               {LstmKind{{{12}, 0, false}}, 20},
               {RnnKind{{{12}, 0, false}}, 20}};
  for (const auto& [kind, epochs] : cases) {
    auto r = Train(AdamConfig(kind, epochs, 2), data, nullptr);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_GT(r->metrics.test_accuracy, 90.0) << FamilyOf(kind).name();
    EXPECT_EQ(r->model.output_names.size(), 3u);
  }
}

// Float32 products: deterministic, close to float64's run, and as accurate
// on held-out images.
TEST(LayeredTest, Float32CnnLearnsAndIsDeterministic) {
  TrainData data;
  data.train_table = Bars(300, 8, 3);
  data.test_table = Bars(150, 8, 4);
  TrainConfig c = AdamConfig(SmallCnn(), 15, 2);
  auto f64 = Train(c, data, nullptr);
  c.model.precision = Precision::kFloat32;
  auto a = Train(c, data, nullptr);
  auto b = Train(c, data, nullptr);
  ASSERT_TRUE(f64.ok() && a.ok() && b.ok()) << a.status();
  EXPECT_EQ(a->model.params, b->model.params);
  EXPECT_NE(a->model.params, f64->model.params);
  EXPECT_LT(testing::RelativeError(a->model.params, f64->model.params), 1e-2);
  EXPECT_GT(a->metrics.test_accuracy, 90.0);
}

// Each epoch's record carries the throughput and the test accuracy; the last
// one is the final model's.
TEST(LayeredTest, EpochRecordsCarryThroughputAndTestAccuracy) {
  TrainData data;
  data.train_table = Bars(120, 6, 5);
  data.test_table = Bars(60, 6, 6);
  auto r = Train(AdamConfig(SmallCnn(), 3, 2), data, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->summary.history.size(), 3u);
  for (const IterationRecord& rec : r->summary.history) {
    std::map<std::string, double> extras(rec.extras.begin(), rec.extras.end());
    ASSERT_EQ(extras.count("samples_per_s"), 1u);
    ASSERT_EQ(extras.count("test_accuracy"), 1u);
    EXPECT_GT(extras["samples_per_s"], 0.0);
    EXPECT_GE(extras["test_accuracy"], 0.0);
    EXPECT_LE(extras["test_accuracy"], 100.0);
  }
  const auto& last = r->summary.history.back().extras;
  const std::map<std::string, double> final_extras(last.begin(), last.end());
  EXPECT_EQ(final_extras.at("test_accuracy"), r->metrics.test_accuracy);
}

// The paper's all-RLS classification mode: MSE on one-hot targets (one
// linear output per class), every layer RLS; accuracy by the largest output.
// Without one_hot_targets, MSE regresses the label value (one output).
TEST(LayeredTest, AllRlsModeFitsOneHotTargetsWithMse) {
  TrainData data;
  data.train_table = Bars(300, 8, 3);
  data.test_table = Bars(150, 8, 4);
  TrainConfig c = AdamConfig(SmallCnn(), 10, 2);
  c.loss.kind = LossKind::kMse;
  c.loss.one_hot = true;
  RlsOptions rls;
  rls.stop.max_iterations = 10;
  c.optimizer = rls;
  auto r = Train(c, data, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->model.output_names,
            (std::vector<std::string>{"label=0", "label=1", "label=2"}));
  EXPECT_GT(r->metrics.test_accuracy, 90.0);
  const auto& extras = r->summary.history.back().extras;
  EXPECT_TRUE(std::any_of(extras.begin(), extras.end(), [](const auto& e) {
    return e.first == "rls.layer4.h";  // the output layer is RLS's too
  }));

  c.loss.one_hot = false;
  auto regression = Train(c, data, nullptr);
  ASSERT_TRUE(regression.ok()) << regression.status();
  EXPECT_EQ(regression->model.output_names.size(), 1u);

  c.loss.kind = LossKind::kSoftmaxCrossEntropy;
  c.loss.one_hot = true;
  EXPECT_THAT(c.loss.Validate().message(),
              ::testing::HasSubstr("applies to LOSS_MSE only"));
}

TEST(LayeredTest, Float32IsRefusedWhereItDoesNotApply) {
  TrainConfig c = AdamConfig(LstmKind{{{4}, 0, false}}, 1, 1);
  c.model.precision = Precision::kFloat32;
  EXPECT_THAT(c.Validate().message(),
              ::testing::HasSubstr("applies to mlp and cnn models"));
  c = AdamConfig(MlpKind{}, 1, 1);
  c.model.hidden = {4};
  c.model.precision = Precision::kFloat32;
  EXPECT_TRUE(c.Validate().ok()) << c.Validate();
  c.optimizer = NailmOptions();
  EXPECT_THAT(c.Validate().message(),
              ::testing::HasSubstr("needs optimizer sgd, adam, lbfgs or rls"));
}

TEST(LayeredTest, OnlyFirstOrderMethodsTrainLayeredModels) {
  TrainConfig c = AdamConfig(SmallCnn(), 1, 1);
  c.optimizer = NailmOptions();
  const absl::Status s = c.Validate();
  EXPECT_FALSE(s.ok());
}

}  // namespace
}  // namespace sparrow::core
