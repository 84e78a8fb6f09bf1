// The RLS optimizer on layered networks through the threaded
// NetworkObjective: textbook RLS on one linear layer, bit-identical resume,
// the factorized G P against the gradient's,
// the hybrid mode, the memory and eta checks, and that it trains.
#include "core/optim/rls/rls.h"

#include <memory>
#include <vector>

#include "Eigen/Dense"
#include "core/models/layers/conv2d.h"
#include "core/models/layers/dense.h"
#include "core/models/layers/lstm.h"
#include "core/optim/rls/state.h"
#include "core/train/network_objective.h"
#include "gtest/gtest.h"
#include "tests/testing/finite_difference.h"

namespace sparrow::core {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using testing::RandomMatrix;

// Keeps every record's iterate and optimizer state.
class Recorder : public IterationCallback {
 public:
  CallbackResult OnIteration(IterationRecord* r) override {
    params.push_back(*r->params);
    states.push_back(*r->optimizer_state);
    extras.push_back(r->extras);
    return CallbackResult::kContinue;
  }
  std::vector<VectorXd> params, states;
  std::vector<std::vector<std::pair<std::string, double>>> extras;
};

// One linear layer, MSE, batch size 1, no shuffle, lambda = 1: an epoch is N
// steps of textbook RLS with each sample weighted by k, P_s^-1 = P_{s-1}^-1 +
// k x x^T, so B = (B_0 + k sum y x^T) (I + k sum x x^T)^-1 with x = [input;
// 1]. The paper's step, (eta / h) P_{s-1} G with h = 1 + k x^T P_{s-1} x, is
// that with eta = k (textbook's gain k P_s x = k P_{s-1} x / h): at k = 1
// the two coincide, and the paper's eta = 1 takes 1 / k times textbook's
// step. (The trainer's 1/2 turns Sparrow's MSE into the paper's
// 1/2 ||.||^2.)
TEST(RlsTest, OneLinearLayerWithGainKIsTextbookWeightedRls) {
  const int in = 3, out = 2, n = 30;
  const Network net(
      {std::make_shared<DenseLayer>(in, out, Activation::kLinear, true)});
  const MatrixXd x = RandomMatrix(in, n, 4);
  const MatrixXd y = RandomMatrix(out, n, 5);
  for (double k : {1.0, 0.1, 0.3, 2.5}) {
    SCOPED_TRACE(k);
    NetworkObjective f(&net, &x, &y, Loss{LossKind::kMse}, 0.0, 1, false, 2);
    RlsOptions o;
    o.ratio = k;
    o.eta = {k};
    o.gradient_scale = 0.5;
    o.stop.max_iterations = 1;
    VectorXd w = RandomMatrix(net.num_params(), 1, 6);
    const MatrixXd b0 = Eigen::Map<const MatrixXd>(w.data(), out, in + 1);
    MinimizeRls(o, f, &w, nullptr);
    MatrixXd a = MatrixXd::Identity(in + 1, in + 1), rhs = b0;
    for (int s = 0; s < n; ++s) {
      VectorXd xs(in + 1);
      xs << x.col(s), 1.0;
      a += k * xs * xs.transpose();
      rhs += k * y.col(s) * xs.transpose();
    }
    const MatrixXd expected = rhs * a.inverse();
    EXPECT_LT(testing::RelativeError(
                  Eigen::Map<const MatrixXd>(w.data(), out, in + 1), expected),
              1e-10);
  }
}

// The guard's reset of P is in the run's summary, not only in the extras.
TEST(RlsTest, AResetOfPIsInTheSummary) {
  const int in = 3, out = 2, n = 30;
  const Network net(
      {std::make_shared<DenseLayer>(in, out, Activation::kLinear, true)});
  const MatrixXd x = RandomMatrix(in, n, 7);
  const MatrixXd y = RandomMatrix(out, n, 8);
  NetworkObjective f(&net, &x, &y, Loss{LossKind::kMse}, 0.0, 1, false, 2);
  RlsOptions o;
  o.gradient_scale = 0.5;
  o.stop.max_iterations = 1;
  VectorXd w = RandomMatrix(net.num_params(), 1, 9);
  Recorder recorder;
  const Summary clean = MinimizeRls(o, f, &w, &recorder);
  EXPECT_EQ(clean.message.find("P was reset"), std::string::npos);
  // [t; P's lower triangle by columns (4 x 4: 10); momentum (2 x 4); resets]:
  // P = -I.
  VectorXd state = recorder.states.back();
  ASSERT_EQ(state.size(), 1 + 10 + 8 + 1);
  state.segment(1, 10).setZero();
  for (int i : {0, 4, 7, 9}) state(1 + i) = -1.0;
  o.initial_state = state;
  const Summary reset = MinimizeRls(o, f, &w, nullptr);
  EXPECT_NE(reset.message.find("P was reset to the identity 1 time(s)"),
            std::string::npos)
      << reset.message;
}

// A small classification problem: a tanh hidden layer of 5 and 3 classes,
// its objective (CE, minibatches of 16, shuffled) and its initial weights.
struct Problem {
  explicit Problem(int threads = 2) {
    auto d1 = std::make_shared<DenseLayer>(6, 5, Activation::kTanh, true);
    auto d2 = std::make_shared<DenseLayer>(5, 3, Activation::kLinear, true);
    net = Network({d1, d2});
    x = RandomMatrix(6, 90, 4);
    y = MatrixXd::Zero(3, 90);
    for (int j = 0; j < 90; ++j) {  // the class of the largest of 3 features
      int c = 0;
      x.col(j).head(3).maxCoeff(&c);
      y(c, j) = 1.0;
    }
    objective = std::make_unique<NetworkObjective>(
        &net, &x, &y, Loss{LossKind::kSoftmaxCrossEntropy}, 0.0, 16, true,
        threads);
    w0.resize(net.num_params());
    Rng rng(5);
    net.Initialize(1.0, &rng, w0.data());
  }
  Network net;
  MatrixXd x, y;
  std::unique_ptr<NetworkObjective> objective;
  VectorXd w0;
};

RlsOptions Variant() {
  RlsOptions o;
  o.momentum = 0.5;
  o.l1 = 1e-4;
  o.clip_norm = 5.0;
  o.adam_output_layer = true;
  o.seed = 11;
  return o;
}

// A run resumed from the state reported after epoch 2 ends where the
// uninterrupted run does, to the last bit (P, momentum, Adam's moments and
// the minibatch order all continue).
TEST(RlsTest, ResumedRunIsBitIdentical) {
  Problem p, q;
  RlsOptions o = Variant();
  o.stop.max_iterations = 4;
  VectorXd w = p.w0;
  Recorder full;
  MinimizeRls(o, *p.objective, &w, &full);

  RlsOptions resumed = o;
  resumed.stop.max_iterations = 2;
  resumed.initial_state = full.states[1];
  VectorXd v = full.params[1];
  MinimizeRls(resumed, *q.objective, &v, nullptr);
  EXPECT_EQ(v, w);
  EXPECT_NE(w, p.w0);
}

// Forwards to a NetworkObjective with RLS's BlockProducts, or without them
// (RLS then forms every G P from the gradient), counting the products the
// objective formed.
class Forwarding : public BlockObjective {
 public:
  Forwarding(NetworkObjective* f, bool products) : f_(f), products_(products) {}
  int num_params() const override { return f_->num_params(); }
  int num_batches() const override { return f_->num_batches(); }
  double Evaluate(const VectorXd& w, VectorXd* grad) override {
    return f_->Evaluate(w, grad);
  }
  void StartEpoch(const VectorXd& w, Rng* rng) override {
    f_->StartEpoch(w, rng);
  }
  double EvaluateBatch(const VectorXd& w, int b, VectorXd* grad) override {
    return f_->EvaluateBatch(w, b, grad);
  }
  const std::vector<NetworkMatrixBlock>& matrix_blocks() const override {
    return f_->matrix_blocks();
  }
  double EvaluateBatchWithMeans(const VectorXd& w, int b, VectorXd* grad,
                                std::vector<VectorXd>* means,
                                BlockProducts* products) override {
    if (!products_)
      return f_->EvaluateBatchWithMeans(w, b, grad, means, nullptr);
    const double v = f_->EvaluateBatchWithMeans(w, b, grad, means, products);
    for (size_t i = 0; i < products->formed.size(); ++i) {
      formed.resize(products->formed.size());
      formed[i] += products->formed[i];
    }
    return v;
  }
  std::vector<int> formed;

