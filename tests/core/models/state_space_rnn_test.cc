#include "core/models/state_space_rnn.h"

#include <cmath>
#include <sstream>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "tests/testing/finite_difference.h"

namespace sparrow::core {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using testing::NumericGradient;
using testing::NumericJacobian;
using testing::RelativeError;

constexpr double kTolerance = 1e-6;

struct Case {
  InitialState initial_state;
  bool feedthrough;
  Activation activation;
  Activation output_activation;
  bool linear = false;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << static_cast<int>(c.initial_state)
      << (c.feedthrough ? "_feedthrough_" : "_strict_")
      << ActivationName(c.activation) << "_"
      << ActivationName(c.output_activation) << (c.linear ? "_linear" : "");
}

class RnnDerivativeTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    const Case& c = GetParam();
    StateSpaceRnnSpec spec;
    spec.nx = 3;
    spec.nu = 2;
    spec.ny = 2;
    spec.fx_hidden = {4};
    spec.fy_hidden = {3, 2};
    spec.activation = c.activation;
    spec.output_activation = c.output_activation;
    spec.feedthrough = c.feedthrough;
    spec.initial_state = c.initial_state;
    spec.num_traces = 2;
    spec.encoder = EncoderSpec{{4}, 2, 3};
    spec.linear = c.linear;
    ASSERT_TRUE(ValidateStateSpaceRnnSpec(spec, "rnn").ok());
    rnn_ = StateSpaceRnn(spec);
    Rng rng(5);
    theta_.resize(rnn_.num_params());
    rnn_.Initialize(1.0, &rng, theta_.data());
    // Initialize leaves the linear part and the output layers at 0; every
    // parameter must matter for the check.
    if (c.linear) {
      for (int i = 0; i < rnn_.num_params(); ++i) {
        theta_(i) += 0.3 * rng.Normal();
      }
    }
    for (int i = 0; i < rnn_.x0_size(); ++i)
      theta_(rnn_.x0_offset() + i) += 0.5 * rng.Normal();
    for (int t = 0; t < 2; ++t) {
      u_.push_back(testing::RandomMatrix(2, 12 + t, 10 + t));
      y_.push_back(testing::RandomMatrix(2, 12 + t, 20 + t).cwiseAbs());
    }
  }
  // Sum over traces of a weighted quadratic of the predictions.
  double Loss(const VectorXd& theta) const {
    double sum = 0.0;
    StateSpaceRnn::Tape tape;
    for (int t = 0; t < 2; ++t) {
      rnn_.Simulate(theta.data(), u_[t], y_[t], t, &tape);
      sum +=
          (tape.outputs() - y_[t].rightCols(tape.steps)).array().square().sum();
    }
    return sum;
  }
  StateSpaceRnn rnn_;
  VectorXd theta_;
  std::vector<MatrixXd> u_, y_;
};

TEST_P(RnnDerivativeTest, BpttGradientMatchesFiniteDifferences) {
  VectorXd grad = VectorXd::Zero(rnn_.num_params());
  StateSpaceRnn::Tape tape;
  for (int t = 0; t < 2; ++t) {
    rnn_.Simulate(theta_.data(), u_[t], y_[t], t, &tape);
    const MatrixXd d_out = 2.0 * (tape.outputs() - y_[t].rightCols(tape.steps));
    rnn_.Backward(theta_.data(), d_out, t, &tape, grad.data());
  }
  const VectorXd fd =
      NumericGradient([&](const VectorXd& th) { return Loss(th); }, theta_);
  EXPECT_LT(RelativeError(grad, fd), kTolerance);
}

