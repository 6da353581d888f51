// op(A) = A^T with few columns: the rows of op(A) are contiguous along the sum, so neither path
// here packs A (see packed_sgemm.cpp for the packed SGEMM around them). Tiles of C^T on AVX-512
// and AVX2, dot products on AVX-512.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/core/machine.h"
#include "kernels/core/threads.h"
#include "kernels/core/transpose_avx512.h"
#include "kernels/gemm/cpu/packed_sgemm_kernels.h"

#ifdef PB_X86
namespace pb::sgemm_kernels {
namespace {

constexpr int64_t kDotMaxN = 32;  // up to here, A^T x B as dot products beats packing A

// op(A) = A^T and op(B) = B with few columns (vgg16 fc6's bwd_d, DeepBench's N = 16 with K up
// to 500000): both operands are contiguous along the sum, so each C element is a dot product.
// No packing: the sum is cut into chunks of kDotChunk; within one, R = 6 rows of op(A) (192 KB)
// and the B chunk (32 KB per column) stay in L2 across the column and row groups, so A is read from
// memory once and B once per chunk. Threads split the sum (each into its own m x n partial, then
// added) when it is long, else the rows.
constexpr int64_t kDotChunk = 8192;
// Rows of op(A) per tile, against 4 columns of B: 6 x 4 accumulators, 6 A vectors and one B
// vector fill 31 of the 32 registers, 10 loads per 24 FMAs (4 x 4 tiles: 8 per 16). Zen 5
// (family 26), 2 threads, medians of 3, two alternating runs, ms 4 x 4 -> 6 x 4: 1760x32x1760
// 1.25-1.26 -> 0.93-0.99, 2560x32x2560 2.77 -> 2.06-2.08, 7680x16x2560 4.50-4.76 -> 3.85-3.91.
constexpr int64_t kDotRows = 6;

// The sum of v's 16 lanes: halves added down to one lane (a few instructions, where storing and
// adding 16 scalars cost a third of a 4 x 4 tile's time at K = 1760).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"  // GCC 12, inside _mm512_extractf64x4_pd
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
__attribute__((target("avx512f,fma"))) inline float hsum512(__m512 v) {
  const __m256 lo = _mm512_castps512_ps256(v);
  const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
  const __m256 s8 = _mm256_add_ps(lo, hi);
  __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  s4 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  s4 = _mm_add_ss(s4, _mm_movehdup_ps(s4));
  return _mm_cvtss_f32(s4);
}
#pragma GCC diagnostic pop

// sums[r * J + j] = sum over p < k of a[r * lda + p] * b[j * ldb + p], r < R, j < J.
template <int R, int J, bool kPrefetchA = false>
__attribute__((target("avx512f,fma"))) inline void dot_tile(int64_t k, const float* a, int64_t lda,
                                                            const float* b, int64_t ldb,
                                                            float* sums) {
  __m512 acc[R][J];
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < J; ++j) acc[r][j] = _mm512_setzero_ps();
  int64_t p = 0;
  for (; p + 16 <= k; p += 16) {
    __m512 av[R];
    if (kPrefetchA)  // the rows of A stream from memory: fetch ahead of the loads
      for (int r = 0; r < R; ++r)
        _mm_prefetch(reinterpret_cast<const char*>(a + r * lda + p + 256), _MM_HINT_T0);
    for (int r = 0; r < R; ++r) av[r] = _mm512_loadu_ps(a + r * lda + p);
    for (int j = 0; j < J; ++j) {  // one B vector live at a time: R x J + R + 1 registers
      const __m512 bv = _mm512_loadu_ps(b + j * ldb + p);
      for (int r = 0; r < R; ++r) acc[r][j] = _mm512_fmadd_ps(av[r], bv, acc[r][j]);
    }
  }
  if (p < k) {
    const __mmask16 m = __mmask16((1u << (k - p)) - 1);
    __m512 av[R], bv[J];
    for (int r = 0; r < R; ++r) av[r] = _mm512_maskz_loadu_ps(m, a + r * lda + p);
    for (int j = 0; j < J; ++j) bv[j] = _mm512_maskz_loadu_ps(m, b + j * ldb + p);
    for (int r = 0; r < R; ++r)
      for (int j = 0; j < J; ++j) acc[r][j] = _mm512_fmadd_ps(av[r], bv[j], acc[r][j]);
  }
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < J; ++j) sums[r * J + j] = hsum512(acc[r][j]);
}

