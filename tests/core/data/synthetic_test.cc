#include "core/data/synthetic.h"

#include <cmath>
#include <complex>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "Eigen/Core"
#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sparrow::core::data {
namespace {

using ::testing::HasSubstr;

bool BitIdentical(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() &&
         (a.array() == b.array()).all();
}

double StdDev(const Eigen::MatrixXd& m) {
  return std::sqrt((m.array() - m.mean()).square().mean());
}

// --- Cascaded tanks ----------------------------------------------------------

TEST(CascadedTanksOptionsTest, DefaultsValidate) {
  EXPECT_TRUE(CascadedTanksOptions().Validate().ok());
}

TEST(CascadedTanksTest, ShapesAndNames) {
  const auto seq = GenerateCascadedTanks(CascadedTanksOptions());
  ASSERT_TRUE(seq.ok()) << seq.status();
  EXPECT_EQ(seq->u.rows(), 1);
  EXPECT_EQ(seq->u.cols(), 1024);
  EXPECT_EQ(seq->y.rows(), 1);
  EXPECT_EQ(seq->y.cols(), 1024);
  EXPECT_EQ(seq->states.rows(), 2);
  EXPECT_EQ(seq->states.cols(), 1024);
  EXPECT_EQ(seq->input_names, std::vector<std::string>{"u"});
  EXPECT_EQ(seq->output_names, std::vector<std::string>{"y"});
  EXPECT_EQ(seq->state_names, (std::vector<std::string>{"x1", "x2"}));
}

TEST(CascadedTanksTest, SameSeedIsBitIdenticalOtherSeedDiffers) {
  CascadedTanksOptions options;
  options.noise_std = 0.05;
  options.process_noise_std = 0.01;
  options.seed = 7;
  const auto a = GenerateCascadedTanks(options);
  const auto b = GenerateCascadedTanks(options);
  options.seed = 8;
  const auto c = GenerateCascadedTanks(options);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_TRUE(BitIdentical(a->u, b->u));
  EXPECT_TRUE(BitIdentical(a->y, b->y));
  EXPECT_TRUE(BitIdentical(a->states, b->states));
  EXPECT_FALSE(BitIdentical(a->u, c->u));
  EXPECT_FALSE(BitIdentical(a->y, c->y));
}

TEST(CascadedTanksTest, NoiseLevelDoesNotChangeInputOrStates) {
  CascadedTanksOptions options;
  const auto clean = GenerateCascadedTanks(options);
  options.noise_std = 0.1;
  const auto noisy = GenerateCascadedTanks(options);
  ASSERT_TRUE(clean.ok() && noisy.ok());
  EXPECT_TRUE(BitIdentical(clean->u, noisy->u));
  EXPECT_TRUE(BitIdentical(clean->states, noisy->states));
  // Without noise y is the lower level; with it, y - x2 is white noise of
  // the requested size.
  EXPECT_TRUE(BitIdentical(clean->y, clean->states.row(1)));
  const Eigen::MatrixXd e = noisy->y - noisy->states.row(1);
  EXPECT_NEAR(StdDev(e), 0.1, 0.01);
  EXPECT_NEAR(e.mean(), 0.0, 0.01);
}

TEST(CascadedTanksTest, DefaultsResembleTheBenchmark) {
  // Benchmark record: u in 0.4..6.5 V (mean 2.8, std 1.0), y in 2.2..10 V
  // (mean 5.6..5.7), Ts = 4 s.
  for (uint64_t seed : {1, 2, 3, 4, 5}) {
    CascadedTanksOptions options;
    options.seed = seed;
    const auto seq = GenerateCascadedTanks(options);
    ASSERT_TRUE(seq.ok()) << seq.status();
    EXPECT_GE(seq->u.minCoeff(), 0.0) << "seed " << seed;
    EXPECT_LE(seq->u.maxCoeff(), 7.0) << "seed " << seed;
    EXPECT_NEAR(seq->u.mean(), 2.8, 0.05) << "seed " << seed;
    EXPECT_NEAR(StdDev(seq->u), 1.0, 0.05) << "seed " << seed;
    EXPECT_GT(seq->y.mean(), 4.5) << "seed " << seed;
    EXPECT_LT(seq->y.mean(), 7.0) << "seed " << seed;
    EXPECT_GT(seq->y.maxCoeff(), 8.0) << "seed " << seed;
  }
}

TEST(CascadedTanksTest, LevelsStayPhysicalEvenWithProcessNoise) {
  for (double process_noise : {0.0, 0.3}) {
    CascadedTanksOptions options;
    options.samples = 4096;
    options.process_noise_std = process_noise;
    options.input_std = 2.0;  // Drives both tanks empty and full.
    const auto seq = GenerateCascadedTanks(options);
    ASSERT_TRUE(seq.ok()) << seq.status();
    ASSERT_TRUE(seq->states.allFinite());
    ASSERT_TRUE(seq->y.allFinite());
    EXPECT_GE(seq->states.minCoeff(), 0.0);
    EXPECT_LE(seq->states.row(0).maxCoeff(), options.upper_tank_top);
    EXPECT_LE(seq->states.row(1).maxCoeff(), options.lower_tank_top);
    EXPECT_EQ(seq->states.row(0).maxCoeff(), options.upper_tank_top);
    EXPECT_EQ(seq->states.minCoeff(), 0.0);
  }
}

TEST(CascadedTanksTest, UpperTankOverflowsInALongDefaultRun) {
  CascadedTanksOptions options;
  options.samples = 8192;
  const auto seq = GenerateCascadedTanks(options);
  ASSERT_TRUE(seq.ok()) << seq.status();
  const double top = options.upper_tank_top;
  const int at_top = (seq->states.row(0).array() >= top).count();
  // "Now and then": a few percent of the time, not most of it.
  EXPECT_GT(at_top, 0.005 * options.samples);
  EXPECT_LT(at_top, 0.2 * options.samples);
}

TEST(CascadedTanksTest, MultisineHasRequestedMomentsAndBand) {
  CascadedTanksOptions options;
  options.input_mean = 10.0;  // Far from 0 V, so no sample is clipped.
  options.upper_tank_top = 1000.0;
  options.lower_tank_top = 1000.0;
  const auto seq = GenerateCascadedTanks(options);
  ASSERT_TRUE(seq.ok()) << seq.status();
  const int n = options.samples;
  EXPECT_NEAR(seq->u.mean(), 10.0, 1e-9);
  EXPECT_NEAR(StdDev(seq->u), 1.0, 1e-9);
  // Defaults excite DFT bins 1..19 of the record with equal amplitudes
  // A / 2 = sqrt(2 / 19) / 2, and nothing else.
  const double half_amplitude = 0.5 * std::sqrt(2.0 / 19.0);
  for (int bin = 1; bin <= 40; ++bin) {
    std::complex<double> sum = 0.0;
    for (int k = 0; k < n; ++k) {
      sum += seq->u(0, k) *
             std::polar(1.0, -2.0 * M_PI * static_cast<double>(bin) * k / n);
    }
    const double magnitude = std::abs(sum) / n;
    EXPECT_NEAR(magnitude, bin <= 19 ? half_amplitude : 0.0, 1e-9)
        << "bin " << bin;
  }
}

TEST(CascadedTanksTest, ConstantInputReachesAnalyticSteadyState) {
  CascadedTanksOptions options;
  const double u = 3.0;
  const auto seq =
      SimulateCascadedTanks(options, Eigen::MatrixXd::Constant(1, 1000, u));
  ASSERT_TRUE(seq.ok()) << seq.status();
  const double k1 = options.upper_outflow_gain;
  const double k2 = options.lower_inflow_gain;
  const double k3 = options.lower_outflow_gain;
  const double k4 = options.pump_gain;
  const double x1 = std::pow(k4 * u / k1, 2);
  const double x2 = std::pow(k2 / k3, 2) * x1;
  ASSERT_LT(x2, options.lower_tank_top);  // No overflow at this level.
  EXPECT_NEAR(seq->states(0, 999), x1, 1e-6);
  EXPECT_NEAR(seq->states(1, 999), x2, 1e-6);
  EXPECT_NEAR(seq->y(0, 999), x2, 1e-6);
}

TEST(CascadedTanksTest, OverflowSpillsTheRequestedFractionIntoLowerTank) {
  CascadedTanksOptions options;
  options.lower_tank_top = 100.0;  // Only the upper tank overflows.
  const double u = 5.0;            // Above the overflow level of ~3.8 V.
  const double k1 = options.upper_outflow_gain;
  const double k2 = options.lower_inflow_gain;
  const double k3 = options.lower_outflow_gain;
  const double k4 = options.pump_gain;
  const double top = options.upper_tank_top;
  ASSERT_GT(std::pow(k4 * u / k1, 2), top);
  for (double fraction : {0.0, 0.5, 1.0}) {
    options.overflow_fraction = fraction;
    const auto seq =
        SimulateCascadedTanks(options, Eigen::MatrixXd::Constant(1, 1000, u));
    ASSERT_TRUE(seq.ok()) << seq.status();
    const double spill = k4 * u - k1 * std::sqrt(top);
    const double inflow = k2 * std::sqrt(top) + (k2 / k1) * fraction * spill;
    EXPECT_EQ(seq->states(0, 999), top) << "fraction " << fraction;
    EXPECT_NEAR(seq->states(1, 999), std::pow(inflow / k3, 2), 1e-6)
        << "fraction " << fraction;
  }
}

TEST(CascadedTanksTest, BothTanksPinnedAtTheTopForLargeInput) {
  const CascadedTanksOptions options;
  const auto seq =
      SimulateCascadedTanks(options, Eigen::MatrixXd::Constant(1, 300, 6.0));
  ASSERT_TRUE(seq.ok()) << seq.status();
  EXPECT_EQ(seq->states(0, 299), options.upper_tank_top);
  EXPECT_EQ(seq->states(1, 299), options.lower_tank_top);
}

TEST(CascadedTanksTest, ZeroInputDrainsBothTanks) {
  const CascadedTanksOptions options;
  const auto seq =
      SimulateCascadedTanks(options, Eigen::MatrixXd::Zero(1, 1000));
  ASSERT_TRUE(seq.ok()) << seq.status();
  // A sqrt outflow empties a tank in finite time: 2 sqrt(x1(0)) / k1 ~ 77 s
  // for the upper one.
  EXPECT_EQ(seq->states(0, 999), 0.0);
  EXPECT_LT(seq->states(1, 999), 1e-6);
  EXPECT_GE(seq->states.minCoeff(), 0.0);
}

TEST(CascadedTanksTest, Rk4SubstepsConverge) {
  CascadedTanksOptions options;
  const auto coarse = GenerateCascadedTanks(options);
  options.rk4_substeps = 100;
  const auto fine = GenerateCascadedTanks(options);
  ASSERT_TRUE(coarse.ok() && fine.ok());
  EXPECT_LT((coarse->states - fine->states).cwiseAbs().maxCoeff(), 0.02);
}

TEST(SimulateCascadedTanksTest, RejectsBadInput) {
  const CascadedTanksOptions options;
  const auto two_rows = SimulateCascadedTanks(options, Eigen::MatrixXd(2, 5));
  EXPECT_EQ(two_rows.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(two_rows.status().message(), HasSubstr("1 x N"));
  const auto empty = SimulateCascadedTanks(options, Eigen::MatrixXd(1, 0));
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
  Eigen::MatrixXd u = Eigen::MatrixXd::Constant(1, 5, 1.0);
  u(0, 3) = std::numeric_limits<double>::quiet_NaN();
  const auto nan = SimulateCascadedTanks(options, u);
  EXPECT_EQ(nan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(nan.status().message(), HasSubstr("u(0, 3) = nan"));
}

struct TanksValidationCase {
  std::string name;
  std::function<void(CascadedTanksOptions*)> mutate;
  std::string message;
};

class CascadedTanksValidationTest
    : public ::testing::TestWithParam<TanksValidationCase> {};

TEST_P(CascadedTanksValidationTest, NamesFieldValueAndConstraint) {
  CascadedTanksOptions options;
  GetParam().mutate(&options);
  const absl::Status status = options.Validate();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), GetParam().message);
  EXPECT_EQ(GenerateCascadedTanks(options).status(), status);
}

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

INSTANTIATE_TEST_SUITE_P(
    Fields, CascadedTanksValidationTest,
    ::testing::Values(
        TanksValidationCase{"samples",
                            [](CascadedTanksOptions* o) { o->samples = 1; },
                            "CascadedTanksOptions.samples = 1: must be >= 2"},
        TanksValidationCase{
            "noise_std_negative",
            [](CascadedTanksOptions* o) { o->noise_std = -0.1; },
            "CascadedTanksOptions.noise_std = -0.1: must be finite and >= 0"},
        TanksValidationCase{
            "noise_std_nan",
            [](CascadedTanksOptions* o) { o->noise_std = kNaN; },
            "CascadedTanksOptions.noise_std = nan: must be finite and >= 0"},
        TanksValidationCase{
            "process_noise_std",
            [](CascadedTanksOptions* o) { o->process_noise_std = kInf; },
            "CascadedTanksOptions.process_noise_std = inf: "
            "must be finite and >= 0"},
        TanksValidationCase{
            "input_std", [](CascadedTanksOptions* o) { o->input_std = -1; },
            "CascadedTanksOptions.input_std = -1: must be finite and >= 0"},
        TanksValidationCase{
            "sample_time", [](CascadedTanksOptions* o) { o->sample_time = 0; },
            "CascadedTanksOptions.sample_time = 0: must be finite and > 0"},
        TanksValidationCase{
            "upper_outflow_gain",
            [](CascadedTanksOptions* o) { o->upper_outflow_gain = kInf; },
            "CascadedTanksOptions.upper_outflow_gain = inf: "
            "must be finite and > 0"},
        TanksValidationCase{
            "lower_inflow_gain",
            [](CascadedTanksOptions* o) { o->lower_inflow_gain = 0; },
            "CascadedTanksOptions.lower_inflow_gain = 0: must "
            "be finite and > 0"},
        TanksValidationCase{
            "lower_outflow_gain",
            [](CascadedTanksOptions* o) { o->lower_outflow_gain = -0.05; },
            "CascadedTanksOptions.lower_outflow_gain = -0.05: "
            "must be finite and > 0"},
        TanksValidationCase{
            "pump_gain", [](CascadedTanksOptions* o) { o->pump_gain = kNaN; },
            "CascadedTanksOptions.pump_gain = nan: must be finite and > 0"},
        TanksValidationCase{
            "upper_tank_top",
            [](CascadedTanksOptions* o) { o->upper_tank_top = -10; },
            "CascadedTanksOptions.upper_tank_top = -10: must be finite and > "
            "0"},
        TanksValidationCase{
            "lower_tank_top",
            [](CascadedTanksOptions* o) { o->lower_tank_top = 0; },
            "CascadedTanksOptions.lower_tank_top = 0: must be finite and > 0"},
        TanksValidationCase{
            "overflow_fraction",
            [](CascadedTanksOptions* o) { o->overflow_fraction = 1.5; },
            "CascadedTanksOptions.overflow_fraction = 1.5: "
            "must be in [0, 1]"},
        TanksValidationCase{
            "initial_upper_level",
            [](CascadedTanksOptions* o) { o->initial_upper_level = 11; },
            "CascadedTanksOptions.initial_upper_level = 11: "
            "must be in [0, upper_tank_top = 10]"},
        TanksValidationCase{
            "initial_lower_level",
            [](CascadedTanksOptions* o) { o->initial_lower_level = -1; },
            "CascadedTanksOptions.initial_lower_level = -1: "
            "must be in [0, lower_tank_top = 10]"},
        TanksValidationCase{
            "rk4_substeps",
            [](CascadedTanksOptions* o) { o->rk4_substeps = 0; },
            "CascadedTanksOptions.rk4_substeps = 0: must be >= 1"},
        TanksValidationCase{
            "input_mean", [](CascadedTanksOptions* o) { o->input_mean = kInf; },
            "CascadedTanksOptions.input_mean = inf: must be finite"},
        TanksValidationCase{
            "input_bandwidth_hz",
            [](CascadedTanksOptions* o) { o->input_bandwidth_hz = 0.2; },
            "CascadedTanksOptions.input_bandwidth_hz = 0.2: "
            "must be > 0 and < the Nyquist frequency 1/(2 "
            "sample_time) = 0.125"}),
    [](const ::testing::TestParamInfo<TanksValidationCase>& info) {
      return info.param.name;
    });

// --- Binary-output system ----------------------------------------------------

TEST(BinarySystemOptionsTest, DefaultsValidate) {
  EXPECT_TRUE(BinarySystemOptions().Validate().ok());
}

TEST(BinarySystemTest, ShapesNamesAndValueSets) {
  const auto seq = GenerateBinarySystem(BinarySystemOptions());
  ASSERT_TRUE(seq.ok()) << seq.status();
  ASSERT_EQ(seq->u.rows(), 1);
  ASSERT_EQ(seq->u.cols(), 2000);
  ASSERT_EQ(seq->y.rows(), 1);
  ASSERT_EQ(seq->y.cols(), 2000);
  ASSERT_EQ(seq->states.rows(), 3);
  ASSERT_EQ(seq->states.cols(), 2000);
  EXPECT_EQ(seq->input_names, std::vector<std::string>{"u"});
  EXPECT_EQ(seq->output_names, std::vector<std::string>{"y"});
  EXPECT_EQ(seq->state_names, (std::vector<std::string>{"x1", "x2", "x3"}));
  EXPECT_TRUE(((seq->y.array() == 0.0) || (seq->y.array() == 1.0)).all());
  EXPECT_GE(seq->u.minCoeff(), 0.0);
  EXPECT_LT(seq->u.maxCoeff(), 1.0);
  EXPECT_TRUE(seq->states.col(0).isZero(0.0));
  EXPECT_TRUE(seq->states.allFinite());
}

TEST(BinarySystemTest, SameSeedIsBitIdenticalOtherSeedDiffers) {
  BinarySystemOptions options;
  options.noise_std = 0.05;
  const auto a = GenerateBinarySystem(options);
  const auto b = GenerateBinarySystem(options);
  options.seed = 2;
  const auto c = GenerateBinarySystem(options);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_TRUE(BitIdentical(a->u, b->u));
  EXPECT_TRUE(BitIdentical(a->y, b->y));
  EXPECT_TRUE(BitIdentical(a->states, b->states));
  EXPECT_FALSE(BitIdentical(a->u, c->u));
  EXPECT_FALSE(BitIdentical(a->y, c->y));
}

TEST(BinarySystemTest, NoiseLevelDoesNotChangeInput) {
  BinarySystemOptions options;
  const auto clean = GenerateBinarySystem(options);
  options.noise_std = 0.2;
  const auto noisy = GenerateBinarySystem(options);
  ASSERT_TRUE(clean.ok() && noisy.ok());
  EXPECT_TRUE(BitIdentical(clean->u, noisy->u));
  EXPECT_FALSE(BitIdentical(clean->states, noisy->states));
}

TEST(BinarySystemTest, InputIsHeldWithProbabilityOneTenth) {
  const auto seq = GenerateBinarySystem(BinarySystemOptions());
  ASSERT_TRUE(seq.ok()) << seq.status();
  int held = 0;
  for (int k = 1; k < 2000; ++k) held += seq->u(0, k) == seq->u(0, k - 1);
  EXPECT_NEAR(held / 1999.0, 0.1, 0.03);
}

// Restates ALGORITHMS.md §2.7 item 5.5 with scalar formulas, independent of
// the implementation's matrices: at sigma_n = 0 each state and output follows
// from the previous state and input.
TEST(BinarySystemTest, NoiseFreeTrajectoryFollowsTheEquations) {
  const auto seq = GenerateBinarySystem(BinarySystemOptions());
  ASSERT_TRUE(seq.ok()) << seq.status();
  const Eigen::MatrixXd& x = seq->states;
  for (int k = 0; k < 2000; ++k) {
    const double x1 = x(0, k), x2 = x(1, k), x3 = x(2, k);
    const double score = -2.0 * (x1 + x1 * x1 * x1 / 3.0) +
                         1.5 * (x2 + x2 * x2 * x2 / 3.0) +
                         0.5 * (x3 + x3 * x3 * x3 / 3.0) - 4.0;
    EXPECT_EQ(seq->y(0, k), score >= 0.0 ? 1.0 : 0.0) << "k = " << k;
    if (k + 1 == 2000) break;
    const double d1 = x1 * (0.9 + 0.1 * std::sin(x1));
    const double d2 = x2 * (0.9 + 0.1 * std::sin(x2));
    const double d3 = x3 * (0.9 + 0.1 * std::sin(x3));
    const double u = seq->u(0, k);
    const double g = u * (1.0 - u * u * u);
    EXPECT_NEAR(x(0, k + 1), 0.8 * d1 + 0.2 * d2 - 0.1 * d3 - g, 1e-12);
    EXPECT_NEAR(x(1, k + 1), 0.9 * d2 + 0.1 * d3 + 0.5 * g, 1e-12);
    EXPECT_NEAR(x(2, k + 1), 0.1 * d1 - 0.1 * d2 + 0.7 * d3 + g, 1e-12);
  }
}

struct ClassBalanceCase {
  double noise_std;
  double low;
  double high;
};

class BinarySystemClassBalanceTest
    : public ::testing::TestWithParam<ClassBalanceCase> {};

// ALGORITHMS.md reports ~86 %, ~80 % and ~68 % ones (one seed each); over
// 500 seeds this generator averages 83 %, 82 % and 71 %, every seed within
// +-8 points.
TEST_P(BinarySystemClassBalanceTest, FractionOfOnesMatchesThePaper) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    BinarySystemOptions options;
    options.noise_std = GetParam().noise_std;
    options.seed = seed;
    const auto seq = GenerateBinarySystem(options);
    ASSERT_TRUE(seq.ok()) << seq.status();
    EXPECT_GE(seq->y.mean(), GetParam().low) << "seed " << seed;
    EXPECT_LE(seq->y.mean(), GetParam().high) << "seed " << seed;
  }
}

