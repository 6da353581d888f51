// The per-position GEMMs of the Winograd engine: C[tiles x 32] = V[tiles x k] * U[k x 32], tiles
// broadcast from V (channels contiguous per tile), U packed as panels of 32 output channels; and
// bwd_w's sums over tiles, C[12 x 32] (+)= W^T V with both operands tile-major.
#pragma once

#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace pb {
namespace wino {

constexpr int kRows = 12;         // tiles per register block (broadcast operand)
constexpr int kCols = 32;         // output channels per panel (two AVX-512 vectors)
constexpr int kHalf = kRows / 2;  // the AVX2 blocks' rows

#if defined(__AVX2__) && defined(__FMA__) && !defined(__AVX512F__)
// The AVX2 blocks of both sums: c[r * cs + 0..16) (+)= sum_i a[r * ars + i * aks] *
// b[i * bks + 0..16), r < 6, i < k (add: onto c). 16 ymm registers hold the 6 x 16 block (12
// accumulators, 2 b vectors, a broadcast), so a 12 x 32 block takes four passes over the sum;
// with kPrefetch each pass fetches about k / 2 lines of pf into L2, a line every other step (the
// four passes: the next k x 32 panel). Before, AVX2 builds ran the plain loops of gemm_block and
// gemm_block_tn, which GCC kept in memory: Zen 3, 2 threads, ms (primbench run, medians of 3
// alternating runs), F2 and F4 before -> after: VGG-16 conv5 fwd 128, 111 -> 47, 54 (onednn/auto
// 85); ResNet-50 res4 3x3 bwd_d 36, 33 -> 15, 15 (28); AlexNet conv3 fwd 51, 44 -> 21, 17 (29);
// VGG-16 conv1_2 fwd 568, 330 -> 211, 140 (353).
template <bool kPrefetch = false>
inline void block6x16(const float* a, int64_t ars, int64_t aks, const float* b, int64_t bks,
                      float* c, int64_t cs, int64_t k, bool add, const float* pf = nullptr) {
  __m256 acc[kHalf][2];
#pragma GCC unroll 6
  for (int r = 0; r < kHalf; ++r) {
    acc[r][0] = add ? _mm256_loadu_ps(c + r * cs) : _mm256_setzero_ps();
    acc[r][1] = add ? _mm256_loadu_ps(c + r * cs + 8) : _mm256_setzero_ps();
  }
  for (int64_t i = 0; i < k; ++i) {
    const __m256 b0 = _mm256_loadu_ps(b + i * bks), b1 = _mm256_loadu_ps(b + i * bks + 8);
    if (kPrefetch && !(i & 1))
      _mm_prefetch(reinterpret_cast<const char*>(pf + (i / 2) * 16), _MM_HINT_T1);
    const float* ai = a + i * aks;
#pragma GCC unroll 6
    for (int r = 0; r < kHalf; ++r) {
      const __m256 x = _mm256_broadcast_ss(ai + r * ars);
      acc[r][0] = _mm256_fmadd_ps(x, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(x, b1, acc[r][1]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < kHalf; ++r) {
    _mm256_storeu_ps(c + r * cs, acc[r][0]);
    _mm256_storeu_ps(c + r * cs + 8, acc[r][1]);
  }
}
#endif

// c[r * cs + 0..kCols) = sum_i v[r * vs + i] * u[i * kCols + 0..kCols), r < kRows, i < k.
// With kPrefetch, the next panel (k x kCols at pf) is fetched into L2 along the way.
template <bool kPrefetch = false>
inline void gemm_block(const float* v, int64_t vs, const float* u, float* c, int64_t cs, int64_t k,
                       const float* pf = nullptr) {
#if defined(__AVX512F__)
  __m512 acc[kRows][2];
#pragma GCC unroll 12
  for (int r = 0; r < kRows; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t i = 0; i < k; ++i) {
    const __m512 b0 = _mm512_load_ps(u + i * kCols), b1 = _mm512_load_ps(u + i * kCols + 16);
    if (kPrefetch) {
      _mm_prefetch(reinterpret_cast<const char*>(pf + i * kCols), _MM_HINT_T1);
      _mm_prefetch(reinterpret_cast<const char*>(pf + i * kCols + 16), _MM_HINT_T1);
    }
#pragma GCC unroll 12
    for (int r = 0; r < kRows; ++r) {
      const __m512 a = _mm512_set1_ps(v[r * vs + i]);
      acc[r][0] = _mm512_fmadd_ps(a, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(a, b1, acc[r][1]);
    }
  }
#pragma GCC unroll 12
  for (int r = 0; r < kRows; ++r) {
    _mm512_store_ps(c + r * cs, acc[r][0]);
    _mm512_store_ps(c + r * cs + 16, acc[r][1]);
  }
#elif defined(__AVX2__) && defined(__FMA__)
  for (int q = 0; q < 4; ++q)  // four 6 x 16 blocks (block6x16)
    block6x16<kPrefetch>(v + (q / 2) * kHalf * vs, vs, 1, u + (q % 2) * 16, kCols,
                         c + (q / 2) * kHalf * cs + (q % 2) * 16, cs, k, false,
                         kPrefetch ? pf + q * (k / 2) * 16 : nullptr);
#else
  (void)pf;
  float acc[kRows][kCols] = {};
  for (int64_t i = 0; i < k; ++i)
    for (int r = 0; r < kRows; ++r) {
      const float a = v[r * vs + i];
      for (int j = 0; j < kCols; ++j) acc[r][j] += a * u[i * kCols + j];
    }
  for (int r = 0; r < kRows; ++r)
    for (int j = 0; j < kCols; ++j) c[r * cs + j] = acc[r][j];
#endif
}

#if defined(__x86_64__)
// gemm_block in bf16 with fp32 sums (vdpbf16ps, AVX512_BF16: two products per fp32 lane and
// instruction): c[r * cs + 0..kCols) = sum_i v[r * vs + i] * u[i][0..kCols) over k2 pairs of
// channels; v holds each tile's channels as bf16, so a pair is one 32-bit word, and u the panel
// as [k2][kCols][2] (the pair of each column adjacent). The caller checks the CPU.
template <bool kPrefetch = false>
__attribute__((target("avx512f,avx512bf16"))) inline void gemm_block_bf16(
    const uint16_t* v, int64_t vs, const uint16_t* u, float* c, int64_t cs, int64_t k2,
    const uint16_t* pf = nullptr) {
  __m512 acc[kRows][2];
#pragma GCC unroll 12
  for (int r = 0; r < kRows; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t i = 0; i < k2; ++i) {
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512(u + i * 2 * kCols),
                   b1 = (__m512bh)_mm512_loadu_si512(u + i * 2 * kCols + kCols);
    if (kPrefetch) {
      _mm_prefetch(reinterpret_cast<const char*>(pf + i * 2 * kCols), _MM_HINT_T1);
      _mm_prefetch(reinterpret_cast<const char*>(pf + i * 2 * kCols + kCols), _MM_HINT_T1);
    }
#pragma GCC unroll 12
    for (int r = 0; r < kRows; ++r) {
      uint32_t pair;
      __builtin_memcpy(&pair, v + r * vs + 2 * i, sizeof pair);
      const __m512bh a = (__m512bh)_mm512_set1_epi32(static_cast<int>(pair));
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], a, b0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], a, b1);
    }
  }
#pragma GCC unroll 12
  for (int r = 0; r < kRows; ++r) {
    _mm512_store_ps(c + r * cs, acc[r][0]);
    _mm512_store_ps(c + r * cs + 16, acc[r][1]);
  }
}
#endif

// c[r * cs + 0..kCols) (+)= sum_t w[t * ws + r] * v[t * vs + 0..kCols), r < kRows, t < k: the
// sum over k tiles of bwd_w, both operands as the transforms wrote them (channels contiguous per
// tile). add: accumulate onto c, else overwrite it.
inline void gemm_block_tn(const float* w, int64_t ws, const float* v, int64_t vs, float* c,
                          int64_t cs, int64_t k, bool add) {
#if defined(__AVX512F__)
  __m512 acc[kRows][2];
#pragma GCC unroll 12
  for (int r = 0; r < kRows; ++r) {
    acc[r][0] = add ? _mm512_loadu_ps(c + r * cs) : _mm512_setzero_ps();
    acc[r][1] = add ? _mm512_loadu_ps(c + r * cs + 16) : _mm512_setzero_ps();
  }
  for (int64_t t = 0; t < k; ++t) {
    const float* wt = w + t * ws;
    const __m512 b0 = _mm512_loadu_ps(v + t * vs), b1 = _mm512_loadu_ps(v + t * vs + 16);
#pragma GCC unroll 12
    for (int r = 0; r < kRows; ++r) {
      const __m512 a = _mm512_set1_ps(wt[r]);
      acc[r][0] = _mm512_fmadd_ps(a, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(a, b1, acc[r][1]);
    }
  }
#pragma GCC unroll 12
  for (int r = 0; r < kRows; ++r) {
    _mm512_storeu_ps(c + r * cs, acc[r][0]);
    _mm512_storeu_ps(c + r * cs + 16, acc[r][1]);
  }
#elif defined(__AVX2__) && defined(__FMA__)
  for (int q = 0; q < 4; ++q)  // four 6 x 16 blocks (block6x16)
    block6x16(w + (q / 2) * kHalf, 1, ws, v + (q % 2) * 16, vs,
              c + (q / 2) * kHalf * cs + (q % 2) * 16, cs, k, add);
#else
  for (int r = 0; r < kRows; ++r) {
    float acc[kCols];
    for (int j = 0; j < kCols; ++j) acc[j] = add ? c[r * cs + j] : 0.f;
    for (int64_t t = 0; t < k; ++t)
      for (int j = 0; j < kCols; ++j) acc[j] += w[t * ws + r] * v[t * vs + j];
    for (int j = 0; j < kCols; ++j) c[r * cs + j] = acc[j];
  }
#endif
}

}  // namespace wino
}  // namespace pb
