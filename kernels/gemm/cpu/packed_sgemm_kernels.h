// Internal to cpu/packed's SGEMM (packed_sgemm.cpp: the loop nest; packed_sgemm_prepacked.cpp:
// products with an A packed once): the micro-kernels, the configuration they run under, the A
// pack and the per-thread scratch. A tile reads B through an accessor: packed NR-column slivers
// (pack_b) or B in place, column by column.
#pragma once

#include <algorithm>
#include <cstdint>
#include <new>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define PB_X86 1
#endif

#include "kernels/core/threads.h"
#include "kernels/core/transpose_avx2.h"

namespace pb::sgemm_kernels {

// B packed by pack_b: NR values per step of the sum (zero past the matrix).
template <int NR>
struct PackedB {
  const float* b;
  float at(int64_t p, int j) const { return b[p * NR + j]; }
};

// B in place: value (p, j) at cols[j][p * step]; columns past the tile's nv repeat its last one,
// so that a tile never reads outside B (their sums are computed and never stored).
template <int NB>
struct InPlaceB {
  const float* cols[NB];
  int64_t step;
  InPlaceB(const float* b, int64_t col_stride, int64_t p_stride, int nv) : step(p_stride) {
    for (int j = 0; j < NB; ++j) cols[j] = b + std::min(j, nv - 1) * col_stride;
  }
  float at(int64_t p, int j) const { return cols[j][p * step]; }
};

// A kernel over packed B slivers: C[0..mv) x [0..nv) = alpha * (A sliver x B sliver) + beta * C
// (beta == 0: C is not read). a: MR floats per step of the sum, `as` apart; b: NR per step.
using Kernel = void (*)(int64_t kc, const float* a, int64_t as, const float* b, float* c,
                        int64_t ldc, float alpha, float beta, int mv, int nv);
// The same over B in place: value (p, j) of op(B) at b[j * col_stride + p * p_stride]; a packed
// sliver (MR floats per step). nv may exceed NR: the kernel walks the columns in tiles.
using InPlaceKernel = void (*)(int64_t kc, const float* a, const float* b, int64_t col_stride,
                               int64_t p_stride, float* c, int64_t ldc, float alpha, float beta,
                               int mv, int nv);

// Writes a computed tile (column-major, MR rows per column in `t`) into C where it is partial.
inline void store_partial(const float* t, int mr, float* c, int64_t ldc, float alpha, float beta,
                          int mv, int nv) {
  for (int j = 0; j < nv; ++j)
    for (int i = 0; i < mv; ++i) {
      float& dst = c[j * ldc + i];
      dst = beta == 0.0f ? alpha * t[j * mr + i] : alpha * t[j * mr + i] + beta * dst;
    }
}

#ifdef PB_X86

constexpr int kMr512 = 48, kNr512 = 8;

// V vectors of 16 rows (V = 3: the full 48-row sliver; 1 or 2 for a sliver's last rows, so that
// a short tail does not pay for 48), NB <= 8 columns of which nv are stored; rows past mv are
// masked off at the store. Mask: the last vector's loads of A stop at row mv (a partial sliver
// read in place ends at the last row of A); a masked load in every tile cost 3-4% (2048^3 302 ->
// 290 GFLOP/s), so full slivers do without.
template <int V, int NB, class B, bool Mask = false>
__attribute__((target("avx512f,fma"))) inline void tile_avx512(int64_t kc, const float* a,
                                                               int64_t as, B b, float* c,
                                                               int64_t ldc, float alpha, float beta,
                                                               int mv, int nv) {
  __m512 acc[NB][V];
#pragma GCC unroll 8
  for (int j = 0; j < NB; ++j)
#pragma GCC unroll 3
    for (int v = 0; v < V; ++v) acc[j][v] = _mm512_setzero_ps();
  // The C tile is read and written at the end: fetch it now, behind the sum (a large C is
  // not in cache, and its columns lie ldc apart where no prefetcher follows).
  for (int j = 0; j < nv; ++j) {
    for (int v = 0; v < V; ++v)
      _mm_prefetch(reinterpret_cast<const char*>(c + j * ldc + 16 * v), _MM_HINT_T0);
  }
  // A read in place (as = lda > MR: packed_sgemm.cpp's direct_a, few columns) has each step's
  // 48 rows in another page, where no hardware prefetcher follows: every step of the sum waited
  // on memory. Each step fetches the same column's rows of the next sliver, which the next
  // call reads (one sliver ahead beat two). Interleaved in one process, medians of 7, 2
  // threads, Xeon family 6 model 207, GFLOP/s without -> with: 4096x32x4096 93 -> 178,
  // 4096x16x4096 56 -> 102, 7680x16x2560 76 -> 128, 1024x16x500000 52 -> 76, 1760x16x1760
  // 124 -> 152, 2048x64x2048 174 -> 188. Those rows go to L2 only (T1), and this sliver's rows
  // four steps ahead to L1: a column stride that is a multiple of 4 KB puts every step's rows
  // in the same few L1 sets, so the next sliver's rows fetched to L1 were evicted before use,
  // and the sliver's second and later B tiles found nothing fetched. Interleaved (medians of
  // 11), GFLOP/s next sliver to L1 -> L2 + 4 ahead to L1: 6144x32x2048 168-175 -> 211-215,
  // 7680x16x2560 179-183 -> 205-210, 1760x16x1760 200-206 -> 214-219, 4096x16x4096 176 -> 202
  // (2, 3 and 6 steps ahead were within 3% of 4).
  const int tail = mv - 16 * (V - 1);
  const __mmask16 last = tail >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << tail) - 1);
  // A in place with columns not 64-byte aligned (M = 1000: every other column 32 bytes off): a
  // sliver's 48 rows span four cache lines there, not three, and the fourth was never fetched.
  // Zen 5 family 26, 2 threads, GFLOP/s without -> with its prefetch, alternating processes:
  // 1000x16x4096 182-191 -> 204-218, 1000x64x4096 238-240 -> 251-252, 1000x128x4096 253 ->
  // 262-264; on aligned columns (M = 1008) the extra prefetch cost 2-12%, hence only there.
  const bool straddles = (reinterpret_cast<uintptr_t>(a) | static_cast<uintptr_t>(as) * 4) & 63;
