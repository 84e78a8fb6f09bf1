#include "core/data/csv.h"

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/shared_data.h"

namespace sparrow::core::data {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Message(const absl::Status& status) {
  return std::string(status.message());
}

// The error of parsing `buffer` (all columns); fails the test if it parses.
std::string ParseError(const std::string& buffer,
                       const std::vector<std::string>& columns = {}) {
  absl::StatusOr<CsvTable> table = ParseCsv(buffer, columns);
  EXPECT_FALSE(table.ok()) << "parsed unexpectedly: " << buffer;
  if (table.ok()) return "";
  EXPECT_EQ(table.status().code(), absl::StatusCode::kInvalidArgument);
  return Message(table.status());
}

TEST(ParseCsvTest, ParsesLfBufferColumnByRow) {
  absl::StatusOr<CsvTable> table = ParseCsv("a,b,c\n1,2,3\n4,5,6\n");
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(table->header, ElementsAre("a", "b", "c"));
  EXPECT_EQ(table->num_columns(), 3);
  EXPECT_EQ(table->num_rows(), 2);
  EXPECT_EQ(table->values(0, 0), 1.0);
  EXPECT_EQ(table->values(2, 0), 3.0);
  EXPECT_EQ(table->values(0, 1), 4.0);
  EXPECT_EQ(table->values(2, 1), 6.0);
}

TEST(ParseCsvTest, ParsesCrlfAndMissingFinalNewline) {
  absl::StatusOr<CsvTable> table = ParseCsv("a,b\r\n1,2\r\n3,4");
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(table->header, ElementsAre("a", "b"));
  ASSERT_EQ(table->num_rows(), 2);
  EXPECT_EQ(table->values(1, 1), 4.0);
}

// The nonlinearbenchmark.org MATLAB export: quoted header, a trailing comma on
// every line, an empty last line.
TEST(ParseCsvTest, ParsesQuotedHeaderTrailingCommasAndTrailingBlankLine) {
  absl::StatusOr<CsvTable> table =
      ParseCsv("\"uEst\",\"yEst\",\n3.2567,5.205,\n3.2466,5.2154,\n\n");
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(table->header, ElementsAre("uEst", "yEst"));
  ASSERT_EQ(table->num_rows(), 2);
  EXPECT_EQ(table->values(0, 0), 3.2567);
  EXPECT_EQ(table->values(1, 1), 5.2154);
}

TEST(ParseCsvTest, ParsesTrailingCommaOnSomeLinesOnly) {
  absl::StatusOr<CsvTable> table = ParseCsv("a,b\n1,2,\n3,4\n");
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->num_rows(), 2);
}

TEST(ParseCsvTest, SkipsUtf8ByteOrderMark) {
  absl::StatusOr<CsvTable> table = ParseCsv("\xEF\xBB\xBFx,y\n1,2\n");
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(table->header, ElementsAre("x", "y"));
}

TEST(ParseCsvTest, TrimsWhitespaceAroundFieldsAndNames) {
  absl::StatusOr<CsvTable> table = ParseCsv(" a , \"b c\" \n  1.5 ,\t-2e3\t\n");
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(table->header, ElementsAre("a", "b c"));
  EXPECT_EQ(table->values(0, 0), 1.5);
  EXPECT_EQ(table->values(1, 0), -2000.0);
}

TEST(ParseCsvTest, ParsesNumberSpellings) {
  absl::StatusOr<CsvTable> table =
      ParseCsv("a,b,c,d,e,f\n+1,.5,5.,-0,1e-400,\"7\"\n");
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->values(0, 0), 1.0);
  EXPECT_EQ(table->values(1, 0), 0.5);
  EXPECT_EQ(table->values(2, 0), 5.0);
  EXPECT_EQ(table->values(3, 0), 0.0);
  EXPECT_EQ(table->values(4, 0), 0.0);  // Underflows to zero.
  EXPECT_EQ(table->values(5, 0), 7.0);
}

