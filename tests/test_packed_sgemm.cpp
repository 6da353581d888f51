// cpu/packed's SGEMM at the edges of its micro-kernel tile and cache blocks: M, N and K one below,
// at and one above each, every transpose, padded leading dimensions, alpha and beta (beta = 0 does
// not read C), against an fp64 reference. ctest runs it on each SIMD path (PRIMBENCH_SIMD).
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kernels/gemm/cpu/packed_sgemm.h"

namespace pb {
namespace {

struct Case {
  bool ta, tb;
  int64_t m, n, k;
  float alpha, beta;
  int64_t pad = 3;  // the leading dimensions' excess over the rows
};

// Checks one case; returns the worst normwise error per column (0 when exact).
void check(const Case& c) {
  const int64_t pad = c.pad;
  const int64_t ar = c.ta ? c.k : c.m, ac = c.ta ? c.m : c.k;
  const int64_t br = c.tb ? c.n : c.k, bc = c.tb ? c.k : c.n;
  const int64_t lda = ar + pad, ldb = br + pad, ldc = c.m + pad;
  std::vector<float> a(lda * ac), b(ldb * bc), cm(ldc * c.n);
  // Small integers: every product and partial sum is exact in fp32 (|sum| < 2^24), so the
  // result must match the fp64 reference exactly whatever the summation order.
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(static_cast<int>(i * 7 % 9) - 4);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(static_cast<int>(i * 5 % 7) - 3);
  for (size_t i = 0; i < cm.size(); ++i)
    cm[i] = c.beta == 0 ? std::numeric_limits<float>::quiet_NaN()
                        : static_cast<float>(static_cast<int>(i % 5) - 2);
  std::vector<float> before = cm;
  sgemm_packed(c.ta, c.tb, c.m, c.n, c.k, c.alpha, a.data(), lda, b.data(), ldb, c.beta, cm.data(),
               ldc);
  for (int64_t j = 0; j < c.n; ++j) {
    for (int64_t i = 0; i < c.m; ++i) {
      double s = 0;
      for (int64_t p = 0; p < c.k; ++p) {
        const double av = c.ta ? a[p + i * lda] : a[i + p * lda];
        const double bv = c.tb ? b[j + p * ldb] : b[p + j * ldb];
        s += av * bv;
      }
      const double want = c.alpha * s + (c.beta == 0 ? 0.0 : c.beta * before[i + j * ldc]);
      ASSERT_EQ(cm[i + j * ldc], static_cast<float>(want))
          << "C(" << i << "," << j << ") of m" << c.m << "n" << c.n << "k" << c.k
          << (c.ta ? "t" : "n") << (c.tb ? "t" : "n") << " alpha " << c.alpha << " beta " << c.beta
          << " (" << sgemm_packed_config() << ")";
    }
    for (int64_t i = c.m; i < ldc; ++i)  // the padding rows of C are never written
      ASSERT_TRUE(std::isnan(before[i + j * ldc]) ? std::isnan(cm[i + j * ldc])
                                                  : cm[i + j * ldc] == before[i + j * ldc])
          << "padding C(" << i << "," << j << ") written";
  }
}

std::vector<int64_t> around(int64_t x) {
  return {x - 1, x, x + 1};
}

// Runs f on one thread and on two, then restores the thread count.
template <class F>
void on_one_and_two_threads(F f) {
  const int saved = omp_get_max_threads();
  for (int nt : {1, 2}) {
    omp_set_num_threads(nt);
    SCOPED_TRACE("threads " + std::to_string(nt));
    f();
  }
  omp_set_num_threads(saved);
}

TEST(PackedSgemmSmoke, TileEdgesEveryTranspose) {
  const SgemmBlocking bl = sgemm_packed_blocking();
  SCOPED_TRACE(sgemm_packed_config());
  std::vector<int64_t> ms = {1}, ns = {1}, ks = {1};
  for (int64_t v : around(bl.mr)) ms.push_back(v);
  for (int64_t v : around(2 * bl.mr)) ms.push_back(v);
  for (int64_t v : around(bl.nr)) ns.push_back(v);
  for (int64_t v : around(3 * bl.nr)) ns.push_back(v);
  for (int64_t v : around(bl.kc)) ks.push_back(v);
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (int64_t m : ms)
        for (int64_t n : ns)
          for (int64_t k : {ks[0], ks[1], ks[3]}) check({ta, tb, m, n, k, 1.0f, 1.0f});
}

TEST(PackedSgemmSmoke, CacheBlockEdges) {
  const SgemmBlocking bl = sgemm_packed_blocking();
  SCOPED_TRACE(sgemm_packed_config());
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      for (int64_t k : around(bl.kc)) check({ta, tb, 2 * bl.mr + 3, bl.nr + 1, k, 1.0f, 0.0f});
      for (int64_t k : {2 * bl.kc + 1}) check({ta, tb, bl.mr + 5, 2 * bl.nr - 1, k, 2.0f, -1.0f});
      for (int64_t m : around(bl.mc)) check({ta, tb, m, bl.nr + 3, 17, 1.0f, 1.0f});
    }
  // Past one NC panel of columns (a few columns of it only, to stay quick).
  check({false, false, bl.mr + 1, bl.nc + bl.nr + 1, 5, 1.0f, 1.0f});
}

// More columns than the in-place paths take (A in place up to 128, dot products up to 32), on one
// thread and on two: few rows read B in place (up to 6 A slivers per thread, 3 on the AVX2
// path), many rows and one
// sliver per thread pack it, and at least 32 B slivers per thread split the columns; every
// transpose, sums around KC.
TEST(PackedSgemmSmoke, PackedAndInPlaceB) {
  const SgemmBlocking bl = sgemm_packed_blocking();
  SCOPED_TRACE(sgemm_packed_config());
  const int64_t n = 3 * bl.nr + 131;
  on_one_and_two_threads([&] {
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        for (int64_t m : {int64_t(1), int64_t(bl.mr - 1), int64_t(bl.mr + 1), 2 * int64_t(bl.mr),
                          2 * int64_t(bl.mr) + 3, 4 * int64_t(bl.mr) + 1, 5 * int64_t(bl.mr) + 7,
                          7 * int64_t(bl.mr)})
          for (int64_t k : {bl.kc - 1, 2 * bl.kc + 3}) check({ta, tb, m, n, k, 1.0f, 0.5f});
        check({ta, tb, 3 * bl.mc + 5, n, bl.kc + 1, 1.0f, 0.0f});
        // One step of the sum, more rows than one block, 32 B slivers per thread and a partial
        // one: on two threads, each takes columns with all the rows.
        for (int64_t k : {int64_t(17), bl.kc})
          check({ta, tb, 2 * bl.mc + 5, 64 * bl.nr + 3, k, 1.0f, 0.5f});
        // Columns split over several steps of the sum (the last one shorter), A in blocks of
        // at most MC rows; past one NC panel, whose last part the threads split otherwise, with
        // B packed (more than 6 A slivers per thread) and read in place (fewer).
        if (ta == tb) check({ta, tb, 2 * bl.mc + 5, 64 * bl.nr + 3, bl.kc + 5, 1.0f, 0.0f});
        for (int64_t m : {int64_t(bl.mr + 5), 2 * bl.mc + 5})
          check({ta, tb, m, bl.nc + 64 * bl.nr + 3, 17, 1.0f, 0.5f});
      }
  });
}

