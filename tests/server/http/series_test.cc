// DownsampleMinMax: every sample up to the limit, else each bucket's extremes
// in order, so that a spike survives any number of points.
#include "server/http/series.h"

#include <cmath>
#include <limits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sparrow::server::http {
namespace {

using ::testing::ElementsAre;

TEST(DownsampleMinMaxTest, KeepsEverySampleUpToTheLimit) {
  const std::vector<double> v = {3, 1, 2};
  EXPECT_THAT(DownsampleMinMax(v, 3), ElementsAre(0, 1, 2));
  EXPECT_THAT(DownsampleMinMax(v, 2000), ElementsAre(0, 1, 2));
  EXPECT_TRUE(DownsampleMinMax({}, 10).empty());
}

TEST(DownsampleMinMaxTest, KeepsEachBucketsExtremesInOrder) {
  // Two buckets of four: {5, 1, 9, 4} and {2, 8, 0, 3}.
  const std::vector<double> v = {5, 1, 9, 4, 2, 8, 0, 3};
  EXPECT_THAT(DownsampleMinMax(v, 4), ElementsAre(1, 2, 5, 6));
}

TEST(DownsampleMinMaxTest, NeverLosesASpike) {
  std::vector<double> v(1000000, 1.0);
  v[777777] = 1e6;
  v[123] = -5;
  const std::vector<size_t> kept = DownsampleMinMax(v, 2000);
  EXPECT_LE(kept.size(), 2000u);
  EXPECT_TRUE(std::is_sorted(kept.begin(), kept.end()));
  EXPECT_NE(std::find(kept.begin(), kept.end(), 777777u), kept.end());
  EXPECT_NE(std::find(kept.begin(), kept.end(), 123u), kept.end());
}

TEST(DownsampleMinMaxTest, SkipsNaNsWhereANumberIsThere) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> v = {nan, 2, 7, nan, nan, nan};
  // Buckets {nan, 2, 7} and {nan, nan, nan}: the second keeps one index.
  EXPECT_THAT(DownsampleMinMax(v, 2), ElementsAre(1, 2));
  const std::vector<size_t> kept = DownsampleMinMax(v, 4);
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_THAT(kept, ElementsAre(1, 2, ::testing::Ge(3)));
}

}  // namespace
}  // namespace sparrow::server::http