TEST(ParseCsvTest, ParsesShortestRoundTripDecimalsExactly) {
  absl::StatusOr<CsvTable> table =
      ParseCsv("u\n-0.11604953411733732\n7.725689349545643e-06\n");
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->values(0, 0), -0.11604953411733732);
  EXPECT_EQ(table->values(0, 1), 7.725689349545643e-06);
}

TEST(ParseCsvTest, UnescapesDoubledQuotesInNames) {
  absl::StatusOr<CsvTable> table =
      ParseCsv("\"say \"\"hi\"\"\",\"a,b\"\n1,2\n");
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(table->header, ElementsAre("say \"hi\"", "a,b"));
}

TEST(ParseCsvTest, RejectsEmptyBuffer) {
  EXPECT_THAT(ParseError(""), HasSubstr("empty"));
  EXPECT_THAT(ParseError(" \r\n\n"), HasSubstr("empty"));
  EXPECT_THAT(ParseError("\xEF\xBB\xBF"), HasSubstr("empty"));
}

TEST(ParseCsvTest, RejectsHeaderOnly) {
  EXPECT_THAT(ParseError("a,b\n"), HasSubstr("no data rows"));
  EXPECT_THAT(ParseError("\"a\",\"b\",\r\n\r\n"), HasSubstr("no data rows"));
}

TEST(ParseCsvTest, RejectsBlankFirstLine) {
  EXPECT_THAT(ParseError("\na,b\n1,2\n"), HasSubstr("line 1 is blank"));
}

TEST(ParseCsvTest, RejectsNonNumericValueNamingLineAndColumn) {
  EXPECT_THAT(ParseError("a,b\n1,2\n3,x7\n"),
              AllOf(HasSubstr("line 3"), HasSubstr("column 'b'"),
                    HasSubstr("'x7' is not a number")));
  EXPECT_THAT(ParseError("a,b\n1,2 3\n"),
              AllOf(HasSubstr("line 2"), HasSubstr("'2 3'")));
  EXPECT_THAT(ParseError("a\n0x10\n"), HasSubstr("'0x10' is not a number"));
  EXPECT_THAT(ParseError("a\n1e\n"), HasSubstr("'1e' is not a number"));
  EXPECT_THAT(ParseError("a\n+-1\n"), HasSubstr("'+-1' is not a number"));
}

TEST(ParseCsvTest, ShortensHugeBadValuesInMessages) {
  const std::string message = ParseError("a\n" + std::string(5000, 'z') + "\n");
  EXPECT_THAT(message, HasSubstr("5000 characters"));
  EXPECT_LT(message.size(), 300u);
}

TEST(ParseCsvTest, RejectsOutOfRangeValue) {
  EXPECT_THAT(ParseError("a,b\n1,1e400\n"),
              AllOf(HasSubstr("line 2"), HasSubstr("column 'b'"),
                    HasSubstr("'1e400'"), HasSubstr("range")));
}

struct BadValue {
  std::string text;
  std::string expected;  // Part of the error message.
};

class MissingValueTest : public ::testing::TestWithParam<BadValue> {};

TEST_P(MissingValueTest, RejectsNamingLineAndColumn) {
  const std::string message =
      ParseError("\"t\",\"pm2.5\",\n1,2,\n2," + GetParam().text + ",\n");
  EXPECT_THAT(message, AllOf(HasSubstr("line 3"), HasSubstr("column 'pm2.5'"),
                             HasSubstr(GetParam().expected)));
}

INSTANTIATE_TEST_SUITE_P(
    Spellings, MissingValueTest,
    ::testing::Values(BadValue{"NaN", "missing value 'NaN'"},
                      BadValue{"nan", "missing value 'nan'"},
                      BadValue{"-nan", "missing value '-nan'"},
                      BadValue{"NA", "missing value 'NA'"},
                      BadValue{"na", "missing value 'na'"},
                      BadValue{"N/A", "missing value 'N/A'"},
                      BadValue{"null", "missing value 'null'"},
                      BadValue{"?", "missing value '?'"},
                      BadValue{"", "missing value (empty field)"},
                      BadValue{"  ", "missing value (empty field)"},
                      BadValue{"\"\"", "missing value (empty field)"},
                      BadValue{"Inf", "non-finite value 'Inf'"},
                      BadValue{"-inf", "non-finite value '-inf'"},
                      BadValue{"+Inf", "non-finite value '+Inf'"},
                      BadValue{"infinity", "non-finite value 'infinity'"}));

