#include "translate/json.h"

#include <string>

#include "google/protobuf/unknown_field_set.h"
#include "gtest/gtest.h"
#include "tests/translate/testing/spec_fixture.h"

namespace sparrow::translate {
namespace {

TEST(JsonTest, UnknownFieldIsAnError) {
  ExpectError(Load(Replace(kRnnSpec, "\"seed\": 7", "\"seed\": 7, \"sede\": 1"),
                   Csv(200)),
              "sede");
}

// A spec saved with a UTF-8 byte-order mark (Windows editors) reads as
// without one.
TEST(JsonTest, AByteOrderMarkIsSkipped) {
  auto spec = ParseJobSpecJson(std::string("\xEF\xBB\xBF") + kRnnSpec);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->seed(), 7u);
}

TEST(JsonTest, HasJsonSuffixNeedsANameBeforeTheSuffix) {
  EXPECT_TRUE(HasJsonSuffix("model.json"));
  EXPECT_TRUE(HasJsonSuffix("dir/a.json"));
  EXPECT_FALSE(HasJsonSuffix(".json"));
  EXPECT_FALSE(HasJsonSuffix("model.pb"));
  EXPECT_FALSE(HasJsonSuffix("model.json.pb"));
  EXPECT_FALSE(HasJsonSuffix("json"));
}

TEST(JsonTest, RejectUnknownFieldsNamesThePathAndNumber) {
  v1::JobSpec spec;
  spec.mutable_data()->add_inputs("u");
  EXPECT_TRUE(RejectUnknownFields(spec, "spec").ok());
  spec.mutable_data()
      ->GetReflection()
      ->MutableUnknownFields(spec.mutable_data())
      ->AddVarint(999, 1);
  const absl::Status s = RejectUnknownFields(spec, "spec");
  ExpectError(s, "spec.data has a field number 999");
}

TEST(JsonTest, ToJsonUsesTheProtoFieldNames) {
  v1::JobSpec spec;
  spec.mutable_data()->set_trace_column("run");
  EXPECT_NE(ToJson(spec).find("\"trace_column\""), std::string::npos)
      << ToJson(spec);
}

}  // namespace
}  // namespace sparrow::translate
