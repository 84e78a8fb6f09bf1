// The strict checks a job spec's JSON passes before protobuf's lenient parser
// reads it: syntax, unknown fields, oneofs, JSON types and enum names.
#include "translate/json_shape.h"

#include <string>

#include "gtest/gtest.h"
#include "sparrow/v1/spec.pb.h"
#include "tests/translate/testing/spec_fixture.h"

namespace sparrow::translate {
namespace {

absl::Status Check(const std::string& json) {
  return CheckJsonShape(json, *v1::JobSpec::descriptor(), "the job spec");
}

constexpr char kSpec[] =
    R"({"data": {"csv_path": "d.csv", "inputs": ["u"], "outputs": ["y"]},
        "model": {"state_space_rnn": {"nx": 2, "activation": "ACTIVATION_TANH"}},
        "optimizer": {"adam": {"learning_rate": 0.01}},
        "stopping": {"max_epochs": 3}, "seed": "7"})";

TEST(JsonShapeTest, AcceptsAValidSpecWithProtobufJsonForms) {
  EXPECT_TRUE(Check(kSpec).ok()) << Check(kSpec);
  // camelCase names, null for "not set", enums by number, 64-bit as numbers.
  EXPECT_TRUE(Check(R"({"stopping": {"maxEpochs": 3}, "name": null,
                       "normalization": 1, "seed": 7})")
                  .ok());
}

TEST(JsonShapeTest, RefusesTrailingCommasWithTheirPosition) {
  ExpectError(Check(Replace(kSpec, R"(["y"]})", R"(["y"],})")),
              "not valid JSON: parse error at line 1, column");
}

TEST(JsonShapeTest, SuggestsTheClosestFieldOrListsThem) {
  ExpectError(Check(Replace(kSpec, "\"stopping\"", "\"stoping\"")),
              "stoping: unknown field 'stoping'; did you mean 'stopping'?");
  ExpectError(Check(Replace(kSpec, "\"nx\"", "\"nz\"")),
              "model.state_space_rnn.nz: unknown field 'nz'; did you mean "
              "'nx'?");
  ExpectError(Check(Replace(kSpec, "\"seed\"", "\"random\"")),
              "the fields of sparrow.v1.JobSpec are name, data,");
}

TEST(JsonShapeTest, RefusesWrongJsonTypesByPath) {
  ExpectError(Check(Replace(kSpec, R"(["u"])", R"("u")")),
              "data.inputs: expected a list [...], got the string \"u\"; "
              "write [\"u\"]");
  ExpectError(Check(Replace(kSpec, "\"nx\": 2", "\"nx\": \"2\"")),
              "nx: expected a number, got the string \"2\"; write it without "
              "quotes");
  ExpectError(Check(Replace(kSpec, "{\"max_epochs\": 3}", "3")),
              "stopping: expected an object {...}");
  ExpectError(Check(Replace(kSpec, R"("d.csv")", "5")),
              "data.csv_path: expected a string, got the number 5");
}

// JSON parsers keep one of two values of a name silently; a spec is refused.
TEST(JsonShapeTest, RefusesAFieldGivenTwiceInOneObject) {
  ExpectError(
      Check(Replace(kSpec, R"("seed": "7")", R"("seed": 1, "seed": 2)")),
      "the job spec: seed: the field is given twice in the same object");
  ExpectError(
      Check(Replace(kSpec, R"({"learning_rate": 0.01})",
                    R"({"learning_rate": 0.01, "learning_rate": 0.1})")),
      "optimizer.adam.learning_rate: the field is given twice");
  // The same name in two objects is two fields.
  EXPECT_TRUE(Check(R"({"optimizer": {"adam": {"learning_rate": 0.01}},
                       "stages": [{"optimizer": {"adam": {"learning_rate": 1}}},
                                  {"optimizer": {"adam": {"learning_rate": 2}}}]})")
                  .ok());
}

TEST(JsonShapeTest, NamesTheValidEnumValues) {
  ExpectError(Check(Replace(kSpec, "\"ACTIVATION_TANH\"", "\"tanh\"")),
              "\"tanh\" is not a valid Activation; use \"ACTIVATION_TANH\" "
              "(valid: ACTIVATION_UNSPECIFIED,");
  ExpectError(
      Check(Replace(kSpec, "\"ACTIVATION_TANH\"", "\"ACTIVATON_RELU\"")),
      "use \"ACTIVATION_RELU\"");
}

TEST(JsonShapeTest, RefusesANumberBeyondADoubleWithoutCrashing) {
  ExpectError(
      Check(Replace(kSpec, "\"max_epochs\": 3", "\"max_epochs\": 1e400")),
      "not valid JSON:");
}

TEST(JsonShapeTest, AcceptsTheNonFiniteSpellingsOfTheJsonMapping) {
  // Accepted here; the spec's value checks then say what is wrong with them.
  EXPECT_TRUE(Check(Replace(kSpec, "0.01", "\"NaN\"")).ok());
  ExpectError(Check(Replace(kSpec, "0.01", "\"0.01\"")),
              "learning_rate: expected a number, got the string \"0.01\"");
}

TEST(JsonShapeTest, ShortEnumNamesMapToTheirOwnValue) {
  // ACTIVATION_RELU, not ACTIVATION_LEAKY_RELU, which also ends in _RELU.
  ExpectError(Check(Replace(kSpec, "\"ACTIVATION_TANH\"", "\"relu\"")),
              "use \"ACTIVATION_RELU\"");
}

TEST(JsonShapeTest, RefusesAFieldGivenInBothSpellings) {
  ExpectError(Check(Replace(kSpec, "\"max_epochs\": 3",
                            "\"max_epochs\": 3, \"maxEpochs\": 4")),
              "stopping.max_epochs: given twice");
}

TEST(JsonShapeTest, RefusesTwoAlternativesOfAOneof) {
  ExpectError(
      Check(Replace(kSpec, R"({"adam": {"learning_rate": 0.01}})",
                    R"({"adam": {}, "nailm": {}})")),
      "optimizer: sets both 'adam' and 'nailm', which are alternatives");
}

}  // namespace
}  // namespace sparrow::translate