TEST(ParseCsvTest, EmptyFieldIsAMissingValue) {
  EXPECT_THAT(ParseError("a,b,c\n1,,3\n"),
              AllOf(HasSubstr("line 2"), HasSubstr("column 'b'"),
                    HasSubstr("missing value (empty field)")));
}

TEST(ParseCsvTest, InfinityIsNonFinite) {
  EXPECT_THAT(ParseError("a\nInf\n"), HasSubstr("non-finite value 'Inf'"));
}

TEST(ParseCsvTest, RejectsShortRowWithExpectedAndActualCounts) {
  EXPECT_THAT(ParseError("a,b,c\n1,2,3\n4,5\n"),
              AllOf(HasSubstr("line 3"), HasSubstr("expected 3 fields"),
                    HasSubstr("got 2"), HasSubstr("column 'c'")));
}

TEST(ParseCsvTest, RejectsLongRowWithExpectedAndActualCounts) {
  EXPECT_THAT(ParseError("a,b\r\n1,2\r\n4,5,6\r\n"),
              AllOf(HasSubstr("line 3"), HasSubstr("expected 2 fields"),
                    HasSubstr("got 3"), HasSubstr("column 'b'")));
  // A trailing comma drops one empty field, not more.
  EXPECT_THAT(ParseError("a,b\n1,2,,\n"),
              AllOf(HasSubstr("line 2"), HasSubstr("got 4")));
}

TEST(ParseCsvTest, RejectsDuplicateHeaderNames) {
  EXPECT_THAT(ParseError("\"u\",\"y\",\"u\",\n1,2,3,\n"),
              AllOf(HasSubstr("line 1"), HasSubstr("duplicate column name 'u'"),
                    HasSubstr("0 and 2")));
}

TEST(ParseCsvTest, RejectsEmptyHeaderName) {
  EXPECT_THAT(ParseError("a,,c\n1,2,3\n"),
              AllOf(HasSubstr("line 1"), HasSubstr("column index 1 is empty")));
}

TEST(ParseCsvTest, RejectsBlankLineBeforeData) {
  EXPECT_THAT(ParseError("a\n1\n\n2\n"),
              AllOf(HasSubstr("line 3 is blank"), HasSubstr("line 4")));
}

TEST(ParseCsvTest, RejectsUnterminatedQuote) {
  EXPECT_THAT(ParseError("\"a,b\n1,2\n"),
              AllOf(HasSubstr("line 1"), HasSubstr("no closing quote")));
  EXPECT_THAT(ParseError("a,b\n1,\"2\n"),
              AllOf(HasSubstr("line 2"), HasSubstr("field 2")));
}

TEST(ParseCsvTest, RejectsTextAfterClosingQuote) {
  EXPECT_THAT(ParseError("\"a\"x,b\n1,2\n"),
              AllOf(HasSubstr("line 1"), HasSubstr("after the closing quote")));
}

TEST(ParseCsvTest, RejectsCarriageReturnOnlyLineEnds) {
  EXPECT_THAT(ParseError("a,b\r1,2\r3,4\r"), HasSubstr("CR-only"));
}

TEST(ParseCsvSelectedTest, ConvertsOnlySelectedColumnsInSelectorOrder) {
  const std::string buffer =
      "instant,dteday,temp,cnt\r\n"
      "1,2011-01-01,0.24,16\r\n"
      "2,2011-01-01,0.22,40\r\n";
  absl::StatusOr<CsvTable> table = ParseCsv(buffer, {"cnt", "2"});
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(table->header, ElementsAre("cnt", "temp"));
  ASSERT_EQ(table->num_columns(), 2);
  ASSERT_EQ(table->num_rows(), 2);
  EXPECT_EQ(table->values(0, 1), 40.0);
  EXPECT_EQ(table->values(1, 1), 0.22);
  // Selecting the date column reports it.
  EXPECT_THAT(ParseError(buffer, {"cnt", "dteday"}),
              AllOf(HasSubstr("line 2"), HasSubstr("column 'dteday'"),
                    HasSubstr("'2011-01-01' is not a number")));
  // All columns: the date column fails too.
  EXPECT_THAT(ParseError(buffer), HasSubstr("column 'dteday'"));
}