#pragma GCC unroll 2
  for (int64_t p = 0; p < kc; ++p) {
    const float* ap = a + p * as;
    __m512 av[V];
#pragma GCC unroll 3
    for (int v = 0; v < V - 1; ++v) av[v] = _mm512_loadu_ps(ap + 16 * v);
    av[V - 1] =
        Mask ? _mm512_maskz_loadu_ps(last, ap + 16 * (V - 1)) : _mm512_loadu_ps(ap + 16 * (V - 1));
    if (as > kMr512) {  // A in place (see above)
#pragma GCC unroll 3
      for (int v = 0; v < 3; ++v)
        _mm_prefetch(reinterpret_cast<const char*>(ap + kMr512 + 16 * v), _MM_HINT_T1);
#pragma GCC unroll 3
      for (int v = 0; v < V; ++v)
        _mm_prefetch(reinterpret_cast<const char*>(ap + 4 * as + 16 * v), _MM_HINT_T0);
      if (straddles) {  // the fourth line those rows span
        _mm_prefetch(reinterpret_cast<const char*>(ap + 2 * kMr512 - 1), _MM_HINT_T1);
        _mm_prefetch(reinterpret_cast<const char*>(ap + 4 * as + 16 * V - 1), _MM_HINT_T0);
      }
    }
#pragma GCC unroll 8
    for (int j = 0; j < NB; ++j) {
      const __m512 bj = _mm512_set1_ps(b.at(p, j));
#pragma GCC unroll 3
      for (int v = 0; v < V; ++v) acc[j][v] = _mm512_fmadd_ps(av[v], bj, acc[j][v]);
    }
  }
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#pragma GCC unroll 8
  for (int j = 0; j < NB; ++j) {  // constant indices (see tile_avx2)
    if (j >= nv) break;
    float* cj = c + j * ldc;
#pragma GCC unroll 3
    for (int v = 0; v < V; ++v) {
      const int rows = mv - 16 * v;
      const __mmask16 k = rows >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << rows) - 1);
      __m512 r = _mm512_mul_ps(va, acc[j][v]);
      if (beta != 0.0f) r = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(k, cj + 16 * v), r);
      _mm512_mask_storeu_ps(cj + 16 * v, k, r);
    }
  }
}

