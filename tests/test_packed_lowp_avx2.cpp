// cpu/packed's AVX2 u8s8 GEMM (packed_lowp_avx2.h), called directly so that it runs on every x86
// CPU (gemm_packed_lowp takes it only without VNNI). Full-range data (s8 weights, u8 source with a
// zero point), every transpose, rows around its 8-row vectors and 16-row sliver, columns around
// its 4-column tile, sums around its pairs and its k blocks (at most 512 deep, split evenly: the
// int32 panel), padded leading dimensions, f32 and s8 outputs, beta 0, 1 and 0.5, one and two
// threads with the rows or the columns split. Scales are powers of two, so every result is exact:
// the int32 sum, its conversion to fp32 (rounded to nearest as the reference's), the scale and one
// rounding with beta * C; each C element must equal the int64 reference, and C's padding rows stay
// untouched.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/core/dtype.h"
#include "kernels/gemm/cpu/packed_lowp.h"
#include "kernels/gemm/cpu/packed_lowp_avx2.h"
#include "tests/lowp_expected.h"

namespace pb {
namespace lowp_avx2_test {  // (named: the unity build joins test files)

struct Case {
  int64_t m, n, k;
  bool ta, tb;
  bool s8;
  float beta;
  int32_t zero;
  bool trans = false;  // C stored transposed (LowpGemm::c_trans)
};

std::string name_of(const Case& c) {
  return "m" + std::to_string(c.m) + "n" + std::to_string(c.n) + "k" + std::to_string(c.k) +
         (c.ta ? "t" : "n") + (c.tb ? "t" : "n") + (c.s8 ? " s8" : " f32") + " beta " +
         std::to_string(c.beta) + " zero " + std::to_string(c.zero) + (c.trans ? " C^T" : "");
}

// Runs one case and compares every element of C (and its padding) with the exact reference.
void check(const Case& c) {
  const int64_t ar = c.ta ? c.k : c.m, ac = c.ta ? c.m : c.k;  // A as stored
  const int64_t br = c.tb ? c.n : c.k, bc = c.tb ? c.k : c.n;  // B as stored
  // C as stored: ldc x outer, element (i, j) at `at` below; rows past the inner size are padding.
  const int64_t inner = c.trans ? c.n : c.m, outer = c.trans ? c.m : c.n;
  const int64_t lda = ar + 3, ldb = br + 5, ldc = inner + 4;
  std::vector<int8_t> a(lda * ac);
  std::vector<uint8_t> b(ldb * bc);
  uint32_t x = static_cast<uint32_t>(c.m * 131 + c.n * 17 + c.k);
  auto next = [&] { return x = x * 1664525u + 1013904223u, x >> 8; };
  for (auto& v : a) v = static_cast<int8_t>(static_cast<int>(next() % 256) - 128);
  for (auto& v : b) v = static_cast<uint8_t>(next() % 256);
  std::vector<float> a_scale(c.m);
  for (int64_t i = 0; i < c.m; ++i) a_scale[i] = std::ldexp(1.0f, static_cast<int>(i % 3) - 13);
  const float b_scale = 0.5f, c_scale = c.s8 ? 0.25f : 2.0f, alpha = 2.0f;

  std::vector<float> c32(ldc * outer);
  std::vector<int8_t> c8(ldc * outer);
  for (size_t i = 0; i < c32.size(); ++i) {
    c32[i] = static_cast<float>(static_cast<int>(next() % 201) - 100);
    c8[i] = static_cast<int8_t>(static_cast<int>(next() % 256) - 128);
  }
  const std::vector<float> c32_old = c32;
  const std::vector<int8_t> c8_old = c8;

  LowpGemm g;
  g.dt = DataType::parse(c.s8 ? "u8s8:s8" : "u8s8", "dt");
  g.ta = c.ta, g.tb = c.tb;
  g.m = c.m, g.n = c.n, g.k = c.k;
  g.a = a.data(), g.lda = lda, g.b = b.data(), g.ldb = ldb;
  g.c = c.s8 ? static_cast<void*>(c8.data()) : c32.data(), g.ldc = ldc;
  g.alpha = alpha, g.beta = c.beta;
  g.a_scale = a_scale.data(), g.b_scale = b_scale, g.c_scale = c_scale, g.b_zero = c.zero;
  g.c_trans = c.trans;
  lowp_avx2::gemm_u8s8(g);

  const std::string name = name_of(c);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < ldc; ++in) {
      const int64_t at = in + o * ldc;
      const int64_t i = c.trans ? o : in, j = c.trans ? in : o;
      if (in >= inner) {
        ASSERT_TRUE(c.s8 ? c8[at] == c8_old[at] : c32[at] == c32_old[at])
            << "padding C[" << at << "] written, " << name;
        continue;
      }
      int64_t sum = 0;
      for (int64_t p = 0; p < c.k; ++p) {
        const int av = a[c.ta ? p + i * lda : i + p * lda];
        const int bv = b[c.tb ? j + p * ldb : p + j * ldb];
        sum += static_cast<int64_t>(av) * (bv - c.zero);
      }
      // The kernel's order: fp32(sum) * the row's scale, then + beta * C in one rounding.
      const double scale = static_cast<double>(alpha) * a_scale[i] * b_scale / (c.s8 ? c_scale : 1);
      ASSERT_TRUE(lowp_test::u8s8_element(c.s8, sum, scale, c.beta, c_scale, c32[at], c32_old[at],
                                          c8[at], c8_old[at]))
          << "C(" << i << "," << j << ") sum " << sum << ", " << name;
    }
}

TEST(PackedLowpAvx2Smoke, ExactAtTheTileAndBlockEdges) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
    GTEST_SKIP() << "no AVX2 and FMA";
  int i = 0;
  for (int64_t m : {1, 7, 8, 9, 15, 16, 17, 33})
    for (int64_t n : {1, 3, 4, 5, 9})
      for (int64_t k : {1, 2, 3, 511, 512, 513, 1025}) {
        // Every transpose, output and beta over the cases (each combination many times).
        const bool ta = i % 2, tb = (i / 2) % 2, s8 = (i / 4) % 2;
        const float beta = i % 3 == 0 ? 0.0f : i % 3 == 1 ? 1.0f : 0.5f;
        const int32_t zero = i % 4 == 0 ? 0 : i % 4 == 1 ? 3 : i % 4 == 2 ? 128 : 255;
        check({m, n, k, ta, tb, s8, beta, zero, i % 5 == 0});
        ++i;
      }
}