TEST(ParseCsvSelectedTest, ColumnSelectedTwiceAppearsTwice) {
  absl::StatusOr<CsvTable> table = ParseCsv("a,b\n1,2\n", {"b", "b"});
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(table->header, ElementsAre("b", "b"));
  EXPECT_EQ(table->values(1, 0), 2.0);
}

TEST(ParseCsvSelectedTest, StillRejectsRaggedRowsInUnselectedColumns) {
  EXPECT_THAT(ParseError("a,b,c\n1,2,3\n1,2\n", {"a"}),
              AllOf(HasSubstr("line 3"), HasSubstr("expected 3 fields")));
}

TEST(ParseCsvSelectedTest, IgnoresMissingValuesInUnselectedColumns) {
  // The Cascaded Tanks file: Ts is given on the first data row only.
  absl::StatusOr<CsvTable> table =
      ParseCsv("\"uEst\",\"Ts\",\n1,4,\n2,,\n\n", {"uEst"});
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->num_rows(), 2);
  EXPECT_THAT(ParseError("\"uEst\",\"Ts\",\n1,4,\n2,,\n\n"),
              AllOf(HasSubstr("line 3"), HasSubstr("column 'Ts'")));
}

TEST(ParseCsvSelectedTest, RejectsUnknownSelector) {
  EXPECT_THAT(ParseError("a,b\n1,2\n", {"c"}),
              AllOf(HasSubstr("unknown column 'c'"), HasSubstr("'a', 'b'")));
}

TEST(ResolveColumnsTest, ResolvesNamesThenIndices) {
  const std::vector<std::string> header = {"uEst", "uVal", "yEst", "1"};
  absl::StatusOr<std::vector<int>> cols =
      ResolveColumns(header, {"yEst", "0", "1", "002"});
  ASSERT_TRUE(cols.ok()) << cols.status();
  // "1" is a column name, so it wins over index 1.
  EXPECT_THAT(*cols, ElementsAre(2, 0, 3, 2));
}

TEST(ResolveColumnsTest, RejectsUnknownNameListingColumns) {
  absl::StatusOr<std::vector<int>> cols =
      ResolveColumns({"uEst", "yEst"}, {"uEst", "yest"});
  ASSERT_FALSE(cols.ok());
  EXPECT_EQ(cols.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(cols.status()), AllOf(HasSubstr("unknown column 'yest'"),
                                            HasSubstr("'uEst', 'yEst'")));
}

TEST(ResolveColumnsTest, RejectsIndexOutOfRange) {
  for (const std::string selector : {"2", "99999999999999999999999"}) {
    absl::StatusOr<std::vector<int>> cols =
        ResolveColumns({"u", "y"}, {selector});
    ASSERT_FALSE(cols.ok());
    EXPECT_THAT(Message(cols.status()),
                AllOf(HasSubstr("column index " + selector),
                      HasSubstr("2 columns"), HasSubstr("'u', 'y'")));
  }
}

TEST(ResolveColumnsTest, RejectsEmptyAndSignedSelectors) {
  EXPECT_FALSE(ResolveColumns({"u"}, {""}).ok());
  EXPECT_FALSE(ResolveColumns({"u"}, {"-1"}).ok());
}

TEST(ResolveColumnsTest, ShortensListOfManyColumns) {
  std::vector<std::string> header;
  for (int i = 0; i < 784; ++i) header.push_back("pixel" + std::to_string(i));
  absl::StatusOr<std::vector<int>> cols = ResolveColumns(header, {"label"});
  ASSERT_FALSE(cols.ok());
  EXPECT_THAT(Message(cols.status()), HasSubstr("744 more"));
}