TEST_P(RnnDerivativeTest, OutputJacobiansMatchFiniteDifferences) {
  for (int t = 0; t < 2; ++t) {
    StateSpaceRnn::Tape tape;
    rnn_.Simulate(theta_.data(), u_[t], y_[t], t, &tape);
    const int steps = tape.steps;
    // All outputs of the trace stacked: (ny * steps) x num_params.
    MatrixXd analytic(2 * steps, rnn_.num_params());
    rnn_.OutputJacobians(theta_.data(), t, &tape,
                         [&](int k, const RowMatrixXd& jac) {
                           analytic.middleRows(2 * k, 2) = jac;
                         });
    const MatrixXd fd = NumericJacobian(
        [&](const VectorXd& th) -> VectorXd {
          StateSpaceRnn::Tape tp;
          rnn_.Simulate(th.data(), u_[t], y_[t], t, &tp);
          return Eigen::Map<const VectorXd>(tp.outputs().data(),
                                            tp.outputs().size());
        },
        theta_);
    EXPECT_LT(RelativeError(analytic, fd), kTolerance) << "trace " << t;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Variants, RnnDerivativeTest,
    ::testing::Values(
        Case{InitialState::kFree, true, Activation::kTanh, Activation::kLinear},
        Case{InitialState::kFree, false, Activation::kTanh,
             Activation::kSigmoid},
        Case{InitialState::kEncoder, false, Activation::kTanh,
             Activation::kLinear},
        Case{InitialState::kEncoder, true, Activation::kSigmoid,
             Activation::kLinear},
        Case{InitialState::kZero, true, Activation::kLeakyRelu,
             Activation::kLinear},
        Case{InitialState::kFree, true, Activation::kRelu, Activation::kLinear},
        Case{InitialState::kFree, true, Activation::kLinear,
             Activation::kLinear},
        Case{InitialState::kFree, true, Activation::kTanh, Activation::kLinear,
             true},
        Case{InitialState::kEncoder, false, Activation::kTanh,
             Activation::kLinear, true},
        Case{InitialState::kZero, true, Activation::kRelu, Activation::kLinear,
             true}),
    [](const ::testing::TestParamInfo<Case>& info) {
      std::ostringstream name;
      PrintTo(info.param, &name);
      return "x0kind" + name.str();
    });

// Every column of RowCombination gets the same arithmetic, whether it falls
// in a full packet or among the last, zero-padded columns: each column of a
// call with 0-13 columns equals the same column computed alone (one column:
// always the padded path).
TEST(RowCombinationTest, PacketAndPaddedColumnsAgree) {
  Rng rng(3);
  for (int rows = 1; rows <= 5; ++rows) {
    for (int cols = 0; cols <= 13; ++cols) {
      std::vector<double> coef(rows), m(rows * cols), start(cols);
      for (double& v : coef) v = rng.Normal();
      for (double& v : m) v = rng.Normal();
      for (double& v : start) v = rng.Normal();
      std::vector<double> set(cols), add = start;
      internal::RowCombination<false>(coef.data(), rows, m.data(), cols,
                                      set.data());
      internal::RowCombination<true>(coef.data(), rows, m.data(), cols,
                                     add.data());
      for (int c = 0; c < cols; ++c) {
        std::vector<double> column(rows);
        for (int j = 0; j < rows; ++j) column[j] = m[j * cols + c];
        double alone_set = 0.0, alone_add = start[c];
        internal::RowCombination<false>(coef.data(), rows, column.data(), 1,
                                        &alone_set);
        internal::RowCombination<true>(coef.data(), rows, column.data(), 1,
                                       &alone_add);
        EXPECT_EQ(set[c], alone_set) << rows << " x " << cols << ", " << c;
        EXPECT_EQ(add[c], alone_add) << rows << " x " << cols << ", " << c;
        // And the sum is right (to rounding).
        double want = 0.0;
        for (int j = 0; j < rows; ++j) want += coef[j] * column[j];
        EXPECT_NEAR(set[c], want, 1e-12 * (1.0 + std::abs(want)));
      }
    }
  }
}

TEST(StateSpaceRnnTest, DamperModelHasThePapersParameterCounts) {
  // Bemporad Sec. 5.1: nx = 4, one hidden layer of 4 in fx and fy, feedthrough:
  // theta_x in R^44, theta_y in R^29.
  StateSpaceRnnSpec spec;
  spec.nx = 4;
  spec.nu = 1;
  spec.ny = 1;
  spec.fx_hidden = {4};
  spec.fy_hidden = {4};
  StateSpaceRnn rnn(spec);
  EXPECT_EQ(rnn.fx().num_params(), 44);
  EXPECT_EQ(rnn.fy().num_params(), 29);
  EXPECT_EQ(rnn.num_params(), 4 + 44 + 29);
}

TEST(StateSpaceRnnTest, SilverboxEncoderModelHas649Parameters) {
  // Bemporad Sec. 5.1.1: nx = 8, 3 hidden layers of 8, no feedthrough, encoder
  // 2 x 4 on 8 + 8.
  StateSpaceRnnSpec spec;
  spec.nx = 8;
  spec.nu = 1;
  spec.ny = 1;
  spec.fx_hidden = {8, 8, 8};
  spec.fy_hidden = {8, 8, 8};
  spec.feedthrough = false;
  spec.initial_state = InitialState::kEncoder;
  spec.encoder = EncoderSpec{{4, 4}, 8, 8};
  StateSpaceRnn rnn(spec);
  EXPECT_EQ(rnn.fx().num_params(), 296);
  EXPECT_EQ(rnn.fy().num_params(), 225);
  EXPECT_EQ(rnn.encoder().num_params(), 128);
  EXPECT_EQ(rnn.num_params(), 649);
  EXPECT_EQ(rnn.warmup(), 8);
}

TEST(StateSpaceRnnTest, SimulateFromMatchesFreeInitialState) {
  StateSpaceRnnSpec spec;
  spec.nx = 2;
  spec.nu = 1;
  spec.ny = 1;
  spec.fx_hidden = {3};
  spec.fy_hidden = {3};
  StateSpaceRnn rnn(spec);
  Rng rng(1);
  VectorXd theta(rnn.num_params());
  rnn.Initialize(1.0, &rng, theta.data());
  theta.head(2) << 0.3, -0.2;
  const MatrixXd u = testing::RandomMatrix(1, 20, 3);
  StateSpaceRnn::Tape a, b;
  rnn.Simulate(theta.data(), u, MatrixXd::Zero(1, 20), 0, &a);
  rnn.SimulateFrom(theta.data(), theta.head(2), u, 0, &b);
  EXPECT_EQ(a.outputs(), b.outputs());
}

TEST(StateSpaceRnnTest, ValidationRejectsNegativeSizes) {
  StateSpaceRnnSpec spec;
  spec.nx = 2;
  spec.nu = 1;
  spec.ny = 1;
  spec.fx_hidden = {-3};
  const absl::Status s =
      ValidateStateSpaceRnnSpec(spec, "model.state_space_rnn");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("fx.hidden[0] is -3"), std::string::npos) << s;
  spec.fx_hidden = {3};
  spec.nx = 0;
  EXPECT_FALSE(ValidateStateSpaceRnnSpec(spec, "m").ok());
}

