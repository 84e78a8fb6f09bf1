// Login sessions: random ids, bounded count, fixed lifetime.
#include "server/http/sessions.h"

#include <set>
#include <string>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace sparrow::server::http {
namespace {

TEST(SessionStoreTest, FindsASessionByItsIdOnly) {
  SessionStore sessions(10, absl::Hours(1));
  Session s = sessions.Create("alice");
  EXPECT_EQ(s.id.size(), 64u);
  EXPECT_NE(s.id, s.csrf_token);
  auto found = sessions.Find(s.id);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->tenant, "alice");
  EXPECT_EQ(found->csrf_token, s.csrf_token);
  EXPECT_FALSE(sessions.Find("").has_value());
  EXPECT_FALSE(sessions.Find(s.csrf_token).has_value());
}

TEST(SessionStoreTest, TheOldestSessionEndsBeyondTheLimit) {
  SessionStore sessions(2, absl::Hours(1));
  Session a = sessions.Create("a"), b = sessions.Create("b");
  Session c = sessions.Create("c");
  EXPECT_FALSE(sessions.Find(a.id).has_value());
  EXPECT_TRUE(sessions.Find(b.id).has_value());
  EXPECT_TRUE(sessions.Find(c.id).has_value());
}

TEST(SessionStoreTest, ASessionEndsAfterItsLifetime) {
  SessionStore sessions(10, absl::Milliseconds(30));
  Session s = sessions.Create("a");
  EXPECT_TRUE(sessions.Find(s.id).has_value());
  absl::SleepFor(absl::Milliseconds(60));
  EXPECT_FALSE(sessions.Find(s.id).has_value());
}

TEST(SessionStoreTest, TokensDoNotRepeat) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) EXPECT_TRUE(seen.insert(RandomToken()).second);
}

}  // namespace
}  // namespace sparrow::server::http