__attribute__((target("avx512f,fma"))) inline void kernel_avx512(int64_t kc, const float* a,
                                                                 int64_t as, const float* b,
                                                                 float* c, int64_t ldc, float alpha,
                                                                 float beta, int mv, int nv) {
  const PackedB<kNr512> pb{b};
  if (mv == kMr512)
    tile_avx512<3, kNr512>(kc, a, as, pb, c, ldc, alpha, beta, mv, nv);
  else if (mv > 32)
    tile_avx512<3, kNr512, PackedB<kNr512>, true>(kc, a, as, pb, c, ldc, alpha, beta, mv, nv);
  else if (mv > 16)
    tile_avx512<2, kNr512, PackedB<kNr512>, true>(kc, a, as, pb, c, ldc, alpha, beta, mv, nv);
  else
    tile_avx512<1, kNr512, PackedB<kNr512>, true>(kc, a, as, pb, c, ldc, alpha, beta, mv, nv);
}

// B in place, nv columns in tiles of 8, the last one as narrow as its columns (1, 2, 4 or 8:
// a matrix-vector product pays for one column, not eight).
template <int V>
__attribute__((target("avx512f,fma"))) inline void columns_avx512(int64_t kc, const float* a,
                                                                  const float* b, int64_t cs,
                                                                  int64_t ps, float* c, int64_t ldc,
                                                                  float alpha, float beta, int mv,
                                                                  int nv) {
  for (int j0 = 0; j0 < nv; j0 += kNr512) {
    const int w = std::min(kNr512, nv - j0);
    const float* bj = b + j0 * cs;
    float* cj = c + j0 * ldc;
    if (w > 4)
      tile_avx512<V, 8>(kc, a, kMr512, InPlaceB<8>(bj, cs, ps, w), cj, ldc, alpha, beta, mv, w);
    else if (w > 2)
      tile_avx512<V, 4>(kc, a, kMr512, InPlaceB<4>(bj, cs, ps, w), cj, ldc, alpha, beta, mv, w);
    else if (w > 1)
      tile_avx512<V, 2>(kc, a, kMr512, InPlaceB<2>(bj, cs, ps, w), cj, ldc, alpha, beta, mv, w);
    else
      tile_avx512<V, 1>(kc, a, kMr512, InPlaceB<1>(bj, cs, ps, w), cj, ldc, alpha, beta, mv, w);
  }
}

__attribute__((target("avx512f,fma"))) inline void in_place_avx512(int64_t kc, const float* a,
                                                                   const float* b, int64_t cs,
                                                                   int64_t ps, float* c,
                                                                   int64_t ldc, float alpha,
                                                                   float beta, int mv, int nv) {
  if (mv > 32)
    columns_avx512<3>(kc, a, b, cs, ps, c, ldc, alpha, beta, mv, nv);
  else if (mv > 16)
    columns_avx512<2>(kc, a, b, cs, ps, c, ldc, alpha, beta, mv, nv);
  else
    columns_avx512<1>(kc, a, b, cs, ps, c, ldc, alpha, beta, mv, nv);
}

constexpr int kMr256 = 24, kNr256 = 4;

