// UTF-8 checks for what crosses the API, and ids shortened for messages.
#include "translate/text.h"

#include <string>

#include "gtest/gtest.h"
#include "sparrow/v1/jobs.pb.h"

namespace sparrow::translate {
namespace {

TEST(TextTest, IsValidUtf8AcceptsUtf8AndRejectsEveryMalformedKind) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("u,y"));
  EXPECT_TRUE(IsValidUtf8("Durchfluss \xC3\xBC \xE2\x82\xAC \xF0\x9F\x98\x80"));
  EXPECT_FALSE(IsValidUtf8("u\xff\xfe"));         // not UTF-8 at all
  EXPECT_FALSE(IsValidUtf8("\xC3"));              // truncated
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));          // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xE0\x80\xAF"));      // overlong, 3 bytes
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));      // surrogate U+D800
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\x80"));              // lone continuation
}

TEST(TextTest, CheckUtf8NamesWhatAndEscapesTheBytes) {
  EXPECT_TRUE(CheckUtf8("y", "column 2").ok());
  const absl::Status s = CheckUtf8("u\xff\xfe", "column 1 of the CSV header");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("column 1 of the CSV header"), std::string::npos)
      << s;
  EXPECT_NE(s.message().find("u\\xff\\xfe"), std::string::npos) << s;
  EXPECT_TRUE(IsValidUtf8(s.message()));
}

TEST(TextTest, CheckUtf8FieldsNamesTheFieldPath) {
  v1::SubmitJobRequest request;
  request.set_request_id("r-1");
  request.mutable_spec()->mutable_data()->add_inputs("u");
  EXPECT_TRUE(CheckUtf8Fields(request, "request").ok());
  request.mutable_spec()->mutable_data()->add_inputs("bad\xff");
  const absl::Status s = CheckUtf8Fields(request, "request");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("request.spec.data.inputs[1]"), std::string::npos)
      << s;
}

TEST(TextTest, ToValidUtf8ReplacesOnlyTheBadBytes) {
  EXPECT_EQ(ToValidUtf8("ok \xC3\xBC"), "ok \xC3\xBC");
  EXPECT_EQ(ToValidUtf8("u\xff.csv"), "u\xEF\xBF\xBD.csv");
}

TEST(TextTest, ForMessageKeepsShortIdsAndCutsLongOnes) {
  EXPECT_EQ(ForMessage("job-1234"), "job-1234");
  const std::string id(8192, 'a');
  const std::string shown = ForMessage(id);
  EXPECT_LT(shown.size(), 100u);
  EXPECT_EQ(shown.substr(0, 64), std::string(64, 'a'));
  EXPECT_NE(shown.find("\xE2\x80\xA6 (8128 more bytes)"), std::string::npos)
      << shown;
  // Never cuts a multi-byte character in half.
  const std::string wide = std::string(63, 'a') + "\xC3\xBC\xC3\xBC";
  EXPECT_TRUE(IsValidUtf8(ForMessage(wide)));
  EXPECT_EQ(ForMessage(wide).substr(0, 65), std::string(63, 'a') + "\xC3\xBC");
}

}  // namespace
}  // namespace sparrow::translate
