// Edit distances and the "did you mean" choice behind the CLI's and the spec
// checks' suggestions.
#include "translate/suggest.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace sparrow::translate {
namespace {

TEST(SuggestTest, EditDistanceCountsEditsAndAdjacentSwapsIgnoringCase) {
  EXPECT_EQ(EditDistance("", ""), 0);
  EXPECT_EQ(EditDistance("abc", ""), 3);
  EXPECT_EQ(EditDistance("stoping", "stopping"), 1);  // insertion
  EXPECT_EQ(EditDistance("trian", "train"), 1);       // adjacent swap
  EXPECT_EQ(EditDistance("Seeds", "seeds"), 0);       // case
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3);
  EXPECT_EQ(EditDistance("ca", "abc"), 3);  // OSA, not full Damerau
}

TEST(SuggestTest, ClosestNameOnlySuggestsLikelyTypos) {
  const std::vector<std::string> fields = {"data", "split", "stopping", "seed"};
  EXPECT_EQ(ClosestName("stoping", fields), "stopping");
  EXPECT_EQ(ClosestName("sede", fields), "seed");
  EXPECT_EQ(ClosestName("optimiser", fields), "");  // nothing close
  EXPECT_EQ(ClosestName("xyz", fields), "");
  EXPECT_EQ(ClosestName("--seed", {"--seeds", "--threads"}), "--seeds");
  EXPECT_EQ(ClosestName(std::string(100000, 's'), fields), "");  // too long
}

}  // namespace
}  // namespace sparrow::translate
