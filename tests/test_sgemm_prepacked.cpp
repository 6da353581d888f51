// cpu/packed's products with an A packed once (SgemmPackedA, sgemm_prepacked): equal to
// sgemm_packed on the same operands, exactly (integer data), at the micro-kernel's row edges,
// for every column count up to 64 and past the column block, sums around the in-place chunk,
// every transpose, alpha and beta (beta 0 does not read C), row groups; bad calls are refused.
// ctest runs it on each SIMD path (PRIMBENCH_SIMD).
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kernels/core/error.h"
#include "kernels/gemm/cpu/packed_sgemm.h"

// Its own namespace: the unity build compiles it with test_packed_sgemm.cpp, whose Case and
// check() have the same names.
namespace pb::prepacked_test {
namespace {

struct Case {
  bool ta, tb;
  int64_t m, n, k;
  float alpha, beta;
};

std::string name(const Case& c) {
  return "m" + std::to_string(c.m) + "n" + std::to_string(c.n) + "k" + std::to_string(c.k) +
         (c.ta ? "t" : "n") + (c.tb ? "t" : "n") + " alpha " + std::to_string(c.alpha) + " beta " +
         std::to_string(c.beta) + " (" + sgemm_packed_config() + ")";
}

// Operands with padded leading dimensions, small integers: every product and partial sum is
// exact in fp32, so any summation order gives the same bits.
struct Operands {
  int64_t lda, ldb, ldc;
  std::vector<float> a, b, c;
  Operands(const Case& k, int64_t pad = 3) {
    const int64_t ar = k.ta ? k.k : k.m, ac = k.ta ? k.m : k.k;
    const int64_t br = k.tb ? k.n : k.k, bc = k.tb ? k.k : k.n;
    lda = ar + pad, ldb = br + pad, ldc = k.m + pad;
    a.resize(lda * ac), b.resize(ldb * bc), c.resize(ldc * k.n);
    for (size_t i = 0; i < a.size(); ++i) a[i] = float(int(i * 7 % 9) - 4);
    for (size_t i = 0; i < b.size(); ++i) b[i] = float(int(i * 5 % 7) - 3);
    // beta 0 must not read C: NaN there would poison any product that did.
    for (size_t i = 0; i < c.size(); ++i)
      c[i] = k.beta == 0 ? std::numeric_limits<float>::quiet_NaN() : float(int(i % 5) - 2);
  }
};

// Bit-equal floats, NaN equal to NaN (the padding rows of C keep theirs).
bool same(float x, float y) {
  return (std::isnan(x) && std::isnan(y)) || x == y;
}

// The prepacked product (every group, threads as gemm_threads says) against sgemm_packed.
void check(const Case& c) {
  Operands o(c);
  std::vector<float> want = o.c, got = o.c;
  sgemm_packed(c.ta, c.tb, c.m, c.n, c.k, c.alpha, o.a.data(), o.lda, o.b.data(), o.ldb, c.beta,
               want.data(), o.ldc);
  SgemmPackedA pa;
  pa.pack(c.ta, c.m, c.k, o.a.data(), o.lda);
  sgemm_prepacked(pa, c.tb, c.n, c.alpha, o.b.data(), o.ldb, c.beta, got.data(), o.ldc);
  for (int64_t j = 0; j < c.n; ++j)
    for (int64_t i = 0; i < o.ldc; ++i)  // the padding rows too: never written
      ASSERT_TRUE(same(got[i + j * o.ldc], want[i + j * o.ldc]))
          << "C(" << i << "," << j << ") " << got[i + j * o.ldc] << " vs sgemm_packed's "
          << want[i + j * o.ldc] << " for " << name(c);
}

// Rows around the micro-kernel's sliver (mr) and its vectors (16 and 8 rows), up to 3 slivers.
std::vector<int64_t> edge_rows() {
  const int64_t mr = sgemm_packed_blocking().mr;
  std::vector<int64_t> v = {1, 7, 8, 9, 15, 16, 17, 31, 32, 33};
  for (int64_t x : {mr, 2 * mr}) v.insert(v.end(), {x - 1, x, x + 1});
  v.push_back(3 * mr + 5);
  return v;
}

TEST(SgemmPrepackedSmoke, EveryColumnCountAtTheRowEdges) {
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (int64_t m : edge_rows())
        for (int64_t n = 1; n <= 66; ++n) check({ta, tb, m, n, 131, 1.0f, n % 2 ? 0.0f : 1.0f});
}

TEST(SgemmPrepackedSmoke, SumsAroundTheChunksAlphaBeta) {
  const int64_t mr = sgemm_packed_blocking().mr;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (int64_t k : {1, 2, 3, 127, 128, 129, 255, 257, 513})
        for (int64_t n : {1, 8, 9, 33, 64})
          for (auto ab : {std::pair{1.0f, 0.0f}, {1.0f, 1.0f}, {-2.0f, 0.5f}, {3.0f, -1.0f}})
            check({ta, tb, mr + 5, n, k, ab.first, ab.second});
  // alpha 0 and an empty sum: C = beta C (0 where beta is 0, NaN not read).
  for (float beta : {0.0f, 1.0f, 2.0f}) {
    check({false, false, 2 * mr + 1, 9, 17, 0.0f, beta});
    check({true, false, 2 * mr + 1, 9, 0, 1.0f, beta});
  }
  check({false, false, 0, 5, 3, 1.0f, 1.0f});
  check({false, false, 5, 0, 3, 1.0f, 1.0f});
}

// Many columns (past the block of columns whose whole sum fits half of L2) and products large
// enough to run on every thread.
TEST(SgemmPrepackedSmoke, ManyColumnsAndThreads) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      check({ta, tb, 203, 300, 2049, 1.0f, 1.0f});
      check({ta, tb, 4 * 96 + 1, 64, 257, 1.0f, 0.0f});
    }
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  check({false, false, 200, 64, 300, 1.0f, 1.0f});
  omp_set_num_threads(saved);
}