// out[i + j * ldo] = alpha * sum over p in [k0, k1) of op(A)(i, p) op(B)(p, j) + beta * out,
// for rows [i0, i1): the first chunk applies beta (0: out is not read), later chunks add.
__attribute__((target("avx512f,fma"))) void dot_rows(int64_t i0, int64_t i1, int64_t n, int64_t k0,
                                                     int64_t k1, float alpha, const float* a,
                                                     int64_t lda, const float* b, int64_t ldb,
                                                     float beta, float* out, int64_t ldo) {
  for (int64_t p0 = k0; p0 < k1; p0 += kDotChunk) {
    const int64_t kc = std::min(kDotChunk, k1 - p0);
    const float bf = p0 == k0 ? beta : 1.0f;  // later chunks add to what the first wrote
    for (int64_t i = i0; i < i1; i += kDotRows) {
      const int64_t rv = std::min<int64_t>(kDotRows, i1 - i);
      for (int64_t j = 0; j < n; j += 4) {
        const int64_t jv = std::min<int64_t>(4, n - j);
        float sums[kDotRows * 4];
        const float* ai = a + i * lda + p0;
        const float* bj = b + j * ldb + p0;
        if (rv == kDotRows && jv == 4) {
          if (j == 0)  // the first column group brings the rows of A in
            dot_tile<kDotRows, 4, true>(kc, ai, lda, bj, ldb, sums);
          else
            dot_tile<kDotRows, 4>(kc, ai, lda, bj, ldb, sums);
        } else if (jv == 4) {  // the last rows of the range, one at a time
          for (int64_t r = 0; r < rv; ++r)
            dot_tile<1, 4>(kc, ai + r * lda, lda, bj, ldb, &sums[r * 4]);
        } else {
          for (int64_t r = 0; r < rv; ++r)
            for (int64_t q = 0; q < jv; ++q)
              dot_tile<1, 1>(kc, ai + r * lda, lda, bj + q * ldb, ldb, &sums[r * 4 + q]);
        }
        for (int64_t r = 0; r < rv; ++r)
          for (int64_t q = 0; q < jv; ++q) {
            const float v = sums[r * 4 + q];
            float& dst = out[(i + r) + (j + q) * ldo];
            dst = bf == 0.0f ? alpha * v : alpha * v + bf * dst;
          }
      }
    }
  }
}

__attribute__((target("avx512f,fma"))) void gemm_tn_dot(int64_t m, int64_t n, int64_t k,
                                                        float alpha, const float* a, int64_t lda,
                                                        const float* b, int64_t ldb, float beta,
                                                        float* c, int64_t ldc, int nt) {
  const int64_t chunks = (k + kDotChunk - 1) / kDotChunk;
  // Split the sum when every thread gets whole chunks and the rows alone would not feed them.
  const bool split_k = nt > 1 && chunks >= 2 * nt && m < 64 * nt * 4;
  if (!split_k) {
    // One call per thread over all its rows, so that the chunk loop (in dot_rows) is outside
    // the rows: each B chunk is read from memory once per thread, then from L2 for every row
    // group. Per group of 4 rows (the chunk loop inside), all of B streamed from memory again:
    // with K = 500000, 32 MB of B per 8 MB of A. Interleaved in one process, medians of 3,
    // 2 threads bound to cores, Xeon family 6 model 207, GFLOP/s per group -> per thread:
    // 1024x16x500000 81-84 -> 125-128, 512x16x500000 83-87 -> 112-124, 1024x8x500000 66-72 ->
    // 74-84; against onednn/matmul (bench_gemm) 0.69 -> 1.05, 0.80 -> 0.96, 0.87 -> 1.02.
    const int64_t groups = (m + kDotRows - 1) / kDotRows;
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
      const int t = omp_get_thread_num(), nth = omp_get_num_threads();
      const int64_t i0 = groups * t / nth * kDotRows,
                    i1 = std::min(m, groups * (t + 1) / nth * kDotRows);
      if (i0 < i1) dot_rows(i0, i1, n, 0, k, alpha, a, lda, b, ldb, beta, c, ldc);
    }
    return;
  }
  // Each thread sums its chunks into its own m x n partial; thread 0's goes to C (with beta),
  // the others' are added after.
  std::vector<float> partial(static_cast<size_t>(nt - 1) * m * n);