// C's 8 rows at cv (only the first `rows` when fewer) = va * acc + vb * C (beta == 0: C is not
// read); `lane` holds 0..7.
__attribute__((target("avx2,fma"))) inline void store_rows_avx2(float* cv, __m256 acc, __m256 va,
                                                                __m256 vb, float beta, int rows,
                                                                __m256i lane) {
  __m256 r = _mm256_mul_ps(va, acc);
  if (rows >= 8) {
    if (beta != 0.0f) r = _mm256_fmadd_ps(vb, _mm256_loadu_ps(cv), r);
    _mm256_storeu_ps(cv, r);
  } else {
    const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(rows), lane);
    if (beta != 0.0f) r = _mm256_fmadd_ps(vb, _mm256_maskload_ps(cv, m), r);
    _mm256_maskstore_ps(cv, m, r);
  }
}

// V vectors of 8 rows (3: the full 24-row sliver), NB <= 4 columns, as tile_avx512; rows past
// mv are masked off.
template <int V, int NB, class B>
__attribute__((target("avx2,fma"))) inline void tile_avx2(int64_t kc, const float* a, int64_t as,
                                                          B b, float* c, int64_t ldc, float alpha,
                                                          float beta, int mv, int nv) {
  // The sum's loop needs all 16 ymm registers (12 accumulators, 3 A vectors, a broadcast), and
  // GCC found two ways to run it at half the AVX2 peak (Zen 5 family 26, one core, data in L1,
  // GFLOP/s; the 48 x 8 AVX-512 tile: 205-216): without -march=native it kept alpha (its
  // argument register) in one across the loop and an accumulator on the stack, a store-load
  // chain on every step (52 -> 104); with it, it folded each A vector into its 4 FMAs as a
  // memory operand, 12 loads a step instead of 3 (57 -> 104). alpha goes through memory, and
  // the A vectors are pinned to registers (below).
  float alpha_m = alpha;
  asm volatile("" : "+m"(alpha_m));
  __m256 acc[NB][V];
#pragma GCC unroll 4
  for (int j = 0; j < NB; ++j)
#pragma GCC unroll 3
    for (int v = 0; v < V; ++v) acc[j][v] = _mm256_setzero_ps();
  for (int j = 0; j < nv; ++j)  // the C tile, behind the sum (see tile_avx512)
    for (int v = 0; v < V; ++v)
      _mm_prefetch(reinterpret_cast<const char*>(c + j * ldc + 8 * v), _MM_HINT_T0);
  int64_t p0 = 0;
  if constexpr (NB == 1) {
    // One column (a GEMV, or a product's last column): each accumulator takes one FMA a step,
    // so their 4-cycle latency held the loop to 3 vectors of A every 4 cycles, half what L3 can
    // feed. Two partial sums over alternate steps halve that chain. (The prepacked products'
    // GEMVs, an RNN's steps at batch 1 and 2, run gemv_slivers_avx2 below.)
    __m256 acc2[V];
#pragma GCC unroll 3
    for (int v = 0; v < V; ++v) acc2[v] = _mm256_setzero_ps();
    for (; p0 + 2 <= kc; p0 += 2) {
      const float* ap = a + p0 * as;
      if (as > kMr256) {  // A in place: the next slivers' rows, as below
        _mm_prefetch(reinterpret_cast<const char*>(ap + kMr256), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(ap + 2 * kMr256 - 1), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(ap + as + kMr256), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(ap + as + 2 * kMr256 - 1), _MM_HINT_T0);
      }
      const __m256 b0 = _mm256_set1_ps(b.at(p0, 0)), b1 = _mm256_set1_ps(b.at(p0 + 1, 0));
#pragma GCC unroll 3
      for (int v = 0; v < V; ++v) {
        acc[0][v] = _mm256_fmadd_ps(_mm256_loadu_ps(ap + 8 * v), b0, acc[0][v]);
        acc2[v] = _mm256_fmadd_ps(_mm256_loadu_ps(ap + as + 8 * v), b1, acc2[v]);
      }
    }
#pragma GCC unroll 3
    for (int v = 0; v < V; ++v) acc[0][v] = _mm256_add_ps(acc[0][v], acc2[v]);
  }
  // (No unrolling: 12 accumulators, 3 A vectors and a broadcast fill the 16 ymm registers.)
  for (int64_t p = p0; p < kc; ++p) {
    const float* ap = a + p * as;
    __m256 av[V];
#pragma GCC unroll 3
    for (int v = 0; v < V; ++v) {
      av[v] = _mm256_loadu_ps(ap + 8 * v);
      asm("" : "+x"(av[v]));  // in a register, not folded into the FMAs (see above)
    }
    if (as > kMr256) {  // A in place: the next sliver's rows, as in tile_avx512
      _mm_prefetch(reinterpret_cast<const char*>(ap + kMr256), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(ap + 2 * kMr256 - 1), _MM_HINT_T0);
    }
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j) {
      const __m256 bj = _mm256_set1_ps(b.at(p, j));
#pragma GCC unroll 3
      for (int v = 0; v < V; ++v) acc[j][v] = _mm256_fmadd_ps(av[v], bj, acc[j][v]);
    }
  }
  const __m256 va = _mm256_set1_ps(alpha_m), vb = _mm256_set1_ps(beta);
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  // Unrolled with constant indices: a runtime index would keep acc in memory, and GCC then
  // stores every accumulator on every step of the sum.