// op(A) = A^T with up to 128 columns is read in place on the AVX-512 and AVX2 paths (tiles of C^T:
// 7 rows of op(A) broadcast against 16 or 32 columns, or 6 against 8 or 16 on AVX2, transposed to
// store): full and partial row groups (114 = 19 x 6) and column slivers (9, 17, 33, 65: tails of
// one and two vectors), sums shorter than one step of 16, at the limits of columns (more than 8
// take that path, more than 32 only with a long sum), and past one KC step (at most 2048); both
// op(B), beta 0 and not, one thread and two (at least 56 rows per thread take it). On the other
// paths, the same products packed.
TEST(PackedSgemmSmoke, ATransposedInPlace) {
  SCOPED_TRACE(sgemm_packed_config());
  on_one_and_two_threads([&] {
    for (bool tb : {false, true})
      for (int64_t n : {8, 9, 16, 17, 32, 33, 48, 64, 65, 128})
        for (int64_t m : {112, 113, 114, 118})
          for (int64_t k : {17, 385, 2049}) {
            check({true, tb, m, n, k, 1.5f, 0.5f});
            if (k == 385) check({true, tb, m, n, k, 1.0f, 0.0f});
          }
  });
}

// op(A) = A is read in place up to 64 columns, and up to 128 with at least 4 rows per column:
// around both limits of columns and rows, partial A and B slivers, on one thread and on two.
TEST(PackedSgemmSmoke, AInPlaceUpTo128Columns) {
  const SgemmBlocking bl = sgemm_packed_blocking();
  SCOPED_TRACE(sgemm_packed_config());
  on_one_and_two_threads([&] {
    for (bool tb : {false, true})
      for (int64_t n : {int64_t(65), int64_t(8 * bl.nr + 3), int64_t(128), int64_t(129)})
        for (int64_t m : {4 * n - 1, 4 * n, 4 * n + bl.mr + 1})
          check({false, tb, m, n, bl.kc + 1, 1.0f, 0.5f});
    check({false, false, 512, 128, 2 * bl.kc + 3, 2.0f, 0.0f});
  });
}

