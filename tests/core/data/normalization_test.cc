#include "core/data/normalization.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sparrow::core::data {
namespace {

using ::testing::HasSubstr;

TEST(NormalizerTest, IdentityLeavesDataUnchanged) {
  const Normalizer identity = Normalizer::Identity(3);
  EXPECT_EQ(identity.size(), 3);
  EXPECT_TRUE(identity.Validate().ok());
  const Eigen::MatrixXd original = Eigen::MatrixXd::Random(3, 7);
  Eigen::MatrixXd m = original;
  identity.Apply(&m);
  EXPECT_EQ(m, original);
  identity.Invert(&m);
  EXPECT_EQ(m, original);
}

TEST(NormalizerTest, FitZScorePoolsAllBlocks) {
  // Channel 0 over both blocks: 1, 2, 3, 6 -> mean 3, population variance
  // (4 + 1 + 0 + 9) / 4 = 3.5. Channel 1: 10, 10, 30, 30 -> mean 20, std 10.
  Eigen::MatrixXd a(2, 2), b(2, 2);
  a << 1, 2, 10, 10;
  b << 3, 6, 30, 30;
  const Normalizer normalizer = Normalizer::FitZScore({&a, &b});
  ASSERT_EQ(normalizer.size(), 2);
  EXPECT_DOUBLE_EQ(normalizer.mean(0), 3.0);
  EXPECT_DOUBLE_EQ(normalizer.scale(0), std::sqrt(3.5));
  EXPECT_DOUBLE_EQ(normalizer.mean(1), 20.0);
  EXPECT_DOUBLE_EQ(normalizer.scale(1), 10.0);
  EXPECT_TRUE(normalizer.Validate().ok());

  // After Apply the pooled samples have mean 0 and population std 1.
  normalizer.Apply(&a);
  normalizer.Apply(&b);
  Eigen::MatrixXd pooled(2, 4);
  pooled << a, b;
  for (int i = 0; i < 2; ++i) {
    EXPECT_NEAR(pooled.row(i).mean(), 0.0, 1e-15);
    EXPECT_NEAR(pooled.row(i).squaredNorm() / 4.0, 1.0, 1e-14);
  }
}

TEST(NormalizerTest, ApplyInvertRoundTrip) {
  Eigen::MatrixXd data = Eigen::MatrixXd::Random(4, 50);
  data.row(0) = data.row(0) * 1e4 + Eigen::RowVectorXd::Constant(50, 3e5);
  data.row(3) *= 1e-6;
  const Normalizer normalizer = Normalizer::FitZScore({&data});
  Eigen::MatrixXd m = data;
  normalizer.Apply(&m);
  EXPECT_GT((m - data).norm(), 1.0);
  normalizer.Invert(&m);
  for (int i = 0; i < 4; ++i) {
    EXPECT_LE((m.row(i) - data.row(i)).cwiseAbs().maxCoeff(),
              1e-12 * data.row(i).cwiseAbs().maxCoeff())
        << "channel " << i;
  }
}

TEST(NormalizerTest, ConstantChannelGetsScaleOne) {
  Eigen::MatrixXd data(3, 5);
  data.row(0).setConstant(0.1);  // Its mean is not exactly 0.1.
  data.row(1).setZero();
  data.row(2) << 1, 2, 3, 4, 5;
  const Normalizer normalizer = Normalizer::FitZScore({&data});
  EXPECT_EQ(normalizer.scale(0), 1.0);
  EXPECT_EQ(normalizer.scale(1), 1.0);
  EXPECT_DOUBLE_EQ(normalizer.scale(2), std::sqrt(2.0));
  normalizer.Apply(&data);
  EXPECT_TRUE(data.allFinite());
  EXPECT_NEAR(data.row(0).cwiseAbs().maxCoeff(), 0.0, 1e-15);
}

TEST(NormalizerTest, FitMinMaxMapsTheTrainingRangeToUnitInterval) {
  Eigen::MatrixXd a(3, 2), b(3, 3);
  a << -2, 5, 7, 7, 1e6, 1e6 + 4;
  b << 0, 1, 3, 7, 7, 7, 1e6 + 1, 1e6 + 2, 1e6 + 3;
  const Normalizer normalizer = Normalizer::FitMinMax({&a, &b});
  ASSERT_EQ(normalizer.size(), 3);
  EXPECT_TRUE(normalizer.Validate().ok());
  EXPECT_EQ(normalizer.mean(0), -2.0);
  EXPECT_EQ(normalizer.scale(0), 7.0);
  EXPECT_EQ(normalizer.scale(1), 1.0) << "a constant channel keeps scale 1";
  EXPECT_EQ(normalizer.scale(2), 4.0);
  Eigen::MatrixXd pooled(3, 5);
  pooled << a, b;
  normalizer.Apply(&pooled);
  for (int i : {0, 2}) {
    EXPECT_DOUBLE_EQ(pooled.row(i).minCoeff(), 0.0);
    EXPECT_DOUBLE_EQ(pooled.row(i).maxCoeff(), 1.0);
  }
  EXPECT_EQ(pooled.row(1).cwiseAbs().maxCoeff(), 0.0);
  normalizer.Invert(&pooled);
  Eigen::MatrixXd original(3, 5);
  original << a, b;
  EXPECT_LE((pooled - original).cwiseAbs().maxCoeff(), 1e-9);
  const Eigen::MatrixXd empty(3, 0);
  EXPECT_EQ(Normalizer::FitMinMax({&empty}).scale, Eigen::VectorXd::Ones(3));
}

TEST(NormalizerTest, NoSamplesGivesIdentity) {
  const Eigen::MatrixXd empty(3, 0);
  const Normalizer normalizer = Normalizer::FitZScore({&empty});
  EXPECT_EQ(normalizer.mean, Eigen::VectorXd::Zero(3));
  EXPECT_EQ(normalizer.scale, Eigen::VectorXd::Ones(3));
  EXPECT_EQ(Normalizer::FitZScore({}).size(), 0);
}

TEST(NormalizerTest, ValidateRejectsBrokenNormalizers) {
  Normalizer normalizer = Normalizer::Identity(2);
  normalizer.scale(1) = 0.0;
  EXPECT_THAT(std::string(normalizer.Validate().message()),
              HasSubstr("channel 1: scale 0"));
  normalizer = Normalizer::Identity(2);
  normalizer.mean(0) = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THAT(std::string(normalizer.Validate().message()),
              HasSubstr("channel 0: mean nan"));
  normalizer = Normalizer::Identity(2);
  normalizer.scale.resize(3);
  normalizer.scale.setOnes();
  EXPECT_THAT(std::string(normalizer.Validate().message()),
              HasSubstr("2 means but 3 scales"));
}

}  // namespace
}  // namespace sparrow::core::data