TEST(ParseCsvTest, ParsesLargeBuffer) {
  std::string buffer = "u,y\n";
  constexpr int kRows = 100000;
  for (int i = 0; i < kRows; ++i) {
    buffer += std::to_string(i) + "," + std::to_string(0.5 * i) + "\n";
  }
  absl::StatusOr<CsvTable> table = ParseCsv(buffer);
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_EQ(table->num_rows(), kRows);
  EXPECT_EQ(table->values(0, kRows - 1), kRows - 1);
  EXPECT_EQ(table->values(1, kRows - 1), 0.5 * (kRows - 1));
}

// Random buffers over the CSV alphabet must give a table or an error, never a
// crash, and a table only with finite values.
TEST(ParseCsvTest, NeverCrashesOnRandomInput) {
  const std::string alphabet = "01.,,\"\"\r\n\n eE+-aNI\t\xEF\xBB\xBF";
  std::mt19937 rng(42);
  std::uniform_int_distribution<size_t> pick(0, alphabet.size() - 1);
  std::uniform_int_distribution<int> length(0, 60);
  int parsed = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    std::string buffer;
    const int n = length(rng);
    for (int i = 0; i < n; ++i) buffer.push_back(alphabet[pick(rng)]);
    absl::StatusOr<CsvTable> table =
        ParseCsv(buffer, trial % 2 == 0 ? std::vector<std::string>{}
                                        : std::vector<std::string>{"0"});
    if (table.ok()) {
      ++parsed;
      EXPECT_TRUE(table->values.allFinite());
      EXPECT_EQ(static_cast<int>(table->header.size()), table->num_columns());
      EXPECT_GT(table->num_rows(), 0);
    } else {
      EXPECT_EQ(table.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_FALSE(table.status().message().empty());
    }
  }
  EXPECT_GT(parsed, 0);
}

// --- Categorical columns and missing values (CsvOptions). ---

absl::StatusOr<CsvTable> ParseWith(const std::string& buffer,
                                   std::vector<std::string> columns,
                                   std::vector<std::string> categorical,
                                   bool keep_missing = false) {
  CsvOptions options;
  options.columns = std::move(columns);
  options.categorical = std::move(categorical);
  options.keep_missing = keep_missing;
  return ParseCsv(buffer, options);
}

TEST(CategoricalTest, OneHotEncodesSortedLevelsNamedColumnEqualsLevel) {
  absl::StatusOr<CsvTable> table = ParseWith(
      "a,color,y\n1,red,5\n2,green,6\n3,blue,7\n4,red,8\n", {}, {"color"});
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(table->header,
              ElementsAre("a", "color=blue", "color=green", "color=red", "y"));
  ASSERT_EQ(table->columns.size(), 3u);
  EXPECT_EQ(table->columns[0].name, "a");
  EXPECT_FALSE(table->columns[0].categorical);
  EXPECT_EQ(table->columns[0].first, 0);
  EXPECT_EQ(table->columns[0].width(), 1);
  EXPECT_TRUE(table->columns[1].categorical);
  EXPECT_EQ(table->columns[1].first, 1);
  EXPECT_THAT(table->columns[1].levels, ElementsAre("blue", "green", "red"));
  EXPECT_EQ(table->columns[1].width(), 3);
  EXPECT_EQ(table->columns[2].first, 4);
  Eigen::MatrixXd expected(5, 4);
  expected << 1, 2, 3, 4,  //
      0, 0, 1, 0,          // blue
      0, 1, 0, 0,          // green
      1, 0, 0, 1,          // red
      5, 6, 7, 8;
  EXPECT_EQ(table->values, expected);
}

TEST(CategoricalTest, NumericLevelsSortNumerically) {
  absl::StatusOr<CsvTable> table =
      ParseWith("hr\n10\n2\n0\n23\n2\n", {}, {"hr"});
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(table->columns[0].levels, ElementsAre("0", "2", "10", "23"));
  EXPECT_THAT(table->header, ElementsAre("hr=0", "hr=2", "hr=10", "hr=23"));
  EXPECT_EQ(table->values.colwise().sum(), Eigen::RowVectorXd::Ones(5));
  EXPECT_EQ(table->values(2, 0), 1.0);  // row 1 is "10"
}