// On the AVX2 path an in-place A sliver whose 64 columns fit L1's sets sums 64 deep at a time
// (sliver_fits_l1): sums around 1, 2 and 3 such blocks, with A's columns an odd number of floats
// apart (fits) and a power of two lines apart (2048 floats: never fits, the full depth, and from
// 64 columns the packed path); beta applies once, in the first block,
// whatever the depth.
TEST(PackedSgemmSmoke, AInPlaceAtTheL1Depth) {
  SCOPED_TRACE(sgemm_packed_config());
  on_one_and_two_threads([&] {
    for (int64_t m : {int64_t(77), int64_t(2048 - 3)})
      for (int64_t k : {int64_t(63), int64_t(64), int64_t(65), int64_t(128), int64_t(129),
                        int64_t(193), int64_t(300)})
        for (int64_t n : {int64_t(16), int64_t(37), int64_t(64), int64_t(101)}) {
          check({false, false, m, n, k, 1.0f, 0.0f});
          check({false, true, m, n, k, 2.0f, 0.5f});
        }
    check({false, false, 3136, 64, 256, 1.0f, 0.0f, 0});  // a ResNet-50 1x1 layer's image
  });
}

// A^T x B with few columns runs as chunked dot products (no pack) of 8192 terms where the in-place
// tiles above do not take it (up to 8 columns, or fewer than 56 rows per thread): each thread
// takes its rows through every chunk (k = 4 * 2048 + 17 is two chunks on that path), or a long
// sum (12 * 2048 + 5, four chunks) is split across threads into partials added at the end.
TEST(PackedSgemmSmoke, TransposedAFewColumnsLongSums) {
  for (int64_t k :
       {int64_t(1), int64_t(2047), int64_t(2049), int64_t(4 * 2048 + 17), int64_t(12 * 2048 + 5)})
    for (int64_t m : {int64_t(3), int64_t(37)}) check({true, false, m, 19, k, 1.0f, 0.5f});
  check({true, false, 600, 16, 3 * 2048, 1.0f, 0.0f});
  // Its tiles are 6 rows of op(A) by 4 columns of B, the last rows of a thread's range one at a
  // time: M one below, at and one above one and two row groups per thread, N around one column
  // group and at the path's limit, on one thread and on two.
  on_one_and_two_threads([&] {
    for (int64_t m : {5, 6, 7, 11, 12, 13, 23, 24, 25})
      for (int64_t n : {3, 4, 5, 32}) check({true, false, m, n, 35, 1.0f, 0.5f});
  });
}

TEST(PackedSgemmSmoke, AlphaBetaAndEmptySums) {
  for (float alpha : {0.0f, 1.0f, -2.0f})
    for (float beta : {0.0f, 1.0f, 0.5f}) check({false, true, 13, 9, 33, alpha, beta});
  check({true, false, 7, 5, 0, 1.0f, 2.0f});  // k = 0: C = beta C
  check({false, false, 0, 5, 3, 1.0f, 1.0f});
}

TEST(PackedSgemmSmoke, OneThreadAndInsideAParallelRegion) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  check({false, false, 100, 20, 300, 1.0f, 1.0f});
  omp_set_num_threads(saved);
  // Called by every thread of a parallel region at once: each runs alone, results intact.
  bool ok = true;
#pragma omp parallel num_threads(2) reduction(&& : ok)
  {
    const int64_t m = 50 + omp_get_thread_num(), n = 9, k = 70;
    std::vector<float> a(m * k, 1.0f), b(k * n, 2.0f), c(m * n, 0.0f);
    sgemm_packed(false, false, m, n, k, 1.0f, a.data(), m, b.data(), k, 0.0f, c.data(), m);
    for (float v : c) ok = ok && v == 2.0f * k;
  }
  EXPECT_TRUE(ok);
}

}  // namespace
}  // namespace pb