#pragma omp parallel num_threads(nt)
  {
    const int t = omp_get_thread_num();
    const int64_t c0 = chunks * t / nt, c1 = chunks * (t + 1) / nt;
    const int64_t k0 = c0 * kDotChunk, k1 = std::min(k, c1 * kDotChunk);
    if (t == 0)
      dot_rows(0, m, n, k0, k1, alpha, a, lda, b, ldb, beta, c, ldc);
    else
      dot_rows(0, m, n, k0, k1, alpha, a, lda, b, ldb, 0.0f, partial.data() + (t - 1) * m * n, m);
#pragma omp barrier
#pragma omp for schedule(static)
    for (int64_t j = 0; j < n; ++j)
      for (int u = 1; u < nt; ++u) {
        const float* pu = partial.data() + (u - 1) * m * n + j * m;
        float* cj = c + j * ldc;
        for (int64_t i = 0; i < m; ++i) cj[i] += pu[i];
      }
  }
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"  // GCC 12, inside the AVX-512 intrinsics
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// op(A) = A^T with 33 to kBcastMaxN columns (DeepBench's N = 64 and 128 with A^T, the fully
// connected layers' data gradients): A is read in place, not packed. Its rows are contiguous
// along the sum there, so the micro-kernel keeps a tile of C^T: kBcastRows rows of op(A), each
// element broadcast, against 16 or 32 columns of op(B) as vectors (B packed by each thread into
// its own buffer, [p][32 columns]); the tile is transposed in registers to store C's columns.
// The packed path's transposing copy of A (a pass over all of A before the products use it) took
// a quarter of these shapes' time, and the dot products (up to 32 columns) reduce 16 lanes per
// element of C. Zen 5 family 26, 2 threads, primbench run (medians of 20, two rounds alternating),
// ms packed or dot products -> broadcast: 2560x64x2560 (A^T) 3.06-3.12 -> 2.10-2.12 (oneDNN
// 2.7), 4096x64x4096 8.2-8.4 -> 5.8-6.2, 7680x64x2560 9.3-9.8 -> 6.5-6.8, 1760x128x1760
// 2.59-2.62 -> 1.98, 9216x128x4096 (AlexNet fc6's data gradient at batch 128) 31.3-32.0 -> 27.4,
// 2560x64x2560 with B^T 3.04-3.07 -> 2.09-2.2; up to 32 columns: 2560x32x2560 1.56-1.59 ->
// 1.02, 7680x16x2560 3.1-3.2 -> 2.1-2.2, 1024x16x500000 95-107 -> 65-74, 50176x16x27 1.37-1.44
// -> 0.37-0.38. With 64 rows (then in 5 groups of 14 on 2 threads) it lost (64x16x500000
// 6.3-7.4 -> 7.5-8.4), hence kBcastMinRows per thread (128 rows won); the sum's block, for the
// thread's B panel in half of L2 (2048 at 64 columns, 1024 at 128), against 512:
// 4096x64x4096 6.5-7.8 -> 5.7-5.8, 9216x128x4096 29.5-29.8 -> 27.4.
//
// Rows of op(A) per tile: with 14 (14 x 2 accumulators, 2 B vectors and the broadcast, 31
// registers), a row stride of a multiple of 1024 floats put the 14 rows' current lines in one L1
// set (64 sets of 64 bytes on these cores: 4 KB per way, 8 or 12 ways), where they evicted each
// other: 4096x64x4096 (A^T) 7.1-9.9 ms, 5.5-6.0 with lda 4100 or 4112. With 7 rows, 5.6 there
// (2048x128x2048 3.0-3.1 -> 2.86-2.89, 4096x32x4096 4.4-4.5 -> 2.7-2.8; a plain copy of each
// group's rows first: 7.1-7.2), and as fast as 14 elsewhere (2560x64x2560 2.08-2.15 against
// 2.10-2.12, 7680x64x2560 6.6-6.7 against 6.5-6.6, 1760x128x1760 1.96-2.02 against 1.97-2.01).
// Against onednn/matmul (bench_gemm, medians of 3, two runs each), the 12 shapes with lda a
// power of two among deepbench_train's A^T ones and vgg16_fc's fc7 data gradients: geomean
// 1.15-1.24 with 14 rows, 1.06 with the copy, 1.30 with 7. The figures above are with 14.
constexpr int kBcastRows = 7;
constexpr int64_t kBcastMinRows = 56;  // per thread
constexpr int64_t kBcastMaxN = 128;
// On the AVX2 path (6 x 16 tiles, Bcast256) up to 32 columns only: from 64 on the packed path
// (whose transposing copy of A costs less against AVX2's half-rate products) was as fast or
// faster. Zen 3 family 25, 2 threads, GFLOP/s packed -> tiles (onednn/matmul), medians of 3
// alternating runs: 1760x16x1760 70 -> 126 (95), 1760x32x1760 107 -> 178 (135), 7680x32x2560
// 76 -> 110 (92), 1024x16x500000 75 -> 150 (80), 4608x32x1536 125 -> 122 (127); 64 columns
// 0.88-1.20x over 6 shapes (1760x64x1760 123 -> 108, 4096x64x4096 95 -> 114), 128 columns
// 0.75-0.92x (7680x128x2560 128 -> 102). A smaller sum's block (128-512 against 1024) was slower.
constexpr int64_t kBcastMaxN2 = 32;
// Up to 8 columns the dot products stay: half of the 16-column tile computed nothing
// (1024x8x500000 (A^T) 61.7 -> 69.6 ms, 512x8x500000 33.0 -> 34.5, bench_gemm, one run each;
// the first moved 52-73 ms between processes of one build).
constexpr int64_t kBcastMinN = 8;
// Below this sum (with more than 32 columns), storing the tiles (two transposes per 32 columns
// and KC step) cost more than packing A: 12544x128x147 (A^T) 1.32-1.43 -> 1.41-2.0 ms,
// 12544x128x256 2.64-2.72 -> 3.0-3.3, 12544x64x256 even, 3136x128x384 1.01-1.06 -> 0.89-0.90.
constexpr int64_t kBcastMinK = 384;
constexpr int64_t kBcastPrefetch = 64;  // floats ahead on each row of A (128, 256: no faster)