#pragma GCC unroll 4
  for (int j = 0; j < NB; ++j) {
    if (j >= nv) break;
    float* cj = c + j * ldc;
#pragma GCC unroll 3
    for (int v = 0; v < V; ++v)
      store_rows_avx2(cj + 8 * v, acc[j][v], va, vb, beta, mv - 8 * v, lane);
  }
}

__attribute__((target("avx2,fma"))) inline void kernel_avx2(int64_t kc, const float* a, int64_t as,
                                                            const float* b, float* c, int64_t ldc,
                                                            float alpha, float beta, int mv,
                                                            int nv) {
  const PackedB<kNr256> pb{b};
  if (mv > 16)
    tile_avx2<3, kNr256>(kc, a, as, pb, c, ldc, alpha, beta, mv, nv);
  else if (mv > 8)
    tile_avx2<2, kNr256>(kc, a, as, pb, c, ldc, alpha, beta, mv, nv);
  else
    tile_avx2<1, kNr256>(kc, a, as, pb, c, ldc, alpha, beta, mv, nv);
}

template <int V>
__attribute__((target("avx2,fma"))) inline void columns_avx2(int64_t kc, const float* a,
                                                             const float* b, int64_t cs, int64_t ps,
                                                             float* c, int64_t ldc, float alpha,
                                                             float beta, int mv, int nv) {
  for (int j0 = 0; j0 < nv; j0 += kNr256) {
    const int w = std::min(kNr256, nv - j0);
    const float* bj = b + j0 * cs;
    float* cj = c + j0 * ldc;
    if (w > 2)
      tile_avx2<V, 4>(kc, a, kMr256, InPlaceB<4>(bj, cs, ps, w), cj, ldc, alpha, beta, mv, w);
    else if (w > 1)
      tile_avx2<V, 2>(kc, a, kMr256, InPlaceB<2>(bj, cs, ps, w), cj, ldc, alpha, beta, mv, w);
    else
      tile_avx2<V, 1>(kc, a, kMr256, InPlaceB<1>(bj, cs, ps, w), cj, ldc, alpha, beta, mv, w);
  }
}

