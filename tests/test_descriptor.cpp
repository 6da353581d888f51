// Descriptor grammar: round trips, derived fields, and malformed strings naming the bad token.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "kernels/bnorm/desc.h"
#include "kernels/core/dtype.h"
#include "kernels/core/error.h"
#include "kernels/core/grammar.h"
#include "kernels/core/quant.h"
#include "kernels/core/tensor.h"
#include "kernels/gemm/desc.h"

namespace pb {
namespace {

TEST(DescriptorSmoke, GemmRoundTrip) {
  for (const char* s : {"m1760n128k1760_tn", "m1n1k1", "m7n33k257_nt", "m5n6k7_tt", "m3n4k5",
                        "m64n32k16_tn_alpha0.5_beta0", "m8n8k8alpha-1.5lda16ldb9ldc10",
                        "m2048n26752k64_nt_n\"h1_bwd_w_b64\"", "m9n9k9n\"a:b c\"", "m4n5k6_dt=bf16",
                        "m4n5k6_tn_dt=bf16:bf16n\"x\"", "m4n5k6dt=u8s8:s8_beta0", "m4dt=f16:f16",
                        "m4dt=f32", "m4dt=u8s8:f32"}) {
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
  expect_bad("m4dt=bf8", "field dt");
  expect_bad("m4dt=bf16:s8", "field dt");
  expect_bad("m4dt=u8s8:bf16", "field dt");
  expect_bad("m4dt=bf16:", "field dt");
  expect_bad("m4dt=", "'='");
  expect_bad("m4dt=bf16_dt=f32", "twice");
  expect_bad("m4dt=bf16beta0", "field dt");  // the word runs to the next _
}

TEST(DescriptorSmoke, GemmDataType) {
  GemmDesc d = GemmDesc::parse("m8n4k2_dt=u8s8:s8");
  EXPECT_EQ(d.dt.in, DataType::u8s8);
  EXPECT_EQ(d.dt.out, DataType::out_s8);
  EXPECT_EQ(d.str(), "m8n4k2dt=u8s8:s8");
  EXPECT_EQ(d.bytes(), 8 * 2 + 2 * 4 + 2.0 * 8 * 4);       // s8 A and B, s8 C read and written
  EXPECT_EQ(GemmDesc::parse("m4dt=f32").str(), "m4n4k4");  // the default is not printed
  EXPECT_EQ(GemmDesc::parse("m4dt=bf16:f32").dt, GemmDesc::parse("m4dt=bf16").dt);
  EXPECT_FALSE(GemmDesc::parse("m4dt=bf16") == GemmDesc::parse("m4dt=bf16:bf16"));
}

// bf16 and f16 round to nearest even, keep signed zeros, saturate (f16) to infinity, and f16
// has subnormals; s8 outputs round to nearest even and saturate.
TEST(DescriptorSmoke, DataTypeConversions) {
  EXPECT_EQ(to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(from_bf16(to_bf16(1.0f + 1.0f / 256)), 1.0f);               // a tie: down to even
  EXPECT_EQ(from_bf16(to_bf16(1.0f + 3.0f / 256)), 1.0f + 4.0f / 256);  // tie: up to even
  EXPECT_EQ(from_bf16(to_bf16(1.0f + 1.5f / 256)), 1.0f + 2.0f / 256);  // above the tie
  EXPECT_EQ(to_bf16(-0.0f), 0x8000);
  EXPECT_EQ(to_f16(1.0f), 0x3C00);
  EXPECT_EQ(to_f16(65504.0f), 0x7BFF);
  EXPECT_EQ(to_f16(65519.0f), 0x7BFF);
  EXPECT_EQ(to_f16(65520.0f), 0x7C00);  // rounds up to infinity
  EXPECT_EQ(to_f16(-2.0f), 0xC000);
  EXPECT_EQ(to_f16(5.9604645e-08f), 0x0001);  // the smallest subnormal, 2^-24
  EXPECT_EQ(from_f16(0x0001), 5.9604645e-08f);
  EXPECT_EQ(from_f16(to_f16(2049.0f)), 2048.0f);  // tie to even
  EXPECT_EQ(from_f16(to_f16(2051.0f)), 2052.0f);
  for (float v : {0.1f, -3.3f, 1000.7f, 1e-5f, 6.1e-5f})
    EXPECT_NEAR(from_f16(to_f16(v)), v, std::fabs(v) * 0x1p-11 + 0x1p-25) << v;
  EXPECT_EQ(convert_output(2.5, DataType::out_s8), 2);
  EXPECT_EQ(convert_output(-3.5, DataType::out_s8), -4);
  EXPECT_EQ(convert_output(300.2, DataType::out_s8), 127);
  EXPECT_EQ(convert_output(-1e9, DataType::out_s8), -128);
}

// bf16 rounding from its definition, in double: the nearer of the two bf16 neighbours (ties to
// the even one; past the largest finite value, infinity at 2^128), NaNs kept quiet.
uint16_t bf16_by_definition(uint32_t u) {
  float v;
  std::memcpy(&v, &u, 4);
  if (std::isnan(v)) return static_cast<uint16_t>((u >> 16) | 0x40);
  const auto lo = static_cast<uint16_t>(u >> 16);  // towards zero
  if ((u & 0xFFFF) == 0) return lo;
  const auto hi = static_cast<uint16_t>(lo + 1);  // away from zero
  auto value = [](uint16_t h) {
    return (h & 0x7FFF) == 0x7F80 ? std::copysign(std::ldexp(1.0, 128), from_bf16(h))
                                  : static_cast<double>(from_bf16(h));
  };
  const double dl = std::fabs(v - value(lo)), dh = std::fabs(value(hi) - v);
  return dl < dh ? lo : dh < dl ? hi : (lo & 1) ? hi : lo;
}

// to_bf16 and the tensor conversions (a network's quantise step, an output's; vectorised) round
// as the definition does: ties, the largest finite values (to infinity), infinities, NaNs,
// subnormals, signed zeros, and a sweep of bit patterns.
TEST(DescriptorSmoke, Bf16ConversionsRoundAsDefined) {
  std::vector<uint32_t> bits = {0x00000000u, 0x80000000u, 0x3F808000u, 0x3F818000u, 0x3F808001u,
                                0x7F7FFFFFu, 0xFF7FFFFFu, 0x7F7F8000u, 0x7F7F7FFFu, 0x7F800000u,
                                0xFF800000u, 0x7F800001u, 0x7FC00000u, 0xFFBFFFFFu, 0x00000001u,
                                0x807FFFFFu, 0x00008000u, 0x00018000u};
  uint32_t x = 12345;
  for (int i = 0; i < 100000; ++i) bits.push_back(x = x * 1664525u + 1013904223u);
  Tensor t({static_cast<int64_t>(bits.size())});
  std::memcpy(t.data(), bits.data(), 4 * bits.size());
  std::vector<uint8_t> out;
  to_storage(t, DataType::bf16, true, &out);
  ASSERT_EQ(out.size(), 2 * bits.size());
  std::vector<uint16_t> out16(bits.size());
  to_storage_out(t.data(), t.size(), DataType::out_bf16, out16.data());
  for (size_t i = 0; i < bits.size(); ++i) {
    const uint16_t want = bf16_by_definition(bits[i]);
    uint16_t got;
    std::memcpy(&got, out.data() + 2 * i, 2);
    ASSERT_EQ(to_bf16(t[static_cast<int64_t>(i)]), want) << std::hex << bits[i];
    ASSERT_EQ(got, want) << std::hex << bits[i];
    ASSERT_EQ(out16[i], want) << std::hex << bits[i];
  }
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