 private:
  NetworkObjective* f_;
  bool products_;
};

// The hidden layer's G P formed from the samples' factors (delta (P [X; 1])^T:
// 8 samples x 21 x (21 + 40) multiply-adds against 40 x 21^2) steps as the
// product of the gradient with P does, to rounding, with momentum, l1 and
// clipping. The output layer (40 + 1 inputs, 3 outputs) is cheaper as G P:
// not formed.
TEST(RlsTest, FactorizedProductsStepAsTheGradientTimesP) {
  const Network net(
      {std::make_shared<DenseLayer>(20, 40, Activation::kTanh, true),
       std::make_shared<DenseLayer>(40, 3, Activation::kLinear, true)});
  const MatrixXd x = RandomMatrix(20, 64, 4);
  MatrixXd y = MatrixXd::Zero(3, 64);
  for (int j = 0; j < 64; ++j) y(j % 3, j) = 1.0;
  const Loss ce{LossKind::kSoftmaxCrossEntropy};
  NetworkObjective f(&net, &x, &y, ce, 0.0, 8, true, 2);
  NetworkObjective g(&net, &x, &y, ce, 0.0, 8, true, 2);
  RlsOptions o = Variant();
  o.adam_output_layer = false;
  o.clip_norm = 1.0;
  o.stop.max_iterations = 3;
  Forwarding with(&f, true), without(&g, false);
  VectorXd w0(net.num_params());
  Rng rng(5);
  net.Initialize(1.0, &rng, w0.data());
  VectorXd w = w0, v = w0;
  MinimizeRls(o, with, &w, nullptr);
  MinimizeRls(o, without, &v, nullptr);
  ASSERT_EQ(with.formed.size(), 2u);
  EXPECT_EQ(with.formed[0], 3 * f.num_batches());
  EXPECT_EQ(with.formed[1], 0);
  EXPECT_LT(testing::RelativeError(w, v), 1e-11);
  EXPECT_GT(testing::RelativeError(w, w0), 1e-2);
}

// The hybrid mode preconditions the hidden layer only; the output layer is
// Adam's. Extras report each preconditioned block's h and trace(P).
TEST(RlsTest, HybridModeLeavesTheOutputLayerToAdam) {
  Problem p(1);
  RlsOptions o = Variant();
  o.stop.max_iterations = 1;
  VectorXd w = p.w0;
  Recorder r;
  MinimizeRls(o, *p.objective, &w, &r);
  std::vector<std::string> keys;
  for (const auto& [key, value] : r.extras[0]) {
    keys.push_back(key);
    EXPECT_TRUE(std::isfinite(value)) << key;
  }
  EXPECT_EQ(keys, (std::vector<std::string>{
                      "rls.layer0.h", "rls.layer0.trace_p", "rls.p_resets"}));
  // P shrinks from I along the batch means: its trace drops below 7.
  EXPECT_LT(r.extras[0][1].second, 7.0);
  // (6 + 1)^2 doubles for layer 0; Adam's two moments for layer 1's 18.
  EXPECT_EQ(r.states[0].size(), 1 + 2 * 18 + (7 * 8 / 2 + 5 * 7 + 1));
}

TEST(RlsTest, TrainsASmallClassifier) {
  Problem p;
  for (bool hybrid : {true, false}) {
    RlsOptions o = Variant();
    o.adam_output_layer = hybrid;
    o.learning_rate = 0.01;
    o.stop.max_iterations = 40;
    VectorXd w = p.w0;
    const double before = p.objective->Evaluate(w, nullptr);
    const Summary s = MinimizeRls(o, *p.objective, &w, nullptr);
    EXPECT_EQ(s.termination, Termination::kMaxIterations);
    EXPECT_LT(s.final_loss, 0.5 * before) << hybrid;
  }
}

TEST(RlsTest, BlocksOverTheMemoryLimitOrAMiscountedEtaAreRefused) {
  const Network net(
      {std::make_shared<DenseLayer>(784, 16, Activation::kRelu, true),
       std::make_shared<DenseLayer>(16, 10, Activation::kLinear, true)});
  RlsOptions o;
  o.max_p_bytes = 1 << 20;
  absl::Status s = CheckRlsBlocks(net.matrix_blocks(), o);
  EXPECT_NE(s.message().find("layer 0"), std::string::npos) << s;
  EXPECT_NE(s.message().find("785^2 = 616225"), std::string::npos) << s;
  EXPECT_NE(s.message().find("(4.7 MiB), over the limit of 1.0 MiB"),
            std::string::npos)
      << s;
  o.max_p_bytes = int64_t{1} << 30;
  EXPECT_TRUE(CheckRlsBlocks(net.matrix_blocks(), o).ok());
  o.eta = {1.0, 1.0, 1.0};
  EXPECT_FALSE(CheckRlsBlocks(net.matrix_blocks(), o).ok());
  o.adam_output_layer = true;
  o.eta = {1.0};
  EXPECT_TRUE(CheckRlsBlocks(net.matrix_blocks(), o).ok());
}

// A k so large that k T overflows (or only shortens every step to nothing)
// is refused with the range; a network whose only layer Adam trains says
// which field to change.
TEST(RlsTest, RatioFactorHasAnUpperBoundAndAnAdamOnlyNetworkIsRefused) {
  RlsOptions o;
  EXPECT_TRUE(o.Validate().ok());
  o.ratio = 1e308;
  EXPECT_NE(o.Validate().message().find("ratio_factor is 1e+308; it must be "
                                        "in (0, 10000]"),
            std::string::npos)
      << o.Validate();
  o.ratio = RlsOptions::kMaxRatioFactor;
  EXPECT_TRUE(o.Validate().ok());
  const Network output_only(
      {std::make_shared<DenseLayer>(4, 3, Activation::kLinear, true)});
  o.adam_output_layer = true;
  const absl::Status s = CheckRlsBlocks(output_only.matrix_blocks(), o);
  EXPECT_EQ(s.message().rfind("output_layer: the model has no layer", 0), 0u)
      << s;
}

// RlsStateFits (which builds no P) accepts exactly the states an optimizer
// of the same network packs, for dense, convolutional and LSTM layers (two
// blocks each), all-RLS and hybrid; one value more or less, a non-finite one
// or a negative update count is refused, as UnpackState refuses them.
TEST(RlsTest, StateFitsAcceptsWhatTheOptimizerPacks) {
  ConvGeometry g;
  g.in = Shape{1, 6, 6};
  g.filters = 2;
  const Network conv(
      {std::make_shared<Conv2dLayer>(g, Activation::kRelu, InitLaw::kHe),
       std::make_shared<DenseLayer>(g.out().size(), 3, Activation::kLinear,
                                    true)});
  const Network lstm(
      {std::make_shared<LstmLayer>(4, 3, 5, false, InitLaw::kGlorot),
       std::make_shared<DenseLayer>(5, 2, Activation::kLinear, true)});
  const Network dense(
      {std::make_shared<DenseLayer>(7, 4, Activation::kTanh, true),
       std::make_shared<DenseLayer>(4, 2, Activation::kLinear, false)});
  for (const Network* net : {&conv, &lstm, &dense}) {
    for (bool hybrid : {false, true}) {
      SCOPED_TRACE(::testing::Message() << net->num_params() << " params, "
                                        << (hybrid ? "hybrid" : "all-RLS"));
      RlsOptions o;
      o.adam_output_layer = hybrid;
      o.momentum = 0.5;
      ASSERT_TRUE(CheckRlsBlocks(net->matrix_blocks(), o).ok());
      RlsOptimizer optimizer(o, net->matrix_blocks(), net->num_params());
      optimizer.PackState(&o.initial_state);
      EXPECT_TRUE(RlsStateFits(o, net->matrix_blocks(), net->num_params()));
      const VectorXd packed = o.initial_state;
      for (Eigen::Index size : {packed.size() - 1, packed.size() + 1}) {
        o.initial_state = VectorXd::Zero(size);
        EXPECT_FALSE(RlsStateFits(o, net->matrix_blocks(), net->num_params()));
        EXPECT_FALSE(optimizer.UnpackState(o.initial_state));
      }
      o.initial_state = packed;
      o.initial_state(0) = -1.0;
      EXPECT_FALSE(RlsStateFits(o, net->matrix_blocks(), net->num_params()));
      o.initial_state(0) = 0.0;
      o.initial_state(packed.size() - 1) = std::nan("");
      EXPECT_FALSE(RlsStateFits(o, net->matrix_blocks(), net->num_params()));
      o.initial_state.resize(0);
      EXPECT_TRUE(RlsStateFits(o, net->matrix_blocks(), net->num_params()));
    }
  }
}

}  // namespace
}  // namespace sparrow::core
