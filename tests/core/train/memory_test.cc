#include "core/train/memory.h"

#include "gtest/gtest.h"

namespace sparrow::core {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

TrainConfig Rnn(int nx, std::vector<int> fx, std::vector<int> fy,
                OptimizerOptions optimizer) {
  TrainConfig c;
  StateSpaceRnnSpec& rnn = c.model.kind.emplace<StateSpaceRnnKind>().rnn;
  rnn.nx = nx;
  rnn.fx_hidden = std::move(fx);
  rnn.fy_hidden = std::move(fy);
  c.optimizer = optimizer;
  return c;
}

// The model of the report that crashed sparrowd: ~160k parameters, whose
// Gauss-Newton matrix alone is 200 GB.
TEST(MemoryTest, GaussNewtonOnALargeRnnNeedsHundredsOfGigabytes) {
  const TrainConfig c = Rnn(200, {300}, {200}, NailmOptions());
  auto n = CountParameters(c.model, 1, 1);
  ASSERT_TRUE(n.ok());
  EXPECT_GT(*n, 150000);
  auto e = EstimateMemory(c, 1, 1, 2000, 50000);
  ASSERT_TRUE(e.ok()) << e.status();
  const double h = 8.0 * static_cast<double>(*n) * static_cast<double>(*n);
  EXPECT_GE(static_cast<double>(e->curvature), 6 * h);
  EXPECT_EQ(e->total, e->process + e->data + e->parameters + e->activations +
                          e->curvature);
  EXPECT_NE(e->dominant.find("Gauss-Newton"), std::string::npos) << e->dominant;
}

// ~12.5k parameters reached 5 GB of RSS under NAILM: the estimate must not be
// below what was measured.
TEST(MemoryTest, GaussNewtonEstimateCoversTheMeasuredPeak) {
  const TrainConfig c = Rnn(50, {100}, {40}, NailmOptions());
  auto n = CountParameters(c.model, 1, 1);
  ASSERT_TRUE(n.ok());
  ASSERT_GT(*n, 12000);
  ASSERT_LT(*n, 13500);
  auto e = EstimateMemory(c, 1, 1, 2000, 50000);
  ASSERT_TRUE(e.ok());
  EXPECT_GT(e->total, 5 * kGiB);
}

// The same model trained by a first-order method needs no n x n matrix.
TEST(MemoryTest, FirstOrderNeedsLittle) {
  const TrainConfig c = Rnn(50, {100}, {40}, AdamOptions());
  auto e = EstimateMemory(c, 1, 1, 2000, 50000);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->curvature, 0);
  EXPECT_LT(e->total, 128 << 20);
}

// RLS keeps (n_in + 1)^2 doubles per preconditioned layer and copies its
// lower triangle into every checkpoint: an MLP on 20000 inputs (P of the
// first layer: 3.2 GB) needs far more than its parameters, and the estimate
// says why. The hybrid mode's output layer (Adam) keeps no P.
TEST(MemoryTest, RlsCountsItsMatricesP) {
  TrainConfig c;
  c.model.kind.emplace<MlpKind>();
  c.model.hidden = {32};
  RlsOptions rls;
  rls.max_p_bytes = int64_t{4} << 30;  // the first layer's P is 3.2 GB
  c.optimizer = rls;
  c.loss.kind = LossKind::kMse;  // every layer RLS
  c.batch_size = 128;
  auto e = EstimateMemory(c, 20000, 10, 1000, 1 << 20);
  ASSERT_TRUE(e.ok()) << e.status();
  const double p = 8.0 * 20001.0 * 20001.0;
  EXPECT_GE(static_cast<double>(e->curvature), 3 * p);
  EXPECT_LT(static_cast<double>(e->curvature), 4 * p);
  EXPECT_NE(e->dominant.find("RLS matrices P"), std::string::npos)
      << e->dominant;
  EXPECT_NE(e->dominant.find("20001^2"), std::string::npos) << e->dominant;
  // Adam on the same network keeps no P.
  c.optimizer = AdamOptions();
  auto adam = EstimateMemory(c, 20000, 10, 1000, 1 << 20);
  ASSERT_TRUE(adam.ok());
  EXPECT_LT(adam->total, e->total / 10);
  // Hybrid: the output layer's P (33^2) is left out, the first layer's kept.
  c.optimizer = rls;
  c.loss.kind = LossKind::kSoftmaxCrossEntropy;
  auto hybrid = EstimateMemory(c, 20000, 10, 1000, 1 << 20);
  ASSERT_TRUE(hybrid.ok());
  EXPECT_LT(hybrid->curvature, e->curvature);
  EXPECT_GE(static_cast<double>(hybrid->curvature), 3 * p);
}

// Windows with a free x0 each add nx parameters per window, which NAILM's
// n x n matrices square: 10^6 samples in windows of 1000 are 1001 windows,
// 4004 more parameters for nx 4.
TEST(MemoryTest, FreeInitialStatesOfWindowsCountAsParameters) {
  TrainConfig c = Rnn(4, {8}, {8}, NailmOptions());
  auto whole = EstimateMemory(c, 1, 1, 1'000'000, 0);
  ASSERT_TRUE(whole.ok());
  c.model.as<StateSpaceRnnKind>().subsequence_length = 1000;
  auto windows = EstimateMemory(c, 1, 1, 1'000'000, 0);
  ASSERT_TRUE(windows.ok());
  auto n = CountParameters(c.model, 1, 1);
  ASSERT_TRUE(n.ok());
  const double with_states = static_cast<double>(*n + 4 * 1001);
  EXPECT_GE(static_cast<double>(windows->curvature),
            6 * 8.0 * with_states * with_states);
  EXPECT_GT(windows->curvature, 100 * whole->curvature);
  EXPECT_NE(windows->dominant.find("Gauss-Newton"), std::string::npos);
}