TEST(StateSpaceRnnTest, LinearPartStartsAsThePureLinearModel) {
  StateSpaceRnnSpec spec;
  spec.nx = 2;
  spec.nu = 1;
  spec.ny = 1;
  spec.fx_hidden = {5};
  spec.fy_hidden = {4};
  spec.initial_state = InitialState::kZero;
  spec.linear = true;
  ASSERT_TRUE(ValidateStateSpaceRnnSpec(spec, "rnn").ok());
  const StateSpaceRnn rnn(spec);
  // fx on 3 inputs: 3*5+5 + 5*2+2 = 32; [A B] 2x3; fy on 3 inputs (x and the
  // feedthrough u): 3*4+4 + 4*1+1 = 21; [C D] 1x3.
  EXPECT_EQ(rnn.num_params(), 32 + 6 + 21 + 3);
  EXPECT_EQ(rnn.num_params(), CountStateSpaceRnnParameters(spec));
  Rng rng(1);
  VectorXd theta(rnn.num_params());
  rnn.Initialize(1.0, &rng, theta.data());
  Eigen::Map<MatrixXd> ab(theta.data() + rnn.ab_offset(), 2, 3);
  Eigen::Map<MatrixXd> cd(theta.data() + rnn.cd_offset(), 1, 3);
  EXPECT_EQ(ab.norm(), 0.0);
  EXPECT_EQ(cd.norm(), 0.0);
  ab << 0.5, 0.1, 1.0,  //
      -0.2, 0.8, 0.0;
  cd << 1.0, -1.0, 0.25;
  const MatrixXd u = testing::RandomMatrix(1, 20, 3);
  StateSpaceRnn::Tape tape;
  rnn.Simulate(theta.data(), u, MatrixXd::Zero(1, 20), 0, &tape);
  Eigen::Vector2d x = Eigen::Vector2d::Zero();
  for (int k = 0; k < 20; ++k) {
    const double y = cd(0, 0) * x(0) + cd(0, 1) * x(1) + cd(0, 2) * u(0, k);
    EXPECT_NEAR(tape.outputs()(0, k), y, 1e-12) << "step " << k;
    x = ab.leftCols(2) * x + ab.col(2) * u(0, k);
  }
}

TEST(StateSpaceRnnTest, LinearPartNeedsALinearOutput) {
  StateSpaceRnnSpec spec;
  spec.nx = 2;
  spec.nu = 1;
  spec.ny = 1;
  spec.linear = true;
  spec.output_activation = Activation::kSigmoid;
  const absl::Status s =
      ValidateStateSpaceRnnSpec(spec, "model.state_space_rnn");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("model.state_space_rnn.linear"), std::string::npos)
      << s;
  EXPECT_NE(s.message().find("sigmoid"), std::string::npos) << s;
}

}  // namespace
}  // namespace sparrow::core
