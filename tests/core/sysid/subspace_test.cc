#include "core/sysid/subspace.h"

#include <algorithm>
#include <complex>
#include <vector>

#include "Eigen/Eigenvalues"
#include "core/util/random.h"
#include "gtest/gtest.h"

namespace sparrow::core::sysid {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;

// A trace of `system` driven by white Gaussian inputs from x0, with Gaussian
// output noise of standard deviation `noise`.
data::Trace Record(const LinearStateSpace& system, const VectorXd& x0, int n,
                   double noise, uint64_t seed) {
  Rng rng(seed);
  data::Trace t;
  t.u.resize(system.b.cols(), n);
  for (Eigen::Index i = 0; i < t.u.size(); ++i) t.u.data()[i] = rng.Normal();
  t.y = SimulateLinear(system, t.u, x0);
  for (Eigen::Index i = 0; i < t.y.size(); ++i) {
    t.y.data()[i] += noise * rng.Normal();
  }
  return t;
}

std::vector<double> EigenvalueMagnitudes(const MatrixXd& a) {
  const Eigen::EigenSolver<MatrixXd> eig(a, false);
  std::vector<double> out;
  for (const std::complex<double>& v : eig.eigenvalues()) {
    out.push_back(std::abs(v));
  }
  std::sort(out.begin(), out.end());
  return out;
}

// A lightly damped resonance (poles 0.95 e^{+-0.3i}) with feedthrough.
LinearStateSpace Resonance() {
  LinearStateSpace s;
  const double r = 0.95, w = 0.3;
  s.a.resize(2, 2);
  s.a << r * std::cos(w), -r * std::sin(w), r * std::sin(w), r * std::cos(w);
  s.b.resize(2, 1);
  s.b << 1.0, 0.5;
  s.c.resize(1, 2);
  s.c << 0.3, -0.7;
  s.d.resize(1, 1);
  s.d << 0.2;
  return s;
}

TEST(SubspaceTest, RecoversANoiseFreeSystemAndEveryTracesInitialState) {
  const LinearStateSpace truth = Resonance();
  const std::vector<VectorXd> x0 = {Eigen::Vector2d(1.0, -2.0),
                                    Eigen::Vector2d(-0.5, 0.0)};
  const std::vector<data::Trace> traces = {Record(truth, x0[0], 400, 0.0, 1),
                                           Record(truth, x0[1], 300, 0.0, 2)};
  absl::StatusOr<LinearStateSpace> fit = FitSubspace(traces, {.nx = 2});
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_FALSE(fit->stabilized);
  EXPECT_NEAR(fit->spectral_radius, 0.95, 1e-6);
  const std::vector<double> got = EigenvalueMagnitudes(fit->a);
  EXPECT_NEAR(got[0], 0.95, 1e-6);
  EXPECT_NEAR(got[1], 0.95, 1e-6);
  EXPECT_NEAR(fit->d(0, 0), 0.2, 1e-6);
  ASSERT_EQ(fit->x0.size(), 2u);
  for (int t = 0; t < 2; ++t) {
    const MatrixXd y = SimulateLinear(*fit, traces[t].u, fit->x0[t]);
    EXPECT_LT((y - traces[t].y).norm(), 1e-6 * traces[t].y.norm())
        << "trace " << t;
  }
}

TEST(SubspaceTest, FitsAMimoSystemWithoutFeedthroughUnderOutputNoise) {
  LinearStateSpace truth;
  truth.a.resize(3, 3);
  truth.a << 0.7, 0.2, 0.0,  //
      -0.2, 0.7, 0.1,        //
      0.0, 0.0, 0.5;
  truth.b.resize(3, 2);
  truth.b << 1.0, 0.0, 0.0, 1.0, 0.5, -0.5;
  truth.c.resize(2, 3);
  truth.c << 1.0, 0.0, 1.0, 0.0, 1.0, -1.0;
  truth.d = MatrixXd::Zero(2, 2);
  const data::Trace noisy = Record(truth, VectorXd::Zero(3), 5000, 0.05, 3);
  absl::StatusOr<LinearStateSpace> fit =
      FitSubspace({noisy}, {.nx = 3, .feedthrough = false});
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_EQ(fit->d.norm(), 0.0);
  // On fresh inputs, the fit's simulation stays within a few percent of the
  // true system's noise-free output.
  const data::Trace fresh = Record(truth, VectorXd::Zero(3), 1000, 0.0, 4);
  const MatrixXd y = SimulateLinear(*fit, fresh.u, VectorXd::Zero(3));
  EXPECT_LT((y - fresh.y).norm(), 0.03 * fresh.y.norm());
}

// Many traces from x0 = 0, fitted without initial states (a model whose x0 is
// zero or encoded): exact on noise-free data, and every x0 is 0.
TEST(SubspaceTest, ManyTracesWithoutInitialStates) {
  const LinearStateSpace truth = Resonance();
  std::vector<data::Trace> traces;
  for (int t = 0; t < 200; ++t) {
    traces.push_back(Record(truth, VectorXd::Zero(2), 60, 0.0, 100 + t));
  }
  absl::StatusOr<LinearStateSpace> fit =
      FitSubspace(traces, {.nx = 2, .fit_initial_states = false});
  ASSERT_TRUE(fit.ok()) << fit.status();
  ASSERT_EQ(fit->x0.size(), 200u);
  for (const VectorXd& x0 : fit->x0) EXPECT_EQ(x0.norm(), 0.0);
  for (int t : {0, 199}) {
    const MatrixXd y = SimulateLinear(*fit, traces[t].u, fit->x0[t]);
    EXPECT_LT((y - traces[t].y).norm(), 1e-6 * traces[t].y.norm());
  }
}

TEST(SubspaceTest, ScalesAnUnstableEstimateBelowOne) {
  LinearStateSpace growing = Resonance();
  growing.a *= 1.02 / 0.95;  // poles outside the unit circle
  const data::Trace t = Record(growing, VectorXd::Zero(2), 120, 0.0, 5);
  absl::StatusOr<LinearStateSpace> fit = FitSubspace({t}, {.nx = 2});
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_TRUE(fit->stabilized);
  EXPECT_NEAR(fit->spectral_radius, 1.02, 1e-4);
  EXPECT_LT(EigenvalueMagnitudes(fit->a).back(), 1.0);
}

TEST(SubspaceTest, RefusesRecordsTooShortForTheHankelMatrices) {
  const data::Trace t = Record(Resonance(), VectorXd::Zero(2), 40, 0.0, 6);
  absl::StatusOr<LinearStateSpace> fit = FitSubspace({t}, {.nx = 2});
  ASSERT_FALSE(fit.ok());
  EXPECT_EQ(fit.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(fit.status().message().find("too short"), std::string::npos)
      << fit.status();
}

TEST(SubspaceTest, RefusesAnOrderNotBelowTheBlockRows) {
  const data::Trace t = Record(Resonance(), VectorXd::Zero(2), 400, 0.0, 7);
  EXPECT_FALSE(FitSubspace({t}, {.nx = 4, .block_rows = 4}).ok());
  const absl::StatusOr<LinearStateSpace> huge =
      FitSubspace({t}, {.nx = 2, .block_rows = 5000});
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("at most 2000"), std::string::npos)
      << huge.status();
}

}  // namespace
}  // namespace sparrow::core::sysid