__attribute__((target("avx2,fma"))) inline void in_place_avx2(int64_t kc, const float* a,
                                                              const float* b, int64_t cs,
                                                              int64_t ps, float* c, int64_t ldc,
                                                              float alpha, float beta, int mv,
                                                              int nv) {
  if (mv > 16)
    columns_avx2<3>(kc, a, b, cs, ps, c, ldc, alpha, beta, mv, nv);
  else if (mv > 8)
    columns_avx2<2>(kc, a, b, cs, ps, c, ldc, alpha, beta, mv, nv);
  else
    columns_avx2<1>(kc, a, b, cs, ps, c, ldc, alpha, beta, mv, nv);
}
// One or two columns (a GEMV: an RNN's step at batch 1 or 2) over S packed 24-row slivers at
// once, each a stream of its own (sliver s at a + s * sliver_floats), over the whole sum: c_s
// (rows mv[s], column j at c[s] + j * ldc) = alpha * A_s B + beta * c_s (beta == 0: C is not
// read), B(p, j) at b[p * bs + j * bcs]. One core read a 48 MB packed R at 15.8 GB/s as one
// stream, where oneDNN's GEMV read it at 26; a read test gave 19 GB/s with one stream and 27-31
// with four (Zen 3), the hardware prefetcher keeping more lines in flight. S * NC * 3
// accumulators: 12 independent FMA chains at S = 4 (NC = 1) and S = 2 (NC = 2).
template <int S, int NC>
__attribute__((target("avx2,fma"))) inline void gemv_slivers_avx2(
    int64_t k, const float* a, int64_t sliver_floats, const float* b, int64_t bs, int64_t bcs,
    float* const* c, int64_t ldc, const int* mv, float alpha, float beta) {
  // alpha and beta through memory, as in tile_avx2: kept in registers across the sum, they
  // left GCC one short at NC = 2, and it spilled an accumulator on every step.
  float alpha_m = alpha, beta_m = beta;
  asm volatile("" : "+m"(alpha_m), "+m"(beta_m));
  constexpr int V = kMr256 / 8;
  __m256 acc[S][NC][V];
#pragma GCC unroll 4
  for (int s = 0; s < S; ++s)
#pragma GCC unroll 2
    for (int j = 0; j < NC; ++j)
#pragma GCC unroll 3
      for (int v = 0; v < V; ++v) acc[s][j][v] = _mm256_setzero_ps();
  for (int64_t p = 0; p < k; ++p) {
    __m256 bp[NC];
#pragma GCC unroll 2
    for (int j = 0; j < NC; ++j) bp[j] = _mm256_set1_ps(b[p * bs + j * bcs]);
    const float* ap = a + p * kMr256;
#pragma GCC unroll 4
    for (int s = 0; s < S; ++s)
#pragma GCC unroll 3
      for (int v = 0; v < V; ++v)
#pragma GCC unroll 2
        for (int j = 0; j < NC; ++j)  // (A's vector read by each FMA: from L1 at NC = 2)
          acc[s][j][v] =
              _mm256_fmadd_ps(_mm256_loadu_ps(ap + s * sliver_floats + 8 * v), bp[j], acc[s][j][v]);
  }
  const __m256 va = _mm256_set1_ps(alpha_m), vb = _mm256_set1_ps(beta_m);
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
#pragma GCC unroll 4
  for (int s = 0; s < S; ++s)
#pragma GCC unroll 2
    for (int j = 0; j < NC; ++j)
#pragma GCC unroll 3
      for (int v = 0; v < V; ++v) {
        if (mv[s] <= 8 * v) break;
        store_rows_avx2(c[s] + j * ldc + 8 * v, acc[s][j][v], va, vb, beta_m, mv[s] - 8 * v, lane);
      }
}
#endif

