#include "server/auth.h"

#include "gtest/gtest.h"

namespace sparrow::server {
namespace {

TEST(AuthenticatorTest, ParsesTokensSkippingCommentsAndBlankLines) {
  auto auth = Authenticator::FromText(
      "# tokens\n\nsecret-a  alice\n\tsecret-b\tbob  \n", "tokens.txt");
  ASSERT_TRUE(auth.ok()) << auth.status();
  EXPECT_TRUE(auth->enabled());
}

TEST(AuthenticatorTest, ErrorsNameTheLine) {
  auto auth = Authenticator::FromText("a alice\nb\n", "tokens.txt");
  ASSERT_FALSE(auth.ok());
  EXPECT_EQ(auth.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(auth.status().message().find("tokens.txt:2"), std::string::npos);

  auth = Authenticator::FromText("a alice\na bob\n", "tokens.txt");
  ASSERT_FALSE(auth.ok());
  EXPECT_NE(auth.status().message().find("twice"), std::string::npos);

  auth = Authenticator::FromText("# nothing\n", "tokens.txt");
  ASSERT_FALSE(auth.ok());
  EXPECT_NE(auth.status().message().find("no tokens"), std::string::npos);
}

TEST(AuthenticatorTest, MissingFileIsNamed) {
  auto auth = Authenticator::FromFile("/nonexistent/tokens.txt");
  ASSERT_FALSE(auth.ok());
  EXPECT_NE(auth.status().message().find("/nonexistent/tokens.txt"),
            std::string::npos);
}

TEST(AuthenticatorTest, OpenServerHasOneTenant) {
  Authenticator open;
  EXPECT_FALSE(open.enabled());
}

}  // namespace
}  // namespace sparrow::server