// Row groups (an RNN's gates): each group's product writes its rows of C and no other; a group
// starts its own sliver, so a group of rows not a multiple of mr leaves a short sliver inside A.
// Its slivers in reverse order give the same C, and so do lists of groups on one thread (B
// packed once for the list).
TEST(SgemmPrepackedSmoke, RowGroupsWriteTheirRowsOnly) {
  const int64_t mr = sgemm_packed_blocking().mr;
  for (bool ta : {false, true})
    for (bool reverse : {false, true})
      for (int64_t n : {1, 2, 17}) {
        const int64_t h = 2 * mr + 3, m = 4 * h + 2;  // the last two rows in no group
        const Case c{ta, false, m, n, 129, 1.0f, 1.0f};
        Operands o(c);
        std::vector<float> want = o.c, got = o.c;
        sgemm_packed(c.ta, c.tb, c.m, c.n, c.k, 1.0f, o.a.data(), o.lda, o.b.data(), o.ldb, 1.0f,
                     want.data(), o.ldc);
        std::vector<SgemmPackedA::Rows> groups;
        for (int64_t g = 0; g < 4; ++g) groups.push_back({g * h, h});
        SgemmPackedA pa;
        pa.pack(c.ta, c.m, c.k, o.a.data(), o.lda, groups);
        ASSERT_EQ(pa.groups(), 4u);
        const SgemmPackedA copy = pa;  // a copy keeps the layout
        // Threads that each own groups, as a caller splitting the gates would.
#pragma omp parallel for num_threads(2)
        for (int g = 0; g < 4; ++g)
          sgemm_prepacked(g % 2 ? copy : pa, g, false, c.n, 1.0f, o.b.data(), o.ldb, 1.0f,
                          got.data(), o.ldc, reverse);
        // Each thread a list of groups, as a caller sharing every gate's rows would.
        std::vector<float> listed = o.c;
        const size_t lists[2][2] = {{0, 2}, {3, 1}};
#pragma omp parallel for num_threads(2)
        for (int t = 0; t < 2; ++t)
          sgemm_prepacked(t ? copy : pa, lists[t], 2, false, c.n, 1.0f, o.b.data(), o.ldb, 1.0f,
                          listed.data(), o.ldc, reverse);
        for (const std::vector<float>* out : {&got, &listed})
          for (int64_t j = 0; j < c.n; ++j)
            for (int64_t i = 0; i < o.ldc; ++i) {
              const float before = o.c[i + j * o.ldc];
              const float expect = i < 4 * h ? want[i + j * o.ldc] : before;
              ASSERT_TRUE(same((*out)[i + j * o.ldc], expect))
                  << "C(" << i << "," << j << ") " << (*out)[i + j * o.ldc] << " vs " << expect
                  << " for " << name(c) << " in groups of " << h << (reverse ? ", reversed" : "")
                  << (out == &listed ? ", groups listed" : "");
            }
      }
}

