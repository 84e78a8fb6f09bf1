#include "core/util/denormals.h"

#include <limits>

#include "gtest/gtest.h"

namespace sparrow::core {
namespace {

// volatile: the products are computed at run time, under the current mode.
double Product(volatile double a, volatile double b) { return a * b; }

TEST(DenormalsTest, SubnormalResultsAreZeroInScopeOnly) {
  const double tiny = std::numeric_limits<double>::min();  // 2.2e-308
  ASSERT_GT(Product(tiny, 0.5), 0.0);  // subnormal, as IEEE 754 says
  {
    const ScopedFlushDenormals flush;
#if defined(__SSE2__)
    EXPECT_EQ(Product(tiny, 0.5), 0.0);
    EXPECT_EQ(Product(tiny, 2.0), 2.0 * tiny);  // normal results are exact
#endif
  }
  EXPECT_GT(Product(tiny, 0.5), 0.0);  // the previous mode is back
}

}  // namespace
}  // namespace sparrow::core