TEST(CategoricalTest, MixedLevelsSortBytewise) {
  absl::StatusOr<CsvTable> table = ParseWith("c\nb\n10\nB\n2\n", {}, {"c"});
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(table->columns[0].levels, ElementsAre("10", "2", "B", "b"));
}

// The levels are those of every row of the buffer: a split that lacks a level
// still has its (all-zero) indicator, so every split encodes alike.
TEST(CategoricalTest, LevelsComeFromTheWholeBuffer) {
  absl::StatusOr<CsvTable> table =
      ParseWith("u,c\n1,x\n2,x\n3,x\n4,z\n", {"c", "u"}, {"c"});
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(table->header, ElementsAre("c=x", "c=z", "u"));
  EXPECT_EQ(table->values.block(0, 0, 2, 3),
            (Eigen::MatrixXd(2, 3) << 1, 1, 1, 0, 0, 0).finished());
}

TEST(CategoricalTest, QuotedAndSpacedValuesAreOneLevel) {
  absl::StatusOr<CsvTable> table =
      ParseWith("c,d\n\"a,b\",1\n a,b ,2\n", {}, {"c"});
  // The second row has three fields: "a", "b " and "2".
  EXPECT_FALSE(table.ok());
  table = ParseWith("c,d\n\"a b\",1\n a b ,2\n\"x\"\"y\",3\n", {}, {"c"});
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(table->columns[0].levels, ElementsAre("a b", "x\"y"));
}

TEST(CategoricalTest, ColumnSelectedTwiceIsEncodedTwice) {
  absl::StatusOr<CsvTable> table =
      ParseWith("u,c\n1,p\n2,q\n", {"c", "u", "1"}, {"c"});
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(table->header, ElementsAre("c=p", "c=q", "u", "c=p", "c=q"));
  EXPECT_EQ(table->columns[2].first, 3);
}

TEST(CategoricalTest, MissingCategoryIsAnErrorUnlessKept) {
  EXPECT_THAT(Message(ParseWith("u,c\n1,p\n2,NA\n", {}, {"c"}).status()),
              AllOf(HasSubstr("line 3"), HasSubstr("column 'c'"),
                    HasSubstr("missing value 'NA'")));
  EXPECT_THAT(Message(ParseWith("u,c\n1,p\n2,\n", {}, {"c"}).status()),
              HasSubstr("missing value (empty field)"));
  absl::StatusOr<CsvTable> table =
      ParseWith("u,c\n1,p\n2,NA\n3,q\n", {}, {"c"}, true);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(table->columns[1].levels, ElementsAre("p", "q"));
  EXPECT_TRUE(std::isnan(table->values(1, 1)));
  EXPECT_TRUE(std::isnan(table->values(2, 1)));
  EXPECT_EQ(table->values(0, 1), 2.0);
  EXPECT_EQ(table->values(2, 2), 1.0);
}

TEST(CategoricalTest, RejectsUnknownAndUnselectedCategoricalColumns) {
  EXPECT_THAT(Message(ParseWith("u,c\n1,p\n", {}, {"d"}).status()),
              HasSubstr("unknown column 'd'"));
  EXPECT_THAT(Message(ParseWith("u,c\n1,p\n", {"u"}, {"c"}).status()),
              HasSubstr("categorical column 'c' is not among the selected"));
}

TEST(CategoricalTest, WithoutCategoriesTheLayoutIsUnchanged) {
  absl::StatusOr<CsvTable> table = ParseWith("a,b\n1,2\n3,4\n", {"b", "a"}, {});
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_EQ(table->columns.size(), 2u);
  EXPECT_EQ(table->columns[0].name, "b");
  EXPECT_EQ(table->columns[1].first, 1);
  EXPECT_EQ(table->values, (Eigen::MatrixXd(2, 2) << 2, 4, 1, 3).finished());
}

