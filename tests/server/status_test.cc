// server::ToGrpcStatus: messages pass through, except for internal failures,
// whose details go to the log under a correlation id the client sees.
#include "server/status.h"

#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "server/internal_error.h"

namespace sparrow::server {
namespace {

TEST(StatusTest, ClientErrorsKeepTheirCodeAndMessage) {
  const grpc::Status s =
      ToGrpcStatus(absl::InvalidArgumentError("spec.seed is -1"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "spec.seed is -1");
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
}

TEST(StatusTest, InternalFailuresShowOnlyAnErrorId) {
  for (const absl::Status& internal :
       {absl::InternalError("store /srv/sparrow.db: SELECT x: boom"),
        absl::DataLossError("store /srv/sparrow.db: corrupt"),
        absl::UnknownError("/srv/secret")}) {
    const grpc::Status s = ToGrpcStatus(internal);
    EXPECT_FALSE(s.ok());
    EXPECT_FALSE(absl::StrContains(s.error_message(), "/srv"))
        << s.error_message();
    EXPECT_TRUE(absl::StrContains(s.error_message(), "(error id E-"))
        << s.error_message();
  }
  // Each failure gets its own id.
  EXPECT_NE(ToGrpcStatus(absl::InternalError("a")).error_message(),
            ToGrpcStatus(absl::InternalError("a")).error_message());
}

TEST(StatusTest, AClientMessageReplacesTheDetailsWhateverTheCode) {
  const grpc::Status s = ToGrpcStatus(WithClientMessage(
      absl::UnavailableError("store /srv/sparrow.db: INSERT ...: readonly"),
      "the server cannot write to its store; retry later"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_TRUE(absl::StartsWith(
      s.error_message(), "the server cannot write to its store; retry later"))
      << s.error_message();
  EXPECT_FALSE(absl::StrContains(s.error_message(), "INSERT"));
  EXPECT_TRUE(absl::StrContains(s.error_message(), "(error id E-"));
}

}  // namespace
}  // namespace sparrow::server
