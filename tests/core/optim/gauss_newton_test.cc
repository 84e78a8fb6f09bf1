#include "core/optim/gauss_newton/gauss_newton.h"

#include <cmath>
#include <limits>
#include <memory>

#include "Eigen/Eigenvalues"
#include "core/optim/admm/admm.h"
#include "core/optim/gauss_newton/least_squares.h"
#include "gtest/gtest.h"
#include "tests/testing/finite_difference.h"

namespace sparrow::core {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using testing::NumericGradient;
using testing::RandomMatrix;
using testing::RelativeError;

struct RnnCase {
  InitialState initial_state;
  LossKind loss;
  int threads;
  bool linear = false;  // linear-plus-neural (MSE only)
};

class SequenceLeastSquaresTest : public ::testing::TestWithParam<RnnCase> {
 protected:
  void SetUp() override {
    const RnnCase& c = GetParam();
    StateSpaceRnnSpec spec;
    spec.nx = 3;
    spec.nu = 1;
    spec.ny = 2;
    spec.fx_hidden = {4};
    spec.fy_hidden = {3};
    spec.initial_state = c.initial_state;
    spec.num_traces = 3;
    spec.encoder = EncoderSpec{{3}, 2, 2};
    spec.feedthrough = c.loss == LossKind::kMse;
    spec.output_activation =
        c.loss == LossKind::kMse ? Activation::kLinear : Activation::kSigmoid;
    spec.linear = c.linear;
    rnn_ = StateSpaceRnn(spec);
    for (int t = 0; t < 3; ++t) {
      MatrixXd y = RandomMatrix(2, 20 + 3 * t, 30 + t);
      if (c.loss != LossKind::kMse) y = (y.array() > 0).cast<double>();
      traces_.push_back({RandomMatrix(1, 20 + 3 * t, 40 + t), y});
    }
    Rng rng(6);
    w_.resize(rnn_.num_params());
    rnn_.Initialize(1.0, &rng, w_.data());
    w_.head(rnn_.x0_size()) += 0.3 * RandomMatrix(rnn_.x0_size(), 1, 9).col(0);
    // Initialize leaves [A B], [C D] and the output layers 0 for linear.
    if (c.linear) w_ += 0.2 * RandomMatrix(w_.size(), 1, 12).col(0);
    loss_ = Loss{c.loss, c.loss == LossKind::kMse ? 0.0 : 1e-4};
  }
  StateSpaceRnn rnn_;
  std::vector<data::Trace> traces_;
  VectorXd w_;
  Loss loss_;
};

TEST_P(SequenceLeastSquaresTest, GradientIsMinusAtbAndHessianIsTheGgn) {
  SequenceLeastSquares problem(&rnn_, &traces_, loss_, 0.7, 0.2,
                               GetParam().threads);
  MatrixXd h;
  VectorXd g;
  const double v = problem.NormalEquations(w_, &h, &g);
  EXPECT_NEAR(v, problem.Value(w_), 1e-12 * std::abs(v));
  // Bemporad §3: grad V = -A^T b exactly.
  const VectorXd fd =
      NumericGradient([&](const VectorXd& x) { return problem.Value(x); }, w_);
  EXPECT_LT(RelativeError(-g, fd), 1e-6);
  // H = A^T A: symmetric positive definite with the L2 rows (min eigenvalue >=
  // min rho).
  const MatrixXd full = h.selfadjointView<Eigen::Lower>();
  Eigen::SelfAdjointEigenSolver<MatrixXd> eig(full);
  EXPECT_GE(eig.eigenvalues().minCoeff(), 0.2 - 1e-9);
}

TEST_P(SequenceLeastSquaresTest, ThreadsGiveTheSameNormalEquations) {
  SequenceLeastSquares one(&rnn_, &traces_, loss_, 0.7, 0.2, 1);
  SequenceLeastSquares two(&rnn_, &traces_, loss_, 0.7, 0.2, 3);
  MatrixXd h1, h2;
  VectorXd g1, g2;
  one.NormalEquations(w_, &h1, &g1);
  two.NormalEquations(w_, &h2, &g2);
  EXPECT_LT(RelativeError(h2.triangularView<Eigen::Lower>().toDenseMatrix(),
                          h1.triangularView<Eigen::Lower>().toDenseMatrix()),
            1e-13);
  EXPECT_LT(RelativeError(g2, g1), 1e-13);
}

TEST_P(SequenceLeastSquaresTest, OneTraceSplitInTimeOnTwoThreadsMatches) {
  // The last trace (26 steps) alone: two threads build its rows in two halves
  // and merge them through the state sensitivities at the middle.
  const std::vector<data::Trace> one(traces_.begin() + 2, traces_.end());
  SequenceLeastSquares serial(&rnn_, &one, loss_, 0.7, 0.2, 1);
  SequenceLeastSquares split(&rnn_, &one, loss_, 0.7, 0.2, 2);
  MatrixXd h1, h2, r1, r2;
  VectorXd g1, g2, d1, d2;
  EXPECT_EQ(serial.NormalEquations(w_, &h1, &g1),
            split.NormalEquations(w_, &h2, &g2));
  EXPECT_LT(RelativeError(h2.triangularView<Eigen::Lower>().toDenseMatrix(),
                          h1.triangularView<Eigen::Lower>().toDenseMatrix()),
            1e-12);
  EXPECT_LT(RelativeError(g2, g1), 1e-12);
  // The QR factors agree up to the signs of their rows: compare R^T R, R^T d.
  EXPECT_EQ(serial.TriangularFactor(w_, &r1, &d1),
            split.TriangularFactor(w_, &r2, &d2));
  EXPECT_LT(RelativeError(r2.transpose() * r2, r1.transpose() * r1), 1e-12);
  EXPECT_LT(RelativeError(r2.transpose() * d2, r1.transpose() * d1), 1e-12);
  EXPECT_EQ(r2.triangularView<Eigen::StrictlyLower>().toDenseMatrix().norm(),
            0.0);
  // Deterministic: the same split gives the same digits every time.
  MatrixXd h3;
  VectorXd g3;
  split.NormalEquations(w_, &h3, &g3);
  EXPECT_EQ(h3.triangularView<Eigen::Lower>().toDenseMatrix(),
            h2.triangularView<Eigen::Lower>().toDenseMatrix());
  EXPECT_EQ(g3, g2);
}

TEST_P(SequenceLeastSquaresTest, StreamingQrFactorsTheSameProblem) {
  SequenceLeastSquares problem(&rnn_, &traces_, loss_, 0.7, 0.2,
                               GetParam().threads);
  MatrixXd h, r;
  VectorXd g, d;
  const double v = problem.NormalEquations(w_, &h, &g);
  EXPECT_EQ(problem.TriangularFactor(w_, &r, &d), v);
  const MatrixXd full = h.selfadjointView<Eigen::Lower>();
  EXPECT_LT(RelativeError(r.transpose() * r, full), 1e-12);
  EXPECT_LT(RelativeError(r.transpose() * d, g), 1e-12);
  EXPECT_EQ(r.triangularView<Eigen::StrictlyLower>().toDenseMatrix().norm(),
            0.0);
}

TEST_P(SequenceLeastSquaresTest, ValueBelowDecidesExactlyAsValue) {
  SequenceLeastSquares problem(&rnn_, &traces_, loss_, 0.7, 0.2,
                               GetParam().threads);
  const double v = problem.Value(w_);
  // At or above the cutoff: the exact value, to the bit.
  EXPECT_EQ(problem.ValueBelow(w_, v), v);
  EXPECT_EQ(problem.ValueBelow(w_, 2.0 * v), v);
  // Below it: some value above the cutoff; far below, abandoned (+Inf).
  const double below = std::nextafter(v, 0.0);
  EXPECT_GT(problem.ValueBelow(w_, below), below);
  EXPECT_TRUE(std::isinf(problem.ValueBelow(w_, -1e9)));
}

TEST_P(SequenceLeastSquaresTest, ReusedSimulationGivesTheSameRows) {
  SequenceLeastSquares fresh(&rnn_, &traces_, loss_, 0.7, 0.2,
                             GetParam().threads);
  SequenceLeastSquares reused(&rnn_, &traces_, loss_, 0.7, 0.2,
                              GetParam().threads);
  const VectorXd other = w_ + 0.1 * RandomMatrix(w_.size(), 1, 11).col(0);
  MatrixXd h1, h2;
  VectorXd g1, g2;
  // A completed trial at w_ is reused by the rows at w_.
  reused.Value(w_);
  EXPECT_EQ(fresh.NormalEquations(w_, &h1, &g1),
            reused.NormalEquations(w_, &h2, &g2));
  EXPECT_EQ(h1.triangularView<Eigen::Lower>().toDenseMatrix(),
            h2.triangularView<Eigen::Lower>().toDenseMatrix());
  EXPECT_EQ(g1, g2);
  // An abandoned trial overwrites the tapes of w_ with a partial simulation of
  // `other`: the rows at w_ must not reuse them.
  ASSERT_TRUE(std::isinf(reused.ValueBelow(other, -1e9)));
  EXPECT_EQ(fresh.NormalEquations(w_, &h1, &g1),
            reused.NormalEquations(w_, &h2, &g2));
  EXPECT_EQ(g1, g2);
}

// Whether the rows reuse a slot's tapes is not observable; what is: the rows
// equal a fresh build whichever slot simulated what, and a partial simulation
// in slot 1 never stands in for a complete one.
TEST_P(SequenceLeastSquaresTest, RowsAfterTrialsInEitherSlotEqualFreshRows) {
  SequenceLeastSquares fresh(&rnn_, &traces_, loss_, 0.7, 0.2, 2);
  SequenceLeastSquares reused(&rnn_, &traces_, loss_, 0.7, 0.2, 2);
  ASSERT_NE(reused.trial_pool(), nullptr);
  const VectorXd other = w_ + 0.1 * RandomMatrix(w_.size(), 1, 11).col(0);
  MatrixXd h1, h2;
  VectorXd g1, g2;
  // Slot 1 simulated w_ completely, slot 0 something else: the rows at w_
  // (from slot 1's tapes) have the numbers of a fresh simulation.
  EXPECT_EQ(reused.ValueBelowIn(1, w_, std::numeric_limits<double>::infinity()),
            fresh.Value(w_));
  reused.ValueBelowIn(0, other, std::numeric_limits<double>::infinity());
  EXPECT_EQ(fresh.NormalEquations(w_, &h1, &g1),
            reused.NormalEquations(w_, &h2, &g2));
  EXPECT_EQ(h1.triangularView<Eigen::Lower>().toDenseMatrix(),
            h2.triangularView<Eigen::Lower>().toDenseMatrix());
  EXPECT_EQ(g1, g2);
  // A trial abandoned in slot 1 leaves nothing to reuse: the rows at `other`
  // simulate it again.
  ASSERT_TRUE(std::isinf(reused.ValueBelowIn(1, other, -1e9)));
  EXPECT_EQ(fresh.NormalEquations(other, &h1, &g1),
            reused.NormalEquations(other, &h2, &g2));
  EXPECT_EQ(g1, g2);
}

TEST_P(SequenceLeastSquaresTest, NailmOnTwoThreadsFollowsOneThread) {
  // One trace: the normal equations split in time and the trials in pairs.
  // Rounding differs from one thread, so the runs agree closely, not bit for
  // bit, over a few epochs.
  const std::vector<data::Trace> one(traces_.begin() + 2, traces_.end());
  GaussNewtonOptions o;
  o.method = GaussNewtonOptions::Method::kLevenbergMarquardt;
  o.lambda0 = 1e-2;
  o.stop = StopRules{8};
  VectorXd w1 = w_, w2 = w_;
  SequenceLeastSquares serial(&rnn_, &one, loss_, 0.7, 0.2, 1);
  SequenceLeastSquares two(&rnn_, &one, loss_, 0.7, 0.2, 2);
  const Summary s1 = MinimizeGaussNewton(o, serial, &w1, nullptr);
  const Summary s2 = MinimizeGaussNewton(o, two, &w2, nullptr);
  EXPECT_EQ(s1.iterations, s2.iterations);
  EXPECT_LT(s1.final_loss, s1.initial_loss);
  EXPECT_NEAR(s2.final_loss, s1.final_loss, 1e-9 * s1.final_loss);
  EXPECT_LT(RelativeError(w2, w1), 1e-7);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SequenceLeastSquaresTest,
    ::testing::Values(
        RnnCase{InitialState::kFree, LossKind::kMse, 1},
        RnnCase{InitialState::kEncoder, LossKind::kMse, 2},
        RnnCase{InitialState::kFree, LossKind::kBinaryCrossEntropy, 1},
        RnnCase{InitialState::kZero, LossKind::kMse, 3},
        RnnCase{InitialState::kFree, LossKind::kMse, 2, true},
        RnnCase{InitialState::kEncoder, LossKind::kMse, 1, true}));

// V(w) = |X w - y|^2 + rho/2 |w|^2 in least-squares form, optionally +Inf
// beyond a wall.
class LinearLeastSquares : public LeastSquaresProblem {
 public:
  LinearLeastSquares(MatrixXd x, VectorXd y, double rho, double wall)
      : x_(std::move(x)), y_(std::move(y)), rho_(rho), wall_(wall) {}
  int num_params() const override { return static_cast<int>(x_.cols()); }
  int num_samples() const override { return static_cast<int>(x_.rows()); }
  double Value(const VectorXd& w) override {
    ++values;
    if (w.cwiseAbs().maxCoeff() > wall_)
      return std::numeric_limits<double>::infinity();
    return (x_ * w - y_).squaredNorm() + 0.5 * rho_ * w.squaredNorm();
  }
  double NormalEquations(const VectorXd& w, MatrixXd* h, VectorXd* g) override {
    *h = 2.0 * x_.transpose() * x_;
    h->diagonal().array() += rho_;
    *g = -2.0 * x_.transpose() * (x_ * w - y_) - rho_ * w;
    return Value(w);
  }
  int values = 0;