// One step p of bcast_tile's sum (a function, not a lambda: a lambda does not take its enclosing
// function's target attribute, and without -mavx512f the intrinsics would not compile).
template <int R, int NV>
__attribute__((target("avx512f,fma"), always_inline)) inline void bcast_step(
    int64_t p, const float* a, int64_t lda, const float* bp, __m512 (&acc)[R][NV]) {
  __m512 bv[NV];
  for (int v = 0; v < NV; ++v) bv[v] = _mm512_loadu_ps(bp + p * 16 * NV + 16 * v);
  for (int r = 0; r < R; ++r) {
    const __m512 av = _mm512_set1_ps(a[r * lda + p]);
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
  }
}

// C(r, j) = alpha * sum over p < kc of a[r * lda + p] * bp[p * 16 NV + j] + beta * C(r, j), for
// r < mv (<= R) and j < nv (<= 16 NV); rows of a past mv are read (the caller pads them) but not
// stored. beta = 0 does not read C.
template <int R, int NV>
__attribute__((target("avx512f,fma"))) void bcast_tile(int64_t kc, const float* a, int64_t lda,
                                                       const float* bp, float* c, int64_t ldc,
                                                       float alpha, float beta, int mv, int nv) {
  __m512 acc[R][NV];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_ps();
  int64_t p = 0;
  for (; p + 16 <= kc; p += 16) {
    // The rows stream from memory, R streams a row stride apart: fetch each a few lines ahead.
    for (int r = 0; r < R; ++r)
      _mm_prefetch(reinterpret_cast<const char*>(a + r * lda + p + kBcastPrefetch), _MM_HINT_T0);
    for (int q = 0; q < 16; ++q) bcast_step<R, NV>(p + q, a, lda, bp, acc);
  }
  for (; p < kc; ++p) bcast_step<R, NV>(p, a, lda, bp, acc);
  const __mmask16 rows = static_cast<__mmask16>((1u << mv) - 1);
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  for (int v = 0; v < NV; ++v) {
    __m512 t[16];
    for (int r = 0; r < R; ++r) t[r] = acc[r][v];
    for (int r = R; r < 16; ++r) t[r] = _mm512_setzero_ps();
    transpose16(t);  // t[j]: rows 0..15 of column 16 v + j
    for (int j = 0; j < 16 && 16 * v + j < nv; ++j) {
      float* cj = c + (16 * v + j) * ldc;
      __m512 x = _mm512_mul_ps(t[j], va);
      if (beta != 0.0f) x = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(rows, cj), x);
      _mm512_mask_storeu_ps(cj, rows, x);
    }
  }
}

