// cpu/packed's u8s8 GEMM with the operands' roles swapped (LowpGemm::u8_a: A the u8 source, B
// the s8 weights, the scales and the zero point's compensation per column of C), on the AVX-512
// VNNI kernels: cpu/im2col's u8s8 1x1 layers write NCHW with it. Full-range data, every
// transpose, rows around the 16-row vectors and the 48-row sliver, columns around the 8-column
// tile, sums around the 4-element groups and the 2048-deep k block (the fp32 panel of an s8 C),
// padded leading dimensions, f32 and s8 outputs, beta 0, 1 and 0.5, zero points 0 to 255, one
// and two threads. Scales are powers of two, so each C element must equal the int64 reference
// (lowp_expected.h's rounding), and C's padding rows stay untouched.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/core/dtype.h"
#include "kernels/core/error.h"
#include "kernels/core/threads.h"
#include "kernels/gemm/cpu/packed_lowp.h"
#include "tests/lowp_expected.h"

namespace pb {
namespace lowp_u8a_test {  // (named: the unity build joins test files)

struct Case {
  int64_t m, n, k;
  bool ta, tb;
  bool s8;
  float beta;
  int32_t zero;
};

std::string name_of(const Case& c) {
  return "m" + std::to_string(c.m) + "n" + std::to_string(c.n) + "k" + std::to_string(c.k) +
         (c.ta ? "t" : "n") + (c.tb ? "t" : "n") + (c.s8 ? " s8" : " f32") + " beta " +
         std::to_string(c.beta) + " zero " + std::to_string(c.zero);
}

// Where the swapped kernels run: u8s8 on the AVX-512 VNNI driver (not the AVX2 one).
std::string skip_reason() {
  const DataType dt = DataType::parse("u8s8", "dt");
  const std::string why = gemm_packed_lowp_unsupported(dt);
  if (!why.empty()) return why;
  if (gemm_packed_lowp_on_avx2(dt)) return "u8s8 runs on the AVX2 kernel here (no AVX-512 VNNI)";
  return "";
}

void check(const Case& c) {
  const int64_t ar = c.ta ? c.k : c.m, ac = c.ta ? c.m : c.k;  // A as stored
  const int64_t br = c.tb ? c.n : c.k, bc = c.tb ? c.k : c.n;  // B as stored
  const int64_t lda = ar + 3, ldb = br + 5, ldc = c.m + 4;
  std::vector<uint8_t> a(lda * ac);
  std::vector<int8_t> b(ldb * bc);
  uint32_t x = static_cast<uint32_t>(c.m * 131 + c.n * 17 + c.k);
  auto next = [&] { return x = x * 1664525u + 1013904223u, x >> 8; };
  for (auto& v : a) v = static_cast<uint8_t>(next() % 256);
  for (auto& v : b) v = static_cast<int8_t>(static_cast<int>(next() % 256) - 128);
  std::vector<float> col_scale(c.n);
  for (int64_t j = 0; j < c.n; ++j) col_scale[j] = std::ldexp(1.0f, static_cast<int>(j % 3) - 13);
  const float b_scale = 0.5f, c_scale = c.s8 ? 0.25f : 2.0f, alpha = 2.0f;
  std::vector<float> c32(ldc * c.n);
  std::vector<int8_t> c8(ldc * c.n);
  for (size_t i = 0; i < c32.size(); ++i) {
    c32[i] = static_cast<float>(static_cast<int>(next() % 201) - 100);
    c8[i] = static_cast<int8_t>(static_cast<int>(next() % 256) - 128);
  }
  const std::vector<float> c32_old = c32;
  const std::vector<int8_t> c8_old = c8;

  LowpGemm g;
  g.dt = DataType::parse(c.s8 ? "u8s8:s8" : "u8s8", "dt");
  g.u8_a = true;
  g.ta = c.ta, g.tb = c.tb;
  g.m = c.m, g.n = c.n, g.k = c.k;
  g.a = a.data(), g.lda = lda, g.b = b.data(), g.ldb = ldb;
  g.c = c.s8 ? static_cast<void*>(c8.data()) : c32.data(), g.ldc = ldc;
  g.alpha = alpha, g.beta = c.beta;
  g.a_scale = col_scale.data(), g.b_scale = b_scale, g.c_scale = c_scale, g.b_zero = c.zero;
  gemm_packed_lowp(g);

  const std::string name = name_of(c);
  for (int64_t j = 0; j < c.n; ++j)
    for (int64_t i = 0; i < ldc; ++i) {
      const int64_t at = i + j * ldc;
      if (i >= c.m) {
        ASSERT_TRUE(c.s8 ? c8[at] == c8_old[at] : c32[at] == c32_old[at])
            << "padding C[" << at << "] written, " << name;
        continue;
      }
      int64_t sum = 0;
      for (int64_t p = 0; p < c.k; ++p) {
        const int av = a[c.ta ? p + i * lda : i + p * lda];
        const int bv = b[c.tb ? j + p * ldb : p + j * ldb];
        sum += static_cast<int64_t>(av - c.zero) * bv;
      }
      const double scale =
          static_cast<double>(alpha) * col_scale[j] * b_scale / (c.s8 ? c_scale : 1);
      ASSERT_TRUE(lowp_test::u8s8_element(c.s8, sum, scale, c.beta, c_scale, c32[at], c32_old[at],
                                          c8[at], c8_old[at]))
          << "C(" << i << "," << j << ") sum " << sum << ", " << name;
    }
}

TEST(PackedLowpU8aSmoke, ExactAtTheTileAndBlockEdges) {
  const std::string why = skip_reason();
  if (!why.empty()) GTEST_SKIP() << why;
  int i = 0;
  for (int64_t m : {1, 15, 16, 17, 47, 48, 49, 97})
    for (int64_t n : {1, 7, 8, 9, 17})
      for (int64_t k : {1, 3, 4, 5, 64, 2047, 2048, 2049}) {
        const bool ta = i % 2, tb = (i / 2) % 2, s8 = (i / 4) % 2;
        const float beta = i % 3 == 0 ? 0.0f : i % 3 == 1 ? 1.0f : 0.5f;
        const int32_t zero = i % 4 == 0 ? 0 : i % 4 == 1 ? 3 : i % 4 == 2 ? 128 : 255;
        check({m, n, k, ta, tb, s8, beta, zero});
        ++i;
      }
}

TEST(PackedLowpU8aSmoke, ExactOnOneAndTwoThreads) {
  const std::string why = skip_reason();
  if (!why.empty()) GTEST_SKIP() << why;
  const int saved = threads();
  for (int t : {1, 2}) {
    set_threads(t);
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        check({3136, 64, 256, ta, tb, false, 0.0f, 17});  // a 56x56 image, 256 -> 64
        check({203, 97, 1100, ta, tb, false, 1.0f, 77});  // the rows split
        check({16, 700, 600, ta, tb, true, 0.5f, 128});   // few rows: the columns split
      }
  }
  set_threads(saved);
}

// Roles swapped on a kernel that has no such form, or with a packed A or C^T: an error.
TEST(PackedLowpU8aSmoke, UnsupportedCombinationsAreRefused) {
  const std::string why = skip_reason();
  if (!why.empty()) GTEST_SKIP() << why;
  std::vector<uint8_t> a(64, 1);
  std::vector<int8_t> b(64, 1);
  std::vector<float> c(64), scale(8, 1.0f);
  LowpGemm g;
  g.dt = DataType::parse("u8s8", "dt");
  g.u8_a = true;
  g.m = g.n = g.k = 8;
  g.a = a.data(), g.lda = 8, g.b = b.data(), g.ldb = 8, g.c = c.data(), g.ldc = 8;
  g.a_scale = scale.data();
  g.c_trans = true;
  EXPECT_THROW(gemm_packed_lowp(g), RuntimeError);
  g.c_trans = false;
  EXPECT_NO_THROW(gemm_packed_lowp(g));
  EXPECT_EQ(c[0], 8.0f);  // 8 products of 1 x 1, zero point 0
}

}  // namespace lowp_u8a_test
}  // namespace pb