TEST(PackedLowpAvx2Smoke, ExactOnTwoThreadsSplittingRowsOrColumns) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
    GTEST_SKIP() << "no AVX2 and FMA";
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      check({203, 97, 1100, ta, tb, false, 1.0f, 77});  // the rows split
      check({16, 700, 600, ta, tb, true, 0.5f, 128});   // few rows: the columns split
      check({40, 3000, 64, ta, tb, false, 0.0f, 1});    // a short sum, many columns
    }
}

// A sum longer than an int32 holds for every data (k > 65793): all weights -128, all sources 255
// with zero point 0 give -128 * 255 * k, past INT32_MIN at k = 70000. Each 512-deep block stays
// int32 and the blocks add in fp32, so the result is within k / 512 fp32 roundings of the sum.
TEST(PackedLowpAvx2Smoke, SumsPastInt32AddBlocksInFp32) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
    GTEST_SKIP() << "no AVX2 and FMA";
  const int64_t m = 17, n = 3, k = 70000;
  std::vector<int8_t> a(m * k, -128);
  std::vector<uint8_t> b(k * n, 255);
  std::vector<float> c(m * n, 0.0f), scale(m, 1.0f);
  LowpGemm g;
  g.dt = DataType::parse("u8s8", "dt");
  g.m = m, g.n = n, g.k = k;
  g.a = a.data(), g.lda = m, g.b = b.data(), g.ldb = k, g.c = c.data(), g.ldc = m;
  g.a_scale = scale.data(), g.beta = 0;
  lowp_avx2::gemm_u8s8(g);
  const double want = -128.0 * 255.0 * k;
  for (int64_t i = 0; i < m * n; ++i)
    ASSERT_NEAR(c[i], want, 1e-5 * std::fabs(want)) << "C[" << i << "]";
}

}  // namespace lowp_avx2_test
}  // namespace pb