TEST(KeepMissingTest, MissingNumbersBecomeNanButInfStaysAnError) {
  absl::StatusOr<CsvTable> table =
      ParseWith("a,b\n1,2\n,NA\nnan,? \n5,6\n", {}, {}, true);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->num_rows(), 4);
  for (int r : {1, 2}) {
    EXPECT_TRUE(std::isnan(table->values(0, r)));
    EXPECT_TRUE(std::isnan(table->values(1, r)));
  }
  EXPECT_EQ(table->values(1, 3), 6.0);
  EXPECT_THAT(Message(ParseWith("a\n1\ninf\n", {}, {}, true).status()),
              HasSubstr("non-finite value 'inf'"));
  EXPECT_THAT(Message(ParseWith("a\n1\nred\n", {}, {}, true).status()),
              HasSubstr("'red' is not a number"));
}

TEST(ParseCsvHeaderTest, ReadsOnlyTheHeader) {
  absl::StatusOr<std::vector<std::string>> header =
      ParseCsvHeader("\xEF\xBB\xBF\"a\", b,c\r\nnot,even,numbers,here\n");
  ASSERT_TRUE(header.ok()) << header.status();
  EXPECT_THAT(*header, ElementsAre("a", "b", "c"));
  EXPECT_THAT(Message(ParseCsvHeader("").status()), HasSubstr("empty"));
  EXPECT_THAT(Message(ParseCsvHeader("a,a\n1,2\n").status()),
              HasSubstr("duplicate"));
}

// --- The real benchmark files, when ../shared/data is beside the checkout. ---

using ::sparrow::testing::ReadFile;
using ::sparrow::testing::SharedData;

TEST(RealDataTest, CascadedTanks) {
  SKIP_WITHOUT_SHARED_DATA();
  const std::string buffer =
      ReadFile(SharedData() / "cascaded_tanks" / "dataBenchmark.csv");
  absl::StatusOr<CsvTable> table =
      ParseCsv(buffer, {"uEst", "uVal", "yEst", "yVal"});
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(table->header, ElementsAre("uEst", "uVal", "yEst", "yVal"));
  ASSERT_EQ(table->num_rows(), 1024);
  EXPECT_EQ(table->values(0, 0), 3.2567);
  EXPECT_EQ(table->values(2, 0), 5.205);
  EXPECT_EQ(table->values(3, 1023), 3.7179);
  // Ts is only on the first data row.
  EXPECT_THAT(ParseError(buffer),
              AllOf(HasSubstr("line 3"), HasSubstr("column 'Ts'"),
                    HasSubstr("missing value")));
}

TEST(RealDataTest, SilverboxQuotedHeaderTrailingCommas) {
  SKIP_WITHOUT_SHARED_DATA();
  absl::StatusOr<CsvTable> table =
      ParseCsv(ReadFile(SharedData() / "silverbox" / "SNLS80mV.csv"));
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(table->header, ElementsAre("V1", "V2"));
  EXPECT_EQ(table->num_rows(), 131072);
  EXPECT_EQ(table->values(0, 0), 0.0057756);
}

TEST(RealDataTest, BikeSharingCrlfWithDateColumn) {
  SKIP_WITHOUT_SHARED_DATA();
  const std::string buffer =
      ReadFile(SharedData() / "bike_sharing_hourly" / "hour.csv");
  absl::StatusOr<CsvTable> table = ParseCsv(buffer, {"temp", "hum", "cnt"});
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_EQ(table->num_rows(), 17379);
  EXPECT_EQ(table->values(0, 0), 0.24);
  EXPECT_EQ(table->values(2, 0), 16.0);
  EXPECT_EQ(table->values(2, 17378), 49.0);
  EXPECT_THAT(ParseError(buffer),
              AllOf(HasSubstr("line 2"), HasSubstr("column 'dteday'")));
}