// The AVX2 path's tile of C^T: R = 6 rows of op(A) against NV vectors of 8 columns (6 x 2
// accumulators, 2 B vectors and the broadcast: 15 of the 16 registers; 8 loads per 12 FMAs),
// stored through 8 x 8 transposes in registers. Same contract as bcast_tile.
template <int R, int NV>
__attribute__((target("avx2,fma"), always_inline)) inline void bcast_step2(
    int64_t p, const float* a, int64_t lda, const float* bp, __m256 (&acc)[R][NV]) {
  __m256 bv[NV];
  for (int v = 0; v < NV; ++v) bv[v] = _mm256_loadu_ps(bp + p * 8 * NV + 8 * v);
  for (int r = 0; r < R; ++r) {
    const __m256 av = _mm256_broadcast_ss(a + r * lda + p);
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_fmadd_ps(av, bv[v], acc[r][v]);
  }
}

template <int R, int NV>
__attribute__((target("avx2,fma"))) void bcast_tile2(int64_t kc, const float* a, int64_t lda,
                                                     const float* bp, float* c, int64_t ldc,
                                                     float alpha, float beta, int mv, int nv) {
  static_assert(R <= 8, "a tile of C^T is stored through 8 x 8 transposes");
  __m256 acc[R][NV];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_setzero_ps();
  int64_t p = 0;
  for (; p + 16 <= kc; p += 16) {
    for (int r = 0; r < R; ++r)
      _mm_prefetch(reinterpret_cast<const char*>(a + r * lda + p + kBcastPrefetch), _MM_HINT_T0);
    for (int q = 0; q < 16; ++q) bcast_step2<R, NV>(p + q, a, lda, bp, acc);
  }
  for (; p < kc; ++p) bcast_step2<R, NV>(p, a, lda, bp, acc);
  alignas(32) int32_t lanes[8];
  for (int r = 0; r < 8; ++r) lanes[r] = r < mv ? -1 : 0;
  const __m256i rows = _mm256_load_si256(reinterpret_cast<const __m256i*>(lanes));
  const __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
  // Unrolled, so that every acc index is a constant: with v a variable GCC kept acc in memory and
  // stored all 12 accumulators every step of the sum (half the speed).
#pragma GCC unroll 2
  for (int v = 0; v < NV; ++v) {
    __m256 t[8];  // then t[j]: rows 0..7 of column 8 v + j
    for (int r = 0; r < R; ++r) t[r] = acc[r][v];
    for (int r = R; r < 8; ++r) t[r] = _mm256_setzero_ps();
    transpose8(t);
    for (int j = 0; j < 8 && 8 * v + j < nv; ++j) {
      float* cj = c + (8 * v + j) * ldc;
      __m256 x = _mm256_mul_ps(t[j], va);
      if (beta != 0.0f) x = _mm256_fmadd_ps(vb, _mm256_maskload_ps(cj, rows), x);
      _mm256_maskstore_ps(cj, rows, x);
    }
  }
}

// The tiles of each path: R rows of op(A) against B slivers of kSw columns, NV vectors of kVw.
struct Bcast512 {
  static constexpr int R = kBcastRows, kVw = 16, kSw = 32;
  template <int NV>
  static void tile(int64_t kc, const float* a, int64_t lda, const float* bp, float* c, int64_t ldc,
                   float alpha, float beta, int mv, int nv) {
    bcast_tile<R, NV>(kc, a, lda, bp, c, ldc, alpha, beta, mv, nv);
  }
};
struct Bcast256 {
  static constexpr int R = 6, kVw = 8, kSw = 16;
  template <int NV>
  static void tile(int64_t kc, const float* a, int64_t lda, const float* bp, float* c, int64_t ldc,
                   float alpha, float beta, int mv, int nv) {
    bcast_tile2<R, NV>(kc, a, lda, bp, c, ldc, alpha, beta, mv, nv);
  }
};

