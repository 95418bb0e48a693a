#include "client/lib/market_csv.h"

#include <filesystem>
#include <fstream>

#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/client/temp_file.h"

namespace pricer {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::string MarketError(const std::string& text) {
  TempFile file("market_csv_error.csv", text);
  absl::StatusOr<MarketCsv> csv = ReadMarketCsv(file.path());
  EXPECT_FALSE(csv.ok()) << text;
  std::string message(csv.status().message());
  // Every message names the file; the rest is what the test looks at.
  EXPECT_THAT(message, HasSubstr(file.path())) << text;
  return absl::StrReplaceAll(message, {{file.path(), "F"}});
}

std::string CorrelationError(const std::string& text) {
  TempFile file("market_csv_correlation_error.csv", text);
  absl::StatusOr<CorrelationCsv> csv = ReadCorrelationCsv(file.path());
  EXPECT_FALSE(csv.ok()) << text;
  std::string message(csv.status().message());
  EXPECT_THAT(message, HasSubstr(file.path())) << text;
  return absl::StrReplaceAll(message, {{file.path(), "F"}});
}

TEST(ReadMarketCsv, ReadsColumnsByNameInAnyOrder) {
  for (const std::string& text : {
           std::string("spot,volatility\n100,0.2\n50.5,0\n"),
           std::string("volatility,spot\n0.2,100\n0,50.5\n"),
           // Extra columns, spaces, CRLF, blank lines, a byte order mark.
           std::string("\xEF\xBB\xBF sector , volatility ,spot, rate\r\n"
                       "tech, 0.2 , 100 ,x\r\n\r\nbank,0,  50.5,y\r\n"),
       }) {
    TempFile file("market_csv_order.csv", text);
    absl::StatusOr<MarketCsv> csv = ReadMarketCsv(file.path());
    ASSERT_TRUE(csv.ok()) << csv.status() << "\n" << text;
    EXPECT_THAT(csv->market.spot(), ElementsAre(100, 50.5)) << text;
    EXPECT_THAT(csv->market.volatility(), ElementsAre(0.2, 0)) << text;
    EXPECT_THAT(csv->issuers, IsEmpty()) << text;
  }
}

TEST(ReadMarketCsv, LabelsFromPandasIndexOrAnIssuerColumn) {
  // pandas' df.to_csv(): the index has no name.
  TempFile pandas("market_csv_pandas.csv", ",spot,volatility\n0,5.1,0.2\n1,6,0.3\n");
  absl::StatusOr<MarketCsv> csv = ReadMarketCsv(pandas.path());
  ASSERT_TRUE(csv.ok()) << csv.status();
  EXPECT_THAT(csv->issuers, ElementsAre("0", "1"));
  EXPECT_THAT(csv->market.spot(), ElementsAre(5.1, 6));
  TempFile named("market_csv_issuer.csv",
                 "id,volatility,issuer,spot\n7, 0.2 , ACME ,5.1\n8,0.3,Initech,6\n");
  csv = ReadMarketCsv(named.path());
  ASSERT_TRUE(csv.ok()) << csv.status();
  EXPECT_THAT(csv->issuers, ElementsAre("ACME", "Initech"));
  EXPECT_THAT(csv->market.volatility(), ElementsAre(0.2, 0.3));
}

TEST(ReadMarketCsv, QuotedCellsHoldCommasAndQuotes) {
  // As pandas (csv.QUOTE_MINIMAL) writes labels with commas and quotes, with
  // Windows line ends.
  TempFile file("market_csv_quoted.csv",
                "\"issuer\",spot,volatility\r\n\"ACME, Inc.\",5.1,0.2\r\n"
                " \"The \"\"Big\"\" One\" , 6 ,\"0.3\"\r\n\"\",7,0.4\r\n");
  absl::StatusOr<MarketCsv> csv = ReadMarketCsv(file.path());
  ASSERT_TRUE(csv.ok()) << csv.status();
  EXPECT_THAT(csv->issuers, ElementsAre("ACME, Inc.", "The \"Big\" One", ""));
  EXPECT_THAT(csv->market.spot(), ElementsAre(5.1, 6, 7));
  EXPECT_THAT(csv->market.volatility(), ElementsAre(0.2, 0.3, 0.4));
  EXPECT_EQ(MarketError("issuer,spot,volatility\n\"ACME, Inc.,5.1,0.2\n"),
            "F:2, cell 1: the quote is not closed on this line (a cell over several lines is not "
            "supported)");
  EXPECT_EQ(MarketError("issuer,spot,volatility\n\"ACME\" Inc.,5.1,0.2\n"),
            "F:2, cell 1: text after the closing quote");
  EXPECT_EQ(MarketError("spot,volatility\n5.1,\"0.2\"x\n"),
            "F:2, cell 2: text after the closing quote");
}

TEST(ReadMarketCsv, ErrorsNameTheFileRowAndColumn) {
  EXPECT_EQ(MarketError("spot,volatility\n100,0.2\n7;0.1\n"), "F:3: 1 cells, but the header has 2");
  EXPECT_EQ(MarketError("volatility,spot\n0.2,100\n\n0.1,abc\n"),
            "F:4, column spot: 'abc' is not a number");
  EXPECT_EQ(MarketError("spot,volatility\n100,\n"), "F:2, column volatility: '' is not a number");
  EXPECT_THAT(MarketError("price,vol\n1,2\n"),
              HasSubstr("F:1: the header 'price,vol' has no column 'spot'"));
  EXPECT_THAT(MarketError("spot,vol\n1,2\n"), HasSubstr("has no column 'volatility'"));
  EXPECT_EQ(MarketError("spot,volatility,spot\n1,2,3\n"),
            "F:1: the header names 'spot' twice (columns 1 and 3)");
  EXPECT_THAT(MarketError("\n\n"), HasSubstr("F: empty"));
  EXPECT_EQ(ReadMarketCsv("/nonexistent/market.csv").status().message(),
            "cannot open market file /nonexistent/market.csv");
}

TEST(ReadCorrelationCsv, ReadsRowMajorValues) {
  // Spaces around numbers, CRLF line ends and blank lines are fine.
  TempFile file("market_csv_correlation.csv", "1, 0.5,-0.25\r\n0.5,1,0.2\r\n\n-0.25 ,0.2,1\n");
  absl::StatusOr<CorrelationCsv> csv = ReadCorrelationCsv(file.path());
  ASSERT_TRUE(csv.ok()) << csv.status();
  EXPECT_THAT(csv->values, ElementsAre(1, 0.5, -0.25, 0.5, 1, 0.2, -0.25, 0.2, 1));
  EXPECT_THAT(csv->labels, IsEmpty());
}

TEST(ReadCorrelationCsv, ReadsLabelsOfAHeaderAColumnOrBoth) {
  for (const std::string& text : {
           // pandas' corr.to_csv().
           std::string(",A,B\nA,1,0.3\nB,0.3,1\n"),
           std::string(" A , B \n1,0.3\n0.3,1\n"),
           std::string("A, 1, 0.3\nB, 0.3, 1\n"),
           std::string("name,A,B\nA,1,0.3\nB,0.3,1\n"),
       }) {
    TempFile file("market_csv_labels.csv", text);
    absl::StatusOr<CorrelationCsv> csv = ReadCorrelationCsv(file.path());
    ASSERT_TRUE(csv.ok()) << csv.status() << "\n" << text;
    EXPECT_THAT(csv->values, ElementsAre(1, 0.3, 0.3, 1)) << text;
    EXPECT_THAT(csv->labels, ElementsAre("A", "B")) << text;
  }
}

TEST(ReadCorrelationCsv, QuotedLabelsHoldCommasAndQuotes) {
  TempFile file("market_csv_quoted_labels.csv",
                ",\"A, Inc.\",\"B \"\"b\"\"\"\n\"A, Inc.\",1,0.3\n\"B \"\"b\"\"\",0.3,1\n");
  absl::StatusOr<CorrelationCsv> csv = ReadCorrelationCsv(file.path());
  ASSERT_TRUE(csv.ok()) << csv.status();
  EXPECT_THAT(csv->values, ElementsAre(1, 0.3, 0.3, 1));
  EXPECT_THAT(csv->labels, ElementsAre("A, Inc.", "B \"b\""));
}

TEST(ReadCorrelationCsv, RefusesWhatIsNotOneSquareMatrix) {
  EXPECT_EQ(CorrelationError("1,0\n0,1\n0,0\n"), "F: 3 rows of 2 numbers is not square");
  EXPECT_EQ(CorrelationError("1,0,0\n0,1\n0,0,1\n"), "F:2: 2 cells, but the first row has 3");
  // One more column of numbers: not taken for labels.
  EXPECT_EQ(CorrelationError("0,1,0.3\n1,0.3,1\n"), "F: 2 rows of 3 numbers is not square");
  EXPECT_EQ(CorrelationError("\n\n"), "F: no numbers");
  EXPECT_EQ(CorrelationError("A,B\n"), "F: no numbers");
  EXPECT_EQ(CorrelationError("1,0.5,0\n0.5,1,0\n0,one,1\n"),
            "F:3, column 2: 'one' is not a number");
  EXPECT_EQ(CorrelationError(",A,B\nB,1,0.3\nA,0.3,1\n"),
            "F: the labels of the header (A, B) and of the first column (B, A) differ");
  EXPECT_EQ(CorrelationError("A,B,C\n1,0.3\n0.3,1\n"), "F:1: a header of 3 labels for 2 columns");
  EXPECT_EQ(CorrelationError("A,A\n1,0.3\n0.3,1\n"), "F: the label 'A' names two issuers");
  EXPECT_EQ(ReadCorrelationCsv("/nonexistent/c.csv").status().code(), absl::StatusCode::kNotFound);
}

TEST(CorrelationInIssuerOrder, ReordersToTheIssuers) {
  const CorrelationCsv csv{{1, 0.1, 0.2, 0.1, 1, 0.3, 0.2, 0.3, 1}, {"A", "B", "C"}};
  absl::StatusOr<std::vector<double>> ordered =
      CorrelationInIssuerOrder(csv, {"C", "A", "B"}, "c.csv", "m.csv");
  ASSERT_TRUE(ordered.ok()) << ordered.status();
  EXPECT_THAT(*ordered, ElementsAre(1, 0.2, 0.3, 0.2, 1, 0.1, 0.3, 0.1, 1));
  // Without labels on either side: the file's order.
  EXPECT_EQ(*CorrelationInIssuerOrder(csv, {}, "c.csv", "m.csv"), csv.values);
  const CorrelationCsv unlabelled{csv.values, {}};
  EXPECT_EQ(*CorrelationInIssuerOrder(unlabelled, {"C", "A", "B"}, "c.csv", "m.csv"), csv.values);
}

TEST(CorrelationInIssuerOrder, RefusesLabelsThatDoNotMatchNamingThem) {
  const CorrelationCsv csv{{1, 0.1, 0.2, 0.1, 1, 0.3, 0.2, 0.3, 1}, {"A", "B", "C"}};
  EXPECT_EQ(CorrelationInIssuerOrder(csv, {"A", "X", "C"}, "c.csv", "m.csv").status().message(),
            "c.csv: its labels are not the issuers of m.csv; issuers without a label: X; labels "
            "of no issuer: B");
  EXPECT_EQ(CorrelationInIssuerOrder(csv, {"A", "B"}, "c.csv", "m.csv").status().message(),
            "c.csv: its labels are not the issuers of m.csv; labels of no issuer: C");
  EXPECT_EQ(
      CorrelationInIssuerOrder(csv, {"A", "B", "C", "D"}, "c.csv", "m.csv").status().message(),
      "c.csv: its labels are not the issuers of m.csv; issuers without a label: D");
  EXPECT_EQ(CorrelationInIssuerOrder(csv, {"A", "B", "A"}, "c.csv", "m.csv").status().message(),
            "m.csv: the label 'A' names two issuers");
}

}  // namespace
}  // namespace pricer