// Portable: an 8 x 4 tile the compiler vectorises as it can.
constexpr int kMrGen = 8, kNrGen = 4;
template <class B>
inline void tile_generic(int64_t kc, const float* a, int64_t as, B b, float* c, int64_t ldc,
                         float alpha, float beta, int mv, int nv) {
  float t[kNrGen * kMrGen] = {};
  for (int64_t p = 0; p < kc; ++p)
    for (int j = 0; j < kNrGen; ++j)
      for (int i = 0; i < kMrGen; ++i) t[j * kMrGen + i] += a[p * as + i] * b.at(p, j);
  store_partial(t, kMrGen, c, ldc, alpha, beta, mv, nv);
}
inline void kernel_generic(int64_t kc, const float* a, int64_t as, const float* b, float* c,
                           int64_t ldc, float alpha, float beta, int mv, int nv) {
  tile_generic(kc, a, as, PackedB<kNrGen>{b}, c, ldc, alpha, beta, mv, nv);
}
inline void in_place_generic(int64_t kc, const float* a, const float* b, int64_t cs, int64_t ps,
                             float* c, int64_t ldc, float alpha, float beta, int mv, int nv) {
  for (int j0 = 0; j0 < nv; j0 += kNrGen) {
    const int w = std::min(kNrGen, nv - j0);
    tile_generic(kc, a, kMrGen, InPlaceB<kNrGen>(b + j0 * cs, cs, ps, w), c + j0 * ldc, ldc, alpha,
                 beta, mv, w);
  }
}

// The micro-kernels and cache blocks in force (the ISA follows PRIMBENCH_SIMD).
struct Config {
  const char* isa;
  Kernel kernel;
  InPlaceKernel in_place;
  int mr, nr;
  int64_t kc, mc, nc;
  // The rows of one vector of a sliver (16 or 8; the generic tile computes all MR): a sliver's
  // last rows cost whole vectors, so one row block per thread is cut at a multiple of it.
  int mu = 0;
};
const Config& config();

// A 64-byte aligned scratch area of `floats` in v, grown as needed (no allocation once warm).
// in_region: grown inside a parallel region (where PRIMBENCH_INJECT_BAD_ALLOC=scratch fails it).
inline float* scratch(std::vector<float>& v, size_t floats, bool in_region = false) {
  if (v.size() < floats + 16) {
    if (in_region && inject_scratch_bad_alloc()) throw std::bad_alloc();
    v.resize(floats + 16);
  }
  const uintptr_t p = reinterpret_cast<uintptr_t>(v.data());
  return reinterpret_cast<float*>((p + 63) & ~uintptr_t(63));
}

// op(B)[p0 .. p0+kc) x [j0 .. j0+nc) into NR-column slivers, slivers [s_begin, s_end), sliver s
// at dst + s*NR*kc (NR floats per step of the sum), zero-padded past nc.
void pack_b(bool tb, const float* b, int64_t ldb, int64_t p0, int64_t kc, int64_t j0, int64_t nc,
            int nr, int64_t s_begin, int64_t s_end, float* dst);

// op(A)[i0 .. i0+mc) x [p0 .. p0+kc) into MR-row slivers, slivers [s_begin, s_end) of the
// block, sliver s at dst + s*MR*kc (MR floats per step of the sum), zero-padded past mc.
void pack_a(bool ta, const float* a, int64_t lda, int64_t i0, int64_t mc, int64_t p0, int64_t kc,
            int mr, int64_t s_begin, int64_t s_end, float* dst);

// dst[p * ds + r] = src[r * ss + p] for r < rows, p < cols (both packs' transposing copy).
void transpose_copy(const float* src, int64_t ss, int rows, int64_t cols, float* dst, int64_t ds);

#ifdef PB_X86
// op(A) = A^T with few columns (packed_sgemm_tn.cpp): A read in place in tiles of C^T (9 to 128
// columns; AVX-512, else AVX2), or as dot products (up to 32 columns, AVX-512 only) where those
// do not apply. Returns false, having done nothing, where neither applies.
bool gemm_tn_few_columns(bool avx512, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                         const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                         float* c, int64_t ldc, int nt);
#endif

inline int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

}  // namespace pb::sgemm_kernels
