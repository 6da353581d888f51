// cpu/packed's AMX GEMM (packed_lowp_amx.cpp), through gemm_packed_lowp where the tiles run the
// type (kernels/core/amx.h; skipped elsewhere, and under PRIMBENCH_AMX=0). Rows and columns
// around its 16 x 16 tiles and 32 x 32 blocks, sums around a tile's depth (32 bf16, 64 u8) and
// its KC blocks (1024 bf16, 2048 u8: C accumulated across them, or an fp32 panel for a typed
// output), every transpose, padded leading dimensions (odd ones, which the transposing packs
// take element by element), f32, bf16 and s8 outputs, beta 0, 1 and 0.5, u8s8 zero points, one
// and two threads with the rows or the columns split; with op(A) = A^T both the packed A and, up
// to 64 columns, A's tiles read in place; with op(B) = B and up to 64 rows, B's read in place. The
// data make every result exact: bf16 inputs are small integers (every product and sum exact in
// fp32), u8s8 full range with power-of- two scales, so C must equal the reference computed in int64
// / fp64 and then rounded as the kernel's epilogue rounds; C's padding rows must stay untouched.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/core/amx.h"
#include "kernels/core/dtype.h"
#include "kernels/gemm/cpu/packed_lowp.h"
#include "tests/lowp_expected.h"