 private:
  MatrixXd x_;
  VectorXd y_;
  double rho_, wall_;
};

LinearLeastSquares Planted(double rho, double wall, VectorXd* truth) {
  const MatrixXd x = RandomMatrix(50, 6, 1);
  *truth = VectorXd::LinSpaced(6, -1.0, 1.5);
  return LinearLeastSquares(x, x * *truth, rho, wall);
}

TEST(GaussNewtonTest, BothMethodsSolveALinearLeastSquaresProblem) {
  for (auto [method, solver] :
       {std::pair{GaussNewtonOptions::Method::kLineSearch,
                  GaussNewtonOptions::Solver::kCholesky},
        std::pair{GaussNewtonOptions::Method::kLevenbergMarquardt,
                  GaussNewtonOptions::Solver::kCholesky},
        std::pair{GaussNewtonOptions::Method::kLineSearch,
                  GaussNewtonOptions::Solver::kQr},
        std::pair{GaussNewtonOptions::Method::kLevenbergMarquardt,
                  GaussNewtonOptions::Solver::kQr}}) {
    VectorXd truth;
    LinearLeastSquares problem = Planted(0.0, 1e9, &truth);
    GaussNewtonOptions o;
    o.method = method;
    o.solver = solver;
    o.lambda0 = 1e-3;
    o.epsilon_v = 1e-14;
    VectorXd w = VectorXd::Zero(6);
    const Summary s = MinimizeGaussNewton(o, problem, &w, nullptr);
    EXPECT_LT((w - truth).norm(), 1e-6) << s.BriefReport();
    // The loss never increases.
    for (size_t i = 1; i < s.history.size(); ++i) {
      EXPECT_LE(s.history[i].loss, s.history[i - 1].loss + 1e-15);
    }
  }
}

TEST(GaussNewtonTest, NonFiniteTrialsAreRejectedNeverAccepted) {
  VectorXd truth;
  LinearLeastSquares problem =
      Planted(0.0, 0.3, &truth);  // optimum beyond the wall
  for (auto method : {GaussNewtonOptions::Method::kLineSearch,
                      GaussNewtonOptions::Method::kLevenbergMarquardt}) {
    GaussNewtonOptions o;
    o.method = method;
    o.lambda0 = 1e-6;
    VectorXd w = VectorXd::Zero(6);
    GaussNewton solver(o, &problem);
    const auto step = solver.Step(&w);
    EXPECT_TRUE(std::isfinite(step.value));
    EXPECT_LE(w.cwiseAbs().maxCoeff(), 0.3);
    if (step.accepted) {
      EXPECT_GT(step.trials, 1) << "the full step crosses the wall";
    }
  }
}

// Rosenbrock's function in least-squares form, V = r0^2 + r1^2 with
// r = (10 (w1 - w0^2), 1 - w0): a curved valley where NAILS backtracks and
// NAILM rejects many trials. With `pairs` it offers two trial slots.
class RosenbrockLeastSquares : public LeastSquaresProblem {
 public:
  explicit RosenbrockLeastSquares(bool pairs)
      : pool_(pairs ? std::make_unique<ThreadPool>(2) : nullptr) {}
  int num_params() const override { return 2; }
  int num_samples() const override { return 2; }
  double Value(const VectorXd& w) override { return Of(w); }
  ThreadPool* trial_pool() override { return pool_.get(); }
  double ValueBelowIn(int slot, const VectorXd& w, double) override {
    ++slot_values[slot];  // each slot is used by one thread at a time
    return Of(w);
  }
  double NormalEquations(const VectorXd& w, MatrixXd* h, VectorXd* g) override {
    // l = r^2: rows sqrt(2) J, right-hand side -sqrt(2) r.
    MatrixXd j(2, 2);
    j << -20.0 * w(0), 10.0, -1.0, 0.0;
    *h = 2.0 * j.transpose() * j;
    *g = -2.0 * j.transpose() * Residual(w);
    return Of(w);
  }
  int slot_values[2] = {0, 0};