INSTANTIATE_TEST_SUITE_P(NoiseLevels, BinarySystemClassBalanceTest,
                         ::testing::Values(ClassBalanceCase{0.0, 0.75, 0.95},
                                           ClassBalanceCase{0.05, 0.72, 0.90},
                                           ClassBalanceCase{0.2, 0.60, 0.80}));

TEST(BinarySystemTest, MoreNoiseMeansFewerOnes) {
  auto mean_ones = [](double noise_std) {
    double sum = 0.0;
    for (uint64_t seed = 1; seed <= 10; ++seed) {
      BinarySystemOptions options;
      options.noise_std = noise_std;
      options.seed = seed;
      sum += GenerateBinarySystem(options)->y.mean();
    }
    return sum / 10.0;
  };
  EXPECT_GT(mean_ones(0.0), mean_ones(0.2) + 0.05);
}

TEST(BinarySystemOptionsTest, ValidationNamesFieldValueAndConstraint) {
  BinarySystemOptions options;
  options.samples = 0;
  EXPECT_EQ(options.Validate(),
            absl::InvalidArgumentError(
                "BinarySystemOptions.samples = 0: must be >= 2"));
  EXPECT_EQ(GenerateBinarySystem(options).status(), options.Validate());

  options = BinarySystemOptions();
  options.noise_std = -0.05;
  EXPECT_EQ(options.Validate(),
            absl::InvalidArgumentError(
                "BinarySystemOptions.noise_std = -0.05: must be finite and >= "
                "0"));
  options.noise_std = kInf;
  EXPECT_EQ(
      options.Validate(),
      absl::InvalidArgumentError(
          "BinarySystemOptions.noise_std = inf: must be finite and >= 0"));
}

