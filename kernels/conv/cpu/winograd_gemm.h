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

constexpr int kRows = 12;  // tiles per register block (broadcast operand)
constexpr int kCols = 32;  // output channels per panel (two AVX-512 vectors)

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