 private:
  static VectorXd Residual(const VectorXd& w) {
    return VectorXd{{10.0 * (w(1) - w(0) * w(0)), 1.0 - w(0)}};
  }
  static double Of(const VectorXd& w) { return Residual(w).squaredNorm(); }
  std::unique_ptr<ThreadPool> pool_;
};

TEST(GaussNewtonTest, TrialsInPairsGiveTheIteratesOfTrialsInTurn) {
  for (auto method : {GaussNewtonOptions::Method::kLineSearch,
                      GaussNewtonOptions::Method::kLevenbergMarquardt}) {
    GaussNewtonOptions o;
    o.method = method;
    o.lambda0 = 1e-3;  // NAILM: too little damping at first, trials rejected
    o.stop = StopRules{40};
    RosenbrockLeastSquares in_turn(false), in_pairs(true);
    VectorXd w1{{-1.2, 1.0}}, w2 = w1;
    const Summary s1 = MinimizeGaussNewton(o, in_turn, &w1, nullptr);
    const Summary s2 = MinimizeGaussNewton(o, in_pairs, &w2, nullptr);
    EXPECT_EQ(w1, w2);
    EXPECT_EQ(s1.iterations, s2.iterations);
    ASSERT_EQ(s1.history.size(), s2.history.size());
    for (size_t i = 0; i < s1.history.size(); ++i) {
      EXPECT_EQ(s1.history[i].loss, s2.history[i].loss) << i;
      EXPECT_EQ(s1.history[i].step_size, s2.history[i].step_size) << i;
    }
    // Rejected trials happened, and the second slot evaluated some of them.
    EXPECT_EQ(in_turn.slot_values[1], 0);
    EXPECT_GT(in_pairs.slot_values[1], 0);
    EXPECT_GT(in_turn.slot_values[0], s1.iterations);
  }
}

// Normal equations ruined by rounding (here: negated, as if A^T A had lost
// its L2 rows to 1e20-sized entries), while the QR factor of A is exact.
class LossyNormalEquations : public LinearLeastSquares {
 public:
  using LinearLeastSquares::LinearLeastSquares;
  double NormalEquations(const VectorXd& w, MatrixXd* h, VectorXd* g) override {
    const double v = LinearLeastSquares::NormalEquations(w, h, g);
    *h = -*h;
    return v;
  }
  double TriangularFactor(const VectorXd& w, MatrixXd* r,
                          VectorXd* d) override {
    MatrixXd h;
    VectorXd g;
    const double v = LinearLeastSquares::NormalEquations(w, &h, &g);
    const MatrixXd full = h.selfadjointView<Eigen::Lower>();
    *r = full.llt().matrixU();
    *d = r->transpose().triangularView<Eigen::Lower>().solve(g);
    return v;
  }
};

TEST(GaussNewtonTest, RejectedCholeskyEpochIsRetriedWithQr) {
  for (auto method : {GaussNewtonOptions::Method::kLineSearch,
                      GaussNewtonOptions::Method::kLevenbergMarquardt}) {
    const MatrixXd x = RandomMatrix(50, 6, 1);
    const VectorXd truth = VectorXd::LinSpaced(6, -1.0, 1.5);
    LossyNormalEquations problem(x, x * truth, 0.0, 1e9);
    GaussNewtonOptions o;
    o.method = method;
    o.lambda0 = 1e-9;
    VectorXd w = VectorXd::Zero(6);
    GaussNewton solver(o, &problem);
    const GaussNewton::Outcome step = solver.Step(&w);
    ASSERT_TRUE(step.accepted);
    EXPECT_TRUE(step.qr_fallback);
    // The linear problem is solved by the first (QR) Gauss-Newton step.
    EXPECT_LT((w - truth).norm(), 1e-6);
    w.setZero();
    const Summary s = MinimizeGaussNewton(o, problem, &w, nullptr);
    EXPECT_NE(s.message.find("re-solved by QR"), std::string::npos)
        << s.message;
  }
}

// A Gauss-Newton step nearly orthogonal to the gradient (columns scaled 1 and
// 1e3) is damped until cos(step, -grad V) >= min_cosine; with min_cosine 0 it
// is taken as it is.
TEST(GaussNewtonTest, AngleSafeguardDampsANearlyOrthogonalStep) {
  MatrixXd x = RandomMatrix(50, 2, 3);
  x.col(1) *= 1e3;
  const VectorXd y = RandomMatrix(50, 1, 4).col(0);
  const VectorXd w0 = VectorXd::Zero(2);
  MatrixXd h;
  VectorXd g;  // -grad V at w0
  LinearLeastSquares(x, y, 0.0, 1e9).NormalEquations(w0, &h, &g);
  auto cosine = [&](const VectorXd& step) {
    return g.dot(step) / (g.norm() * step.norm());
  };
  GaussNewtonOptions o;
  o.min_cosine = 0.0;
  LinearLeastSquares plain_problem(x, y, 0.0, 1e9);
  VectorXd plain = w0;
  const GaussNewton::Outcome undamped =
      GaussNewton(o, &plain_problem).Step(&plain);
  ASSERT_TRUE(undamped.accepted);
  EXPECT_FALSE(undamped.angle_damped);
  const double gn_cosine = cosine(plain - w0);
  ASSERT_GT(gn_cosine, 0.0);
  ASSERT_LT(gn_cosine, 1e-2);

  o.min_cosine = 10.0 * gn_cosine;
  LinearLeastSquares problem(x, y, 0.0, 1e9);
  VectorXd w = w0;
  const GaussNewton::Outcome damped = GaussNewton(o, &problem).Step(&w);
  ASSERT_TRUE(damped.accepted);
  EXPECT_TRUE(damped.angle_damped);
  EXPECT_GE(cosine(w - w0), o.min_cosine);
  EXPECT_LT(damped.value, problem.Value(w0));
  w = w0;
  const Summary s = MinimizeGaussNewton(o, problem, &w, nullptr);
  EXPECT_NE(s.message.find("min_cosine"), std::string::npos) << s.message;
}

TEST(GaussNewtonTest, OptionsValidateAndNameTheField) {
  EXPECT_TRUE(GaussNewtonOptions().Validate().ok());
  GaussNewtonOptions o;
  o.c1 = 2;
  EXPECT_NE(o.Validate().message().find("c1 is 2"), std::string::npos);
  o = GaussNewtonOptions();
  o.c2 = 0.5;
  EXPECT_NE(o.Validate().message().find("c2"), std::string::npos);
  o = GaussNewtonOptions();
  o.min_cosine = 1.0;
  EXPECT_NE(o.Validate().message().find("min_cosine"), std::string::npos);
  EXPECT_TRUE(AdmmOptions().Validate().ok());
  AdmmOptions a;
  a.rho = -1;
  EXPECT_NE(a.Validate().message().find("rho is -1"), std::string::npos);
  a.rho = 0;  // Bemporad's default, resolved by AdmmRho
  EXPECT_TRUE(a.Validate().ok());
  EXPECT_EQ(AdmmRho(a, 0.0), 1.0);
  EXPECT_EQ(AdmmRho(a, 0.3), 3.0);
}

TEST(AdmmTest, L1ReachesTheLassoSolution) {
  // ADMM on a convex problem converges: compare with proximal gradient descent
  // run to high accuracy on min |Xw - y|^2 + tau |w|_1.
  VectorXd truth;
  LinearLeastSquares problem = Planted(0.0, 1e9, &truth);
  const double tau = 5.0;
  auto g = MakeL1(tau);
  MatrixXd h;
  VectorXd grad;
  problem.NormalEquations(VectorXd::Zero(6), &h, &grad);
  const MatrixXd hs = h.selfadjointView<Eigen::Lower>();
  const double step =
      1.0 /
      Eigen::SelfAdjointEigenSolver<MatrixXd>(hs).eigenvalues().maxCoeff();
  VectorXd reference = VectorXd::Zero(6);
  for (int k = 0; k < 20000; ++k) {
    problem.NormalEquations(reference, &h, &grad);
    reference += step * grad;  // grad holds -gradient
    g->Apply(step, reference);
  }
  GaussNewtonOptions inner;
  AdmmOptions options;
  options.rho = 10.0;
  options.stop.max_iterations = 300;
  VectorXd w = VectorXd::Zero(6);
  std::vector<int> split = {0, 1, 2, 3, 4, 5};
  const Summary s =
      MinimizeAdmm(options, inner, problem, *g, split, &w, nullptr);
  EXPECT_LT((w - reference).norm(), 1e-6) << s.BriefReport();
  EXPECT_GT((reference.array() == 0.0).count(), 0)
      << "tau should zero some weights";
  EXPECT_EQ((w.array() == 0.0).count(), (reference.array() == 0.0).count());
  ASSERT_FALSE(s.history.empty());
  EXPECT_EQ(s.history.back().extras.at(0).first, "primal_residual");
}

TEST(AdmmTest, QuantizedResultLiesInTheSet) {
  VectorXd truth;
  LinearLeastSquares problem = Planted(0.0, 1e9, &truth);
  auto g = MakeQuantization({-1.0, -0.5, 0.0, 0.5, 1.0});
  ASSERT_TRUE(g.ok());
  AdmmOptions options;
  options.rho = 10.0;
  options.stop.max_iterations = 50;
  VectorXd w = VectorXd::Zero(6);
  MinimizeAdmm(options, GaussNewtonOptions(), problem, **g, {0, 1, 2, 3, 4, 5},
               &w, nullptr);
  EXPECT_EQ((*g)->Value(w), 0.0) << w.transpose();
  // The planted solution LinSpaced(-1, 1.5) rounds to {-1, -0.5, 0, 0.5, 1, 1}.
  VectorXd want(6);
  want << -1.0, -0.5, 0.0, 0.5, 1.0, 1.0;
  EXPECT_EQ(w, want);
}

TEST(AdmmTest, OnlyTheSplitIsPenalized) {
  VectorXd truth;
  LinearLeastSquares problem = Planted(0.0, 1e9, &truth);
  auto g = MakeL1(1e6);  // zeroes everything it touches
  AdmmOptions options;
  options.rho = 10.0;
  options.stop.max_iterations = 100;
  VectorXd w = VectorXd::Zero(6);
  MinimizeAdmm(options, GaussNewtonOptions(), problem, *g, {0, 1, 2}, &w,
               nullptr);
  EXPECT_EQ(w.head(3), VectorXd::Zero(3));
  EXPECT_GT(w.tail(3).cwiseAbs().minCoeff(), 0.0);
}

}  // namespace
}  // namespace sparrow::core
