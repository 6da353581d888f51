// AVX2 register transposes shared by the packed GEMM's packs and the Winograd engine's layouts.
#pragma once

#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>

namespace pb {

// An 8 x 8 transpose in registers: r[i] lane q -> r[q] lane i.
__attribute__((target("avx2"), always_inline)) inline void transpose8(__m256 r[8]) {
  __m256 t[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {
    t[i] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x20);
    t[i + 4] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x31);
  }
  for (int i = 0; i < 8; ++i) r[i] = t[i];
}

// dst[q * ds + i] = src[i * ss + q] for an 8 x 8 block (i, q < 8).
__attribute__((target("avx2"))) inline void transpose8x8(const float* src, int64_t ss, float* dst,
                                                         int64_t ds) {
  __m256 r[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * ss);
  transpose8(r);
  for (int q = 0; q < 8; ++q) _mm256_storeu_ps(dst + q * ds, r[q]);
}

// dst[q * ds + i] = src[i * ss + q] for a 4 x 8 block (i < 4, q < 8).
__attribute__((target("avx2"))) inline void transpose4x8(const float* src, int64_t ss, float* dst,
                                                         int64_t ds) {
  const __m256 r0 = _mm256_loadu_ps(src), r1 = _mm256_loadu_ps(src + ss);
  const __m256 r2 = _mm256_loadu_ps(src + 2 * ss), r3 = _mm256_loadu_ps(src + 3 * ss);
  const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
  const __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
  // u[q]: column q in its low half, column q + 4 in its high half.
  const __m256 u[4] = {_mm256_shuffle_ps(t0, t2, 0x44), _mm256_shuffle_ps(t0, t2, 0xEE),
                       _mm256_shuffle_ps(t1, t3, 0x44), _mm256_shuffle_ps(t1, t3, 0xEE)};
  for (int q = 0; q < 4; ++q) {
    _mm_storeu_ps(dst + q * ds, _mm256_castps256_ps128(u[q]));
    _mm_storeu_ps(dst + (q + 4) * ds, _mm256_extractf128_ps(u[q], 1));
  }
}

}  // namespace pb
#endif
