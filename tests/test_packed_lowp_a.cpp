// cpu/packed's reduced-precision GEMM with A interleaved once (LowpPackedA, an RNN's recurrent
// weights): the in-place path for few columns (N <= 64) reads the packed blocks instead of A. On
// integer data every sum is exact, so the packed and the unpacked calls must both equal the fp64
// reference exactly, with rows around the 64-row block, columns around the 4-column group and the
// 64-column limit (and up to 128 on a large A), sums around the groups of 2 (bf16) and 4 (u8s8) and
// past the unpacked path's sum chunks, padded leading dimensions, beta 0 and 1. Skipped where this
// CPU lacks the type.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "kernels/core/dtype.h"
#include "kernels/gemm/cpu/packed_lowp.h"

namespace pb {
namespace {

struct Shape {
  int64_t m, n, k;
};

// row_step > 1: only every row_step-th row of C (and the last) is compared with the reference.
void check(const DataType& dt, const Shape& s, float beta, int64_t row_step = 1) {
  const bool u8 = dt.in == DataType::u8s8;
  const int64_t lda = s.m + 5, ldb = s.k + 3, ldc = s.m + 2;
  const int32_t zero = u8 ? 128 : 0;
  std::vector<double> av(lda * s.k), bv(ldb * s.n);
  std::vector<int8_t> a8(av.size());
  std::vector<uint16_t> a16(av.size()), b16(bv.size());
  std::vector<uint8_t> b8(bv.size());
  for (size_t i = 0; i < av.size(); ++i) {
    av[i] = static_cast<int>((i * 7 + s.k) % 11) - 5;
    a8[i] = static_cast<int8_t>(av[i]);
    a16[i] = to_bf16(static_cast<float>(av[i]));
  }
  for (size_t i = 0; i < bv.size(); ++i) {
    const int v = static_cast<int>((i * 5 + s.m) % 9) - 4;
    bv[i] = v;
    b8[i] = static_cast<uint8_t>(v + zero);
    b16[i] = to_bf16(static_cast<float>(v));
  }
  std::vector<float> scale(s.m);
  for (int64_t i = 0; i < s.m; ++i) scale[i] = (i % 3 == 0) ? 0.5f : 2.0f;
  std::vector<float> c0(ldc * s.n);
  for (size_t i = 0; i < c0.size(); ++i) c0[i] = static_cast<float>(static_cast<int>(i % 7) - 3);

  LowpGemm g;
  g.dt = dt;
  g.m = s.m, g.n = s.n, g.k = s.k;
  g.a = u8 ? static_cast<const void*>(a8.data()) : a16.data(), g.lda = lda;
  g.b = u8 ? static_cast<const void*>(b8.data()) : b16.data(), g.ldb = ldb;
  g.ldc = ldc;
  g.beta = beta;
  if (u8) g.a_scale = scale.data(), g.b_scale = 0.25f, g.b_zero = zero;
  const LowpPackedA packed(dt, s.m, s.k, g.a, lda);

  std::vector<float> plain = c0, with = c0;
  g.c = plain.data();
  gemm_packed_lowp(g);
  g.c = with.data();
  g.a_packed = &packed;
  gemm_packed_lowp(g);

  const std::string name = "m" + std::to_string(s.m) + "n" + std::to_string(s.n) + "k" +
                           std::to_string(s.k) + " " + dt.str() + " beta " + std::to_string(beta);
  for (int64_t j = 0; j < s.n; ++j)
    for (int64_t i = 0; i < ldc; ++i) {
      const int64_t at = i + j * ldc;
      if (i >= s.m) {  // padding rows are never written
        ASSERT_EQ(with[at], c0[at]) << "padding C(" << i << "," << j << ") written, " << name;
        continue;
      }
      if (i % row_step != 0 && i != s.m - 1) continue;
      double sum = 0;
      for (int64_t p = 0; p < s.k; ++p) sum += av[i + p * lda] * bv[p + j * ldb];
      const double sc = u8 ? scale[i] * 0.25 : 1.0;
      const float want = static_cast<float>(sc * sum + beta * c0[at]);
      ASSERT_EQ(plain[at], want) << "unpacked C(" << i << "," << j << "), " << name;
      ASSERT_EQ(with[at], want) << "packed C(" << i << "," << j << "), " << name;
    }
}

TEST(PackedLowpASmoke, PackedAEqualsUnpackedAtTheBlockEdges) {
  int ran = 0;
  for (const char* type : {"bf16", "u8s8"}) {
    const DataType dt = DataType::parse(type, "dt");
    const std::string why = gemm_packed_lowp_unsupported(dt);
    if (!why.empty()) {
      std::printf("skipped %s: %s\n", type, why.c_str());
      continue;
    }
    for (int64_t m : {1, 63, 64, 65, 130})
      for (int64_t n : {1, 3, 4, 5, 17, 64})
        for (int64_t k : {1, 2, 3, 5, 8, 1027, 4101}) {
          if (m * n * k > 4000000) continue;
          for (float beta : {0.0f, 1.0f}) check(dt, {m, n, k}, beta);
          ++ran;
        }
  }
  if (ran == 0) GTEST_SKIP() << "no reduced type runs on this CPU";
}

// 32-128 columns of a large A (12-25 MB): the unpacked call reads A in place (over 64 columns:
// more column groups per block, longer sum chunks), the packed one takes the packed path over 64
// columns; rows past a 64-row block's edge, sums past the chunks and the groups of 2 and 4.
TEST(PackedLowpASmoke, WideProductsOfALargeA) {
  int ran = 0;
  for (const char* type : {"bf16", "u8s8"}) {
    const DataType dt = DataType::parse(type, "dt");
    if (!gemm_packed_lowp_unsupported(dt).empty()) continue;
    for (int64_t n : {32, 64, 65, 100, 128}) check(dt, {4000, n, 3101}, 1.0f, 37), ++ran;
  }
  if (ran == 0) GTEST_SKIP() << "no reduced type runs on this CPU";
}

TEST(PackedLowpASmoke, PackedAOfAnotherShapeIsRefused) {
  const DataType dt = DataType::parse("bf16", "dt");
  if (!gemm_packed_lowp_unsupported(dt).empty()) GTEST_SKIP() << "no bf16 here";
  std::vector<uint16_t> a(64 * 8, to_bf16(1.0f)), b(8 * 2, to_bf16(1.0f));
  std::vector<float> c(64 * 2);
  const LowpPackedA packed(dt, 64, 8, a.data(), 64);
  LowpGemm g;
  g.dt = dt;
  g.m = 64, g.n = 2, g.k = 6;  // another k than the packed one
  g.a = a.data(), g.lda = 64, g.b = b.data(), g.ldb = 8, g.c = c.data(), g.ldc = 64;
  g.a_packed = &packed;
  EXPECT_ANY_THROW(gemm_packed_lowp(g));
}

}  // namespace
}  // namespace pb