namespace pb {
namespace lowp_amx_test {  // (named: the unity build joins test files)

struct Case {
  int64_t m, n, k;
  bool ta, tb;
  const char* dt;  // "bf16", "bf16:bf16", "u8s8", "u8s8:s8"
  float beta;
  int32_t zero = 0;  // u8s8
  int64_t pad = 3;   // added to each leading dimension
};

std::string name_of(const Case& c) {
  return "m" + std::to_string(c.m) + "n" + std::to_string(c.n) + "k" + std::to_string(c.k) +
         (c.ta ? "t" : "n") + (c.tb ? "t" : "n") + " dt " + c.dt + " beta " +
         std::to_string(c.beta) + " zero " + std::to_string(c.zero) + " pad " +
         std::to_string(c.pad);
}

uint16_t bf16_of(float f) {  // exact for the small integers used here
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>(u >> 16);
}
float f32_of_bf16(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t bf16_rne(float f) {  // round to nearest even, as vcvtneps2bf16 (finite values)
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
}

void check(const Case& c) {
  const DataType dt = DataType::parse(c.dt, "dt");
  const bool quant = dt.in == DataType::u8s8;
  const int64_t ar = c.ta ? c.k : c.m, ac = c.ta ? c.m : c.k;  // A as stored
  const int64_t br = c.tb ? c.n : c.k, bc = c.tb ? c.k : c.n;  // B as stored
  const int64_t lda = ar + c.pad, ldb = br + c.pad, ldc = c.m + 4;
  uint32_t x = static_cast<uint32_t>(c.m * 131 + c.n * 17 + c.k);
  auto next = [&] { return x = x * 1664525u + 1013904223u, x >> 8; };
  // A and B as the integers they hold (bf16: -8..8; u8s8: full range).
  std::vector<int> ai(lda * ac), bi(ldb * bc);
  for (auto& v : ai)
    v = quant ? static_cast<int>(next() % 256) - 128 : static_cast<int>(next() % 17) - 8;
  for (auto& v : bi) v = quant ? static_cast<int>(next() % 256) : static_cast<int>(next() % 17) - 8;
  std::vector<int8_t> a8(ai.begin(), ai.end());
  std::vector<uint8_t> b8(bi.begin(), bi.end());
  std::vector<uint16_t> a16(ai.size()), b16(bi.size());
  for (size_t i = 0; i < ai.size(); ++i) a16[i] = bf16_of(static_cast<float>(ai[i]));
  for (size_t i = 0; i < bi.size(); ++i) b16[i] = bf16_of(static_cast<float>(bi[i]));
  std::vector<float> a_scale(c.m);
  for (int64_t i = 0; i < c.m; ++i) a_scale[i] = std::ldexp(1.0f, static_cast<int>(i % 3) - 13);
  const float b_scale = 0.5f, c_scale = dt.out == DataType::out_s8 ? 0.25f : 2.0f, alpha = 2.0f;

  // Old C: small integers (exact in every output type).
  const size_t csize = static_cast<size_t>(ldc * c.n);
  std::vector<float> c32(csize);
  std::vector<uint16_t> c16(csize);
  std::vector<int8_t> c8(csize);
  for (size_t i = 0; i < csize; ++i) {
    const int v = static_cast<int>(next() % 201) - 100;
    c32[i] = static_cast<float>(v);
    c16[i] = bf16_of(static_cast<float>(v));
    c8[i] = static_cast<int8_t>(v);
  }
  const std::vector<float> c32_old = c32;
  const std::vector<uint16_t> c16_old = c16;
  const std::vector<int8_t> c8_old = c8;

  LowpGemm g;
  g.dt = dt;
  g.ta = c.ta, g.tb = c.tb;
  g.m = c.m, g.n = c.n, g.k = c.k;
  g.a = quant ? static_cast<const void*>(a8.data()) : a16.data(), g.lda = lda;
  g.b = quant ? static_cast<const void*>(b8.data()) : b16.data(), g.ldb = ldb;
  g.c = dt.out == DataType::out_s8     ? static_cast<void*>(c8.data())
        : dt.out == DataType::out_bf16 ? static_cast<void*>(c16.data())
                                       : static_cast<void*>(c32.data());
  g.ldc = ldc;
  g.alpha = alpha, g.beta = c.beta;
  if (quant)
    g.a_scale = a_scale.data(), g.b_scale = b_scale, g.c_scale = c_scale, g.b_zero = c.zero;
  gemm_packed_lowp(g);

  const std::string name = name_of(c);
  for (int64_t j = 0; j < c.n; ++j)
    for (int64_t i = 0; i < ldc; ++i) {
      const int64_t at = i + j * ldc;
      if (i >= c.m) {
        ASSERT_TRUE(c32[at] == c32_old[at] && c16[at] == c16_old[at] && c8[at] == c8_old[at])
            << "padding C[" << at << "] written, " << name;
        continue;
      }
      int64_t sum = 0;
      for (int64_t p = 0; p < c.k; ++p) {
        const int av = ai[c.ta ? p + i * lda : i + p * lda];
        const int bv = bi[c.tb ? j + p * ldb : p + j * ldb];
        sum += static_cast<int64_t>(av) * (bv - (quant ? c.zero : 0));
      }
      // The epilogue's order: fp32(sum) * the row's scale (alpha for bf16), then + beta * C in
      // one rounding, then the output type's rounding.
      if (!quant) {
        const float y = static_cast<float>(sum) * alpha;
        if (dt.out == DataType::out_bf16) {
          const float v = y + c.beta * f32_of_bf16(c16_old[at]);
          ASSERT_EQ(c16[at], bf16_rne(v))
              << "C(" << i << "," << j << ") sum " << sum << ", " << name;
        } else {
          ASSERT_EQ(c32[at], y + c.beta * c32_old[at])
              << "C(" << i << "," << j << ") sum " << sum << ", " << name;
        }
        continue;
      }
      const bool s8 = dt.out == DataType::out_s8;
      const double scale = static_cast<double>(alpha) * a_scale[i] * b_scale / (s8 ? c_scale : 1);
      if (s8)
        ASSERT_EQ(static_cast<int>(c8[at]),
                  lowp_test::u8s8_s8_expected(sum, scale, c.beta, c8_old[at]))
            << "C(" << i << "," << j << ") sum " << sum << ", " << name;
      else
        ASSERT_EQ(c32[at], lowp_test::u8s8_f32_expected(sum, scale, c.beta, c_scale, c32_old[at]))
            << "C(" << i << "," << j << ") sum " << sum << ", " << name;
    }
}

bool skip(amx::Kind kind, std::string* why) {
  *why = amx::unsupported(kind);
  return !why->empty();
}

TEST(PackedLowpAmxSmoke, ExactAtTheTileAndBlockEdges) {
  const char* dts[] = {"bf16", "bf16:bf16", "u8s8", "u8s8:s8"};
  int i = 0;
  for (int d = 0; d < 4; ++d) {
    std::string why;
    if (skip(d < 2 ? amx::Kind::bf16 : amx::Kind::int8, &why)) {
      std::printf("skipped %s: %s\n", dts[d], why.c_str());
      continue;
    }
    const bool quant = d >= 2;
    // The tile's depth and the KC block: 32 and 1024 bf16, 64 and 2048 u8.
    const int64_t depth = quant ? 64 : 32, kc = quant ? 2048 : 1024;
    for (int64_t m : {1, 15, 16, 17, 32, 33, 49})
      for (int64_t n : {1, 16, 17, 31, 33})
        for (int64_t k : {int64_t(1), int64_t(3), depth - 1, depth, depth + 1, kc - 1, kc + 1}) {
          // Every transpose, beta, zero point and padding over the cases.
          const bool ta = i % 2, tb = (i / 2) % 2;
          const float beta = i % 3 == 0 ? 0.0f : i % 3 == 1 ? 1.0f : 0.5f;
          const int32_t zero = i % 4 == 0 ? 0 : i % 4 == 1 ? 3 : i % 4 == 2 ? 128 : 255;
          check({m, n, k, ta, tb, dts[d], beta, zero, (i / 5) % 2 ? 4 : 3});
          if (::testing::Test::HasFatalFailure()) return;
          ++i;
        }
  }
}

TEST(PackedLowpAmxSmoke, ExactOnTwoThreadsSplittingRowsOrColumns) {
  for (const char* dt : {"bf16", "u8s8:s8", "u8s8"}) {
    std::string why;
    if (skip(dt[0] == 'b' ? amx::Kind::bf16 : amx::Kind::int8, &why)) GTEST_SKIP() << why;
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        check({203, 97, 2100, ta, tb, dt, 1.0f, 77});  // the rows split, 2-3 KC blocks
        check({16, 700, 600, ta, tb, dt, 0.5f, 128});  // few rows: the columns split
        check({40, 3000, 64, ta, tb, dt, 0.0f, 1});    // a short sum, many columns
        check({20, 60, 3000, ta, tb, dt, 0.5f, 5});    // few rows and columns (A^T in place)
        if (::testing::Test::HasFatalFailure()) return;
      }
  }
}

TEST(PackedLowpAmxSmoke, AnInvalidSwitchIsAnErrorNamingIt) {
  setenv("PRIMBENCH_AMX", "yes", 1);
  try {
    (void)amx::unsupported(amx::Kind::bf16);
    unsetenv("PRIMBENCH_AMX");
    FAIL() << "PRIMBENCH_AMX=yes was taken";
  } catch (const std::exception& e) {
    unsetenv("PRIMBENCH_AMX");
    EXPECT_NE(std::string(e.what()).find("PRIMBENCH_AMX"), std::string::npos) << e.what();
  }
  setenv("PRIMBENCH_AMX", "0", 1);
  const std::string off = amx::unsupported(amx::Kind::int8);
  unsetenv("PRIMBENCH_AMX");
  EXPECT_EQ(off, "PRIMBENCH_AMX=0");
}

}  // namespace lowp_amx_test
}  // namespace pb