// A linear part's subspace fit holds a Hankel chunk of 2048 + rows by rows
// doubles (rows = 2 x block rows x (inputs + outputs)) and its QR.
TEST(MemoryTest, LinearPartCountsItsSubspaceFit) {
  TrainConfig c = Rnn(4, {8}, {8}, AdamOptions());
  auto without = EstimateMemory(c, 3, 3, 2000, 50000);
  c.model.as<StateSpaceRnnKind>().rnn.linear = true;
  c.model.as<StateSpaceRnnKind>().linear_block_rows = 100;
  auto with = EstimateMemory(c, 3, 3, 2000, 50000);
  ASSERT_TRUE(without.ok() && with.ok());
  const double rows = 2.0 * 100 * (3 + 3);
  EXPECT_GE(static_cast<double>(with->data - without->data),
            2 * 8.0 * (2048 + rows) * rows);
}

TEST(MemoryTest, MoreThreadsMoreGaussNewtonMatrices) {
  TrainConfig c = Rnn(20, {30}, {10}, NailsOptions());
  auto one = EstimateMemory(c, 1, 1, 1000, 0);
  std::get<NailsOptions>(c.optimizer).threads = 4;
  auto four = EstimateMemory(c, 1, 1, 1000, 0);
  ASSERT_TRUE(one.ok() && four.ok());
  EXPECT_GT(four->curvature, one->curvature);
  // Trials two at a time keep a second set of tapes.
  EXPECT_NEAR(static_cast<double>(four->activations),
              2.0 * static_cast<double>(one->activations), 2.0);
}

TEST(MemoryTest, DataGrowsWithRowsAndNarxLags) {
  TrainConfig c;
  data::NarxLags& lags = c.model.kind.emplace<NarxMlpKind>().lags;
  c.model.hidden = {16};
  lags.input_lags = 2;
  lags.output_lags = 2;
  auto small = EstimateMemory(c, 1, 1, 1000, 30000);
  auto large = EstimateMemory(c, 1, 1, 1000000, 30000000);
  ASSERT_TRUE(small.ok() && large.ok());
  EXPECT_GT(large->data, 100 * small->data / 2);
  lags.input_lags = 50;
  auto more_lags = EstimateMemory(c, 1, 1, 1000000, 30000000);
  ASSERT_TRUE(more_lags.ok());
  EXPECT_GT(more_lags->data, large->data);
}

// What training would refuse on the built network is refused by the
// estimate already (before a sweep's earlier trials or a job's earlier stages
// run): a P over max_p_megabytes, a count of eta values, each stage's own.
TEST(MemoryTest, RlsOptionsTheNetworkRefusesAreAnError) {
  TrainConfig c;
  c.model.kind.emplace<MlpKind>();
  c.model.hidden = {32};
  c.loss.kind = LossKind::kMse;
  c.batch_size = 128;
  RlsOptions rls;
  c.optimizer = rls;
  auto fits = EstimateMemory(c, 20000, 10, 1000, 0);
  ASSERT_FALSE(fits.ok());
  EXPECT_NE(fits.status().message().find(
                "optimizer.rls.max_p_megabytes: the RLS matrix P of layer"),
            std::string::npos)
      << fits.status();
  rls.eta = {1, 1, 1};  // two blocks
  c.optimizer = rls;
  auto eta = EstimateMemory(c, 100, 10, 1000, 0);
  ASSERT_FALSE(eta.ok());
  EXPECT_NE(eta.status().message().find("optimizer.rls.eta has 3 values"),
            std::string::npos)
      << eta.status();
  // Adam first, then the RLS stage: named by its index.
  TrainConfig staged = c;
  staged.optimizer = AdamOptions();  // stage 0's fields are the config's
  staged.stages.resize(2);
  staged.stages[1].optimizer = rls;
  staged.stages[1].batch_size = 128;
  auto stage = EstimateMemory(staged, 100, 10, 1000, 0);
  ASSERT_FALSE(stage.ok());
  EXPECT_EQ(stage.status().message().rfind("stages[1]: optimizer.rls.eta", 0),
            0u)
      << stage.status();
  rls.eta = {1, 1};
  c.optimizer = rls;
  EXPECT_TRUE(EstimateMemory(c, 100, 10, 1000, 0).ok());
}

TEST(MemoryTest, ImpossibleModelIsAnError) {
  TrainConfig c = Rnn(0, {4}, {4}, NailsOptions());
  EXPECT_FALSE(EstimateMemory(c, 1, 1, 100, 0).ok());
}

TEST(MemoryTest, FormatBytes) {
  EXPECT_EQ(FormatBytes(12), "12 bytes");
  EXPECT_EQ(FormatBytes(900 << 10), "900 KiB");
  EXPECT_EQ(FormatBytes(512 << 20), "512 MiB");
  EXPECT_EQ(FormatBytes(4 * kGiB), "4 GiB");
  EXPECT_EQ(FormatBytes(3 * kGiB / 2), "1.5 GiB");
  EXPECT_EQ(FormatBytes(int64_t{200} << 40), "200 TiB");
}

}  // namespace
}  // namespace sparrow::core