TEST(RealDataTest, BeijingPm25MissingValues) {
  SKIP_WITHOUT_SHARED_DATA();
  const std::string buffer = ReadFile(SharedData() / "beijing_pm25" /
                                      "PRSA_data_2010.1.1-2014.12.31.csv");
  EXPECT_THAT(ParseError(buffer, {"DEWP", "pm2.5"}),
              AllOf(HasSubstr("line 2"), HasSubstr("column 'pm2.5'"),
                    HasSubstr("missing value 'NA'")));
  absl::StatusOr<CsvTable> table = ParseCsv(buffer, {"DEWP", "TEMP", "Iws"});
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->num_rows(), 43824);
  EXPECT_EQ(table->values(2, 43823), 249.85);
}

TEST(RealDataTest, WienerHammersteinLargestFile) {
  SKIP_WITHOUT_SHARED_DATA();
  absl::StatusOr<CsvTable> table = ParseCsv(ReadFile(
      SharedData() / "wiener_hammerstein_2009" / "WienerHammerBenchMark.csv"));
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(table->header, ElementsAre("uBenchMark", "yBenchMark"));
  EXPECT_EQ(table->num_rows(), 188000);
  EXPECT_EQ(table->values(0, 0), -0.11604953411733732);
  EXPECT_TRUE(table->values.allFinite());
}

TEST(RealDataTest, MvCategoricalColumns) {
  SKIP_WITHOUT_SHARED_DATA();
  absl::StatusOr<CsvTable> table = ParseWith(
      ReadFile(SharedData() / "mv" / "mv.csv"), {}, {"x3", "x7", "x8"});
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->num_rows(), 40768);
  EXPECT_EQ(table->num_columns(), 15);  // 8 numbers (class too), 3 + 2 + 2
  EXPECT_THAT(table->columns[2].levels, ElementsAre("brown", "green", "red"));
  EXPECT_THAT(table->columns[6].levels, ElementsAre("no", "yes"));
  EXPECT_THAT(table->columns[7].levels, ElementsAre("large", "normal"));
  EXPECT_EQ(table->values(table->columns[2].first, 0), 1.0);  // brown
  EXPECT_TRUE(table->values.allFinite());
}

TEST(RealDataTest, BeijingPm25KeepsMissingValuesForDropping) {
  SKIP_WITHOUT_SHARED_DATA();
  absl::StatusOr<CsvTable> table =
      ParseWith(ReadFile(SharedData() / "beijing_pm25" /
                         "PRSA_data_2010.1.1-2014.12.31.csv"),
                {"pm2.5", "cbwd", "DEWP"}, {"cbwd"}, true);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(table->columns[1].levels, ElementsAre("NE", "NW", "SE", "cv"));
  int missing = 0;
  for (int r = 0; r < table->num_rows(); ++r) {
    missing += std::isnan(table->values(0, r)) ? 1 : 0;
  }
  EXPECT_EQ(missing, 2067);
}

TEST(CheckCsvStructureTest, AcceptsAnyValuesAndCountsRows) {
  auto shape = CheckCsvStructure("t,u,note\n1,2,red\n,NA,\n3,x,\"a,b\"\n\n");
  ASSERT_TRUE(shape.ok()) << shape.status();
  EXPECT_EQ(shape->header, (std::vector<std::string>{"t", "u", "note"}));
  EXPECT_EQ(shape->rows, 3);
}

TEST(CheckCsvStructureTest, RefusesWhatParseCsvRefusesStructurally) {
  EXPECT_FALSE(CheckCsvStructure("").ok());
  EXPECT_FALSE(CheckCsvStructure("u,y\n").ok());
  EXPECT_FALSE(CheckCsvStructure("u,u\n1,2\n").ok());
  EXPECT_FALSE(CheckCsvStructure("u,y\n1,2\n\n3,4\n").ok());
  EXPECT_FALSE(CheckCsvStructure("u,y\n1,\"2\n").ok());
  auto ragged = CheckCsvStructure("u,y\n1,2\n3,4,5\n");
  ASSERT_FALSE(ragged.ok());
  EXPECT_NE(ragged.status().message().find("line 3"), std::string::npos)
      << ragged.status();
}

}  // namespace
}  // namespace sparrow::core::data
