#include "core/train/objectives.h"

#include "gtest/gtest.h"
#include "tests/testing/finite_difference.h"

namespace sparrow::core {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using testing::NumericGradient;
using testing::RelativeError;

constexpr double kTolerance = 1e-6;

TEST(TableObjectiveTest, FullAndMinibatchGradientsMatchFiniteDifferences) {
  for (LossKind kind : {LossKind::kMse, LossKind::kBinaryCrossEntropy,
                        LossKind::kSoftmaxCrossEntropy}) {
    const int outputs = kind == LossKind::kSoftmaxCrossEntropy ? 3 : 1;
    Mlp mlp(MlpSpec{4,
                    {5},
                    outputs,
                    Activation::kTanh,
                    kind == LossKind::kBinaryCrossEntropy
                        ? Activation::kSigmoid
                        : Activation::kLinear});
    const MatrixXd x = testing::RandomMatrix(4, 30, 1);
    MatrixXd y = MatrixXd::Zero(outputs, 30);
    for (int j = 0; j < 30; ++j)
      y(j % outputs, j) = outputs == 1 ? (j % 3 == 0) : 1.0;
    if (kind == LossKind::kMse) y = testing::RandomMatrix(1, 30, 2);
    Loss loss{kind, kind == LossKind::kBinaryCrossEntropy ? 1e-4 : 0.0};
    TableObjective objective(&mlp, &x, &y, loss, 0.3, 8, true);
    Rng rng(1);
    VectorXd w(mlp.num_params());
    mlp.Initialize(1.0, &rng, w.data());
    VectorXd grad;
    objective.Evaluate(w, &grad);
    EXPECT_LT(RelativeError(grad, NumericGradient(
                                      [&](const VectorXd& v) {
                                        return objective.Evaluate(v, nullptr);
                                      },
                                      w)),
              kTolerance)
        << LossName(kind);
    objective.StartEpoch(w, &rng);
    ASSERT_EQ(objective.num_batches(), 4);
    for (int b = 0; b < 4; ++b) {
      objective.EvaluateBatch(w, b, &grad);
      VectorXd scratch;
      EXPECT_LT(RelativeError(grad, NumericGradient(
                                        [&](const VectorXd& v) {
                                          return objective.EvaluateBatch(
                                              v, b, &scratch);
                                        },
                                        w)),
                kTolerance)
          << LossName(kind) << " batch " << b;
    }
  }
}

TEST(TableObjectiveTest, MinibatchesAverageToTheFullObjective) {
  Mlp mlp(MlpSpec{2, {3}, 1, Activation::kTanh, Activation::kLinear});
  const MatrixXd x = testing::RandomMatrix(2, 40, 3);
  const MatrixXd y = testing::RandomMatrix(1, 40, 4);
  TableObjective objective(&mlp, &x, &y, Loss{}, 0.1, 10, true);
  Rng rng(2);
  VectorXd w(mlp.num_params());
  mlp.Initialize(1.0, &rng, w.data());
  objective.StartEpoch(w, &rng);
  VectorXd g, sum = VectorXd::Zero(w.size());
  double mean = 0.0;
  for (int b = 0; b < 4; ++b) {
    mean += objective.EvaluateBatch(w, b, &g) / 4;
    sum += g / 4;
  }
  VectorXd full;
  EXPECT_NEAR(mean, objective.Evaluate(w, &full), 1e-12);
  EXPECT_LT(RelativeError(sum, full), 1e-12);
}

class SequenceObjectiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StateSpaceRnnSpec spec;
    spec.nx = 3;
    spec.nu = 1;
    spec.ny = 1;
    spec.fx_hidden = {4};
    spec.fy_hidden = {4};
    spec.num_traces = 2;
    rnn_ = StateSpaceRnn(spec);
    for (int t = 0; t < 2; ++t) {
      traces_.push_back({testing::RandomMatrix(1, 25 + 7 * t, 5 + t),
                         testing::RandomMatrix(1, 25 + 7 * t, 7 + t)});
    }
    Rng rng(4);
    w_.resize(rnn_.num_params());
    rnn_.Initialize(1.0, &rng, w_.data());
    w_.head(6).setConstant(0.2);
  }
  StateSpaceRnn rnn_;
  std::vector<data::Trace> traces_;
  VectorXd w_;
};

TEST_F(SequenceObjectiveTest, FullBpttGradientMatchesFiniteDifferences) {
  SequenceObjective objective(&rnn_, &traces_, Loss{}, 1.0, 0.1, 0, false);
  VectorXd grad;
  objective.Evaluate(w_, &grad);
  const VectorXd fd = NumericGradient(
      [&](const VectorXd& v) { return objective.Evaluate(v, nullptr); }, w_);
  EXPECT_LT(RelativeError(grad, fd), kTolerance);
  EXPECT_EQ(objective.num_samples(), 25 + 32);
  // Full BPTT over several traces is one batch: an epoch is one update.
  EXPECT_EQ(objective.num_batches(), 1);
}

TEST_F(SequenceObjectiveTest,
       TruncatedBpttWindowGradientsMatchFiniteDifferences) {
  SequenceObjective objective(&rnn_, &traces_, Loss{}, 1.0, 0.1, 10, true);
  EXPECT_EQ(objective.num_batches(), 3 + 4);
  Rng rng(8);
  objective.StartEpoch(w_, &rng);
  for (int b = 0; b < objective.num_batches(); ++b) {
    VectorXd grad, scratch;
    objective.EvaluateBatch(w_, b, &grad);
    const VectorXd fd = NumericGradient(
        [&](const VectorXd& v) {
          return objective.EvaluateBatch(v, b, &scratch);
        },
        w_);
    EXPECT_LT(RelativeError(grad, fd), kTolerance) << "window " << b;
  }
}

TEST_F(SequenceObjectiveTest, DivergentParametersGiveInfinityNotNan) {
  SequenceObjective objective(&rnn_, &traces_, Loss{}, 1.0, 0.1, 0, false);
  VectorXd w = w_;
  w(rnn_.fx_offset()) = std::numeric_limits<double>::quiet_NaN();
  VectorXd grad;
  EXPECT_EQ(objective.Evaluate(w, &grad),
            std::numeric_limits<double>::infinity());
}

}  // namespace
}  // namespace sparrow::core
