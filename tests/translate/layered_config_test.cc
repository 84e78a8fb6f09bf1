#include "translate/layered_config.h"

#include <string>
#include <utility>

#include "gtest/gtest.h"
#include "tests/translate/testing/spec_fixture.h"

namespace sparrow::translate {
namespace {

TEST(LayeredConfigTest, InitNamesTheirLaws) {
  for (const auto& [name, law] : {std::pair{"", core::InitLaw::kGlorot},
                                  {"glorot", core::InitLaw::kGlorot},
                                  {"he", core::InitLaw::kHe},
                                  {"torch", core::InitLaw::kTorch},
                                  {"orthogonal", core::InitLaw::kOrthogonal}}) {
    const auto got = ToInitLaw(name);
    ASSERT_TRUE(got.ok()) << name << ": " << got.status();
    EXPECT_EQ(*got, law) << name;
  }
}

TEST(LayeredConfigTest, AnUnknownInitListsTheLaws) {
  ExpectError(ToInitLaw("Orthogonal").status(),
              "model.init is \"Orthogonal\"; use \"glorot\", \"he\", \"torch\" "
              "or \"orthogonal\"");
}

}  // namespace
}  // namespace sparrow::translate