template <class T>
void gemm_tn_bcast(bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                   int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
                   int nt) {
  constexpr int R = T::R, kSw = T::kSw, kVw = T::kVw;
  // The sum's block: the thread's B panel (n columns, padded to kSw) in half of L2.
  const int64_t l2 = static_cast<int64_t>(cache_bytes(2, 1 << 20));
  const int64_t kcb =
      std::clamp<int64_t>(l2 / 2 / (4 * ceil_div(n, int64_t(kSw)) * kSw) / 16 * 16, 256, 2048);
  const int64_t ns = n / kSw, n_tail = n % kSw;  // full slivers, then one of kVw or kSw
  const int tail_nv = n_tail == 0 ? 0 : n_tail <= kVw ? 1 : 2;
  const int64_t groups = ceil_div(m, int64_t(R));
  RegionErrors errors;
#pragma omp parallel num_threads(nt) if (nt > 1)
  {
    static thread_local std::vector<float> b_own, a_tail;
    float* bp = nullptr;
    float* at = nullptr;
    errors.run([&] {
      bp = scratch(b_own, size_t(kcb) * (ns + 1) * kSw, true);
      at = scratch(a_tail, size_t(kcb) * R, true);
    });
    const int t = omp_get_thread_num(), nth = omp_get_num_threads();
    const int64_t g0 = groups * t / nth, g1 = groups * (t + 1) / nth;
    for (int64_t pc = 0; pc < k && !errors.failed(); pc += kcb) {
      const int64_t kc = std::min(kcb, k - pc);
      // B: each sliver [p][kVw NV columns], zero past n.
      for (int64_t s = 0; s < ns + (tail_nv ? 1 : 0); ++s) {
        const int w = s < ns ? kSw : kVw * tail_nv;
        const int nv = static_cast<int>(std::min<int64_t>(w, n - kSw * s));
        float* d = bp + s * kSw * kcb;
        if (!tb) {
          transpose_copy(b + pc + kSw * s * ldb, ldb, nv, kc, d, w);
          for (int64_t p = 0; nv < w && p < kc; ++p)
            std::fill(d + p * w + nv, d + (p + 1) * w, 0.0f);
        } else {
          for (int64_t p = 0; p < kc; ++p) {
            std::memcpy(d + p * w, b + kSw * s + (pc + p) * ldb, nv * sizeof(float));
            std::fill(d + p * w + nv, d + (p + 1) * w, 0.0f);
          }
        }
      }
      const float bt = pc == 0 ? beta : 1.0f;
      for (int64_t g = g0; g < g1; ++g) {
        const int64_t i = g * R;
        const int mv = static_cast<int>(std::min<int64_t>(R, m - i));
        const float* ap = a + i * lda + pc;
        int64_t la = lda;
        if (mv < R) {  // the last rows: copied, the rest zero, so the tile reads only its own
          for (int r = 0; r < R; ++r) {
            if (r < mv)
              std::memcpy(at + r * kc, ap + r * lda, kc * sizeof(float));
            else
              std::fill(at + r * kc, at + (r + 1) * kc, 0.0f);
          }
          ap = at;
          la = kc;
        }
        for (int64_t s = 0; s < ns; ++s)
          T::template tile<2>(kc, ap, la, bp + s * kSw * kcb, c + i + kSw * s * ldc, ldc, alpha, bt,
                              mv, kSw);
        if (tail_nv == 1)
          T::template tile<1>(kc, ap, la, bp + ns * kSw * kcb, c + i + kSw * ns * ldc, ldc, alpha,
                              bt, mv, static_cast<int>(n_tail));
        else if (tail_nv == 2)
          T::template tile<2>(kc, ap, la, bp + ns * kSw * kcb, c + i + kSw * ns * ldc, ldc, alpha,
                              bt, mv, static_cast<int>(n_tail));
      }
    }
  }
  errors.rethrow();
}
#pragma GCC diagnostic pop

}  // namespace

bool gemm_tn_few_columns(bool avx512, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                         const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                         float* c, int64_t ldc, int nt) {
  if (n > kBcastMinN && n <= (avx512 ? kBcastMaxN : kBcastMaxN2) && m >= kBcastMinRows * nt &&
      (n <= kDotMaxN || k >= kBcastMinK)) {
    if (avx512)
      gemm_tn_bcast<Bcast512>(tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nt);
    else
      gemm_tn_bcast<Bcast256>(tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nt);
    return true;
  }
  if (avx512 && !tb && n <= kDotMaxN) {
    gemm_tn_dot(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nt);
    return true;
  }
  return false;
}

}  // namespace pb::sgemm_kernels
#endif
