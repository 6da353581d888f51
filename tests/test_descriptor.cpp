// Descriptor grammar: round trips, derived fields, and malformed strings naming the bad token.
#include <gtest/gtest.h>

#include "kernels/bnorm/desc.h"
#include "kernels/core/error.h"
#include "kernels/core/grammar.h"
#include "kernels/gemm/desc.h"

namespace pb {
namespace {

TEST(DescriptorSmoke, GemmRoundTrip) {
  for (const char* s : {"m1760n128k1760_tn", "m1n1k1", "m7n33k257_nt", "m5n6k7_tt", "m3n4k5",
                        "m64n32k16_tn_alpha0.5_beta0", "m8n8k8alpha-1.5lda16ldb9ldc10",
                        "m2048n26752k64_nt_n\"h1_bwd_w_b64\"", "m9n9k9n\"a:b c\""}) {
    GemmDesc d = GemmDesc::parse(s);
    EXPECT_EQ(GemmDesc::parse(d.str()), d) << s << " -> " << d.str();
  }
}

TEST(DescriptorSmoke, GemmDerivedFields) {
  GemmDesc d = GemmDesc::parse("m100");
  EXPECT_EQ(d.n, 100);
  EXPECT_EQ(d.k, 100);
  EXPECT_EQ(d.alpha, 1);
  EXPECT_EQ(d.beta, 1);
  EXPECT_FALSE(d.ta);
  EXPECT_EQ(d.lda, 100);
  GemmDesc t = GemmDesc::parse("m10n20k30_tn");
  EXPECT_TRUE(t.ta);
  EXPECT_FALSE(t.tb);
  EXPECT_EQ(t.lda, 30);  // A is stored k x m
  EXPECT_EQ(t.ldb, 30);
  EXPECT_EQ(t.ldc, 10);
  EXPECT_EQ(t.str(), "m10n20k30_tn");
}

// Each malformed string must raise InputError whose message names `needle`.
void expect_bad(const std::string& text, const std::string& needle) {
  try {
    GemmDesc::parse(text);
    ADD_FAILURE() << "accepted '" << text << "'";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << "'" << text << "' gave: " << e.what() << " (wanted mention of " << needle << ")";
  }
}

TEST(DescriptorSmoke, GemmMalformed) {
  expect_bad("", "empty");
  expect_bad("m0n4k4", "field m");
  expect_bad("m-3", "field m");
  expect_bad("m4n0k4", "field n");
  expect_bad("m4n4k0", "field k");
  expect_bad("n4k4", "field m");
  expect_bad("m4x5", "'x5'");
  expect_bad("m4n4k4_tx", "tx");
  expect_bad("m4n4k4_tn_nt", "trans");
  expect_bad("m4m5", "twice");
  expect_bad("m4n4k4lda2", "lda");
  expect_bad("m4n4k4_tn_lda3", "lda");  // A is k x m: lda >= k = 4
  expect_bad("m4n4k4n\"unterminated", "unterminated");
  expect_bad("m4n4k4q7", "unknown field");
  expect_bad("m3000000000", "32-bit");
  expect_bad("m2000000000n2000000000k2000000000", "MB");  // does not fit in memory
  expect_bad("m4.5", "integer");
  expect_bad("m4n4k4alpha", "alpha");
}

TEST(DescriptorSmoke, TokenizerPositions) {
  try {
    tokenize("mb16ic64?", "conv descriptor");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("position 8"), std::string::npos) << e.what();
  }
  auto t = tokenize("mb16_ic64n\"r:c1\"_max", "x");
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t[0].key, "mb");
  EXPECT_EQ(t[0].ival, 16);
  EXPECT_EQ(t[2].kind, Token::kString);
  EXPECT_EQ(t[2].sval, "r:c1");
  EXPECT_EQ(t[3].kind, Token::kFlag);
  auto e = tokenize("eps1e-05alpha2.5", "x");
  ASSERT_EQ(e.size(), 2u);
  EXPECT_DOUBLE_EQ(e[0].dval, 1e-05);
  EXPECT_DOUBLE_EQ(e[1].dval, 2.5);
}

}  // namespace
}  // namespace pb

namespace pb {
namespace {

// A value of -1 is a given (bad) value, not "omitted".
TEST(DescriptorSmoke, MinusOneIsNotOmitted) {
  expect_bad("m-1n4k4", "field m");
  expect_bad("m4n-1k4", "field n");
  expect_bad("m4n4k4lda-1", "lda");
}

}  // namespace
}  // namespace pb

// A size past every integer type is refused with its size in MB, not a wrapped negative number
// (tools/fuzz found the cast to long long in the message: undefined behaviour).
TEST(DescriptorSmoke, HugeSizesAreReportedNotWrapped) {
  for (const char* text : {"mb4ic4836487ih1474874966", "mb2147483647ic2147483647ih2147483647"}) {
    try {
      pb::BnormDesc::parse(text);
      FAIL() << text << " was accepted";
    } catch (const pb::InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("problem needs "), std::string::npos) << what;
      EXPECT_EQ(what.find("needs -"), std::string::npos) << what;
    }
  }
}