TEST(BinarySystemTest, TwoSamplesIsTheShortestRecord) {
  BinarySystemOptions options;
  options.samples = 2;
  const auto seq = GenerateBinarySystem(options);
  ASSERT_TRUE(seq.ok()) << seq.status();
  EXPECT_EQ(seq->y.cols(), 2);
  CascadedTanksOptions tanks;
  tanks.samples = 2;
  const auto tank_seq = GenerateCascadedTanks(tanks);
  ASSERT_TRUE(tank_seq.ok()) << tank_seq.status();
  EXPECT_EQ(tank_seq->y.cols(), 2);
}

// The record follows its three lags exactly, and its noise only the
// measurement: refitting the recurrence on y_true gives residual 0.
TEST(NarxLagsTest, FollowsItsThreeLagsAndIsDeterministic) {
  NarxLagsOptions options;
  options.samples = 500;
  options.noise_std = 0.1;
  const auto seq = GenerateNarxLags(options);
  ASSERT_TRUE(seq.ok()) << seq.status();
  const Eigen::MatrixXd& u = seq->u;
  const Eigen::MatrixXd& x = seq->states;
  for (int t = 3; t < 500; ++t) {
    EXPECT_NEAR(x(0, t),
                0.7 * x(0, t - 1) + std::tanh(2.0 * u(0, t - 1)) -
                    0.5 * u(0, t - 3) * u(0, t - 3),
                1e-12);
  }
  EXPECT_GE(u.minCoeff(), -1.0);
  EXPECT_LT(u.maxCoeff(), 1.0);
  const double noise = std::sqrt((seq->y - x).squaredNorm() / 500);
  EXPECT_NEAR(noise, 0.1, 0.02);
  const auto again = GenerateNarxLags(options);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->y, seq->y);
  options.samples = 3;
  EXPECT_EQ(GenerateNarxLags(options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sparrow::core::data