TEST(SgemmPrepackedSmoke, BadCallsNameTheField) {
  std::vector<float> a(64 * 64, 1.0f), b(64 * 64, 1.0f), c(64 * 64, 0.0f);
  auto field = [](auto&& f) {
    try {
      f();
    } catch (const InputError& e) {
      return e.field();
    }
    return std::string("(none)");
  };
  SgemmPackedA pa;
  EXPECT_EQ(field([&] { sgemm_prepacked(pa, false, 4, 1.0f, b.data(), 8, 0.0f, c.data(), 8); }),
            "a");
  EXPECT_EQ(field([&] { pa.pack(false, -1, 8, a.data(), 8); }), "m");
  EXPECT_EQ(field([&] { pa.pack(false, 8, -1, a.data(), 8); }), "k");
  EXPECT_EQ(field([&] { pa.pack(false, 8, 4, a.data(), 7); }), "lda");
  EXPECT_EQ(field([&] { pa.pack(true, 8, 9, a.data(), 8); }), "lda");
  EXPECT_EQ(field([&] { pa.pack(false, 8, 4, a.data(), 8, {{0, 5}, {4, 4}}); }), "groups");
  EXPECT_EQ(field([&] { pa.pack(false, 8, 4, a.data(), 8, {{4, 5}}); }), "groups");
  pa.pack(false, 8, 4, a.data(), 8, {{0, 4}, {4, 4}});
  EXPECT_EQ(field([&] { sgemm_prepacked(pa, 2, false, 4, 1.0f, b.data(), 4, 0.0f, c.data(), 8); }),
            "group");
  EXPECT_EQ(field([&] { sgemm_prepacked(pa, false, -1, 1.0f, b.data(), 4, 0.0f, c.data(), 8); }),
            "n");
  EXPECT_EQ(field([&] { sgemm_prepacked(pa, false, 4, 1.0f, b.data(), 3, 0.0f, c.data(), 8); }),
            "ldb");
  EXPECT_EQ(field([&] { sgemm_prepacked(pa, true, 5, 1.0f, b.data(), 4, 0.0f, c.data(), 8); }),
            "ldb");
  EXPECT_EQ(field([&] { sgemm_prepacked(pa, false, 4, 1.0f, b.data(), 4, 0.0f, c.data(), 7); }),
            "ldc");
  EXPECT_EQ(field([&] { sgemm_prepacked(pa, false, 4, 1.0f, b.data(), 4, 0.0f, c.data(), 8); }),
            "(none)");
  const size_t listed[2] = {1, 2};
  EXPECT_EQ(field([&] {
              sgemm_prepacked(pa, listed, 2, false, 4, 1.0f, b.data(), 4, 0.0f, c.data(), 8);
            }),
            "group");
}

}  // namespace
}  // namespace pb::prepacked_test
