// AVX-512 register transposes shared by the GEMMs' tiles of C^T (fp32 and reduced precision)
// and the Winograd engine's layouts (winograd_layout.h).
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

namespace pb {

// r[i] lane l -> r[l] lane i (a 16 x 16 transpose: within 128-bit lanes, then across them).
__attribute__((target("avx512f"), always_inline)) inline void transpose16(__m512 r[16]) {
  __m512 t[16];
#pragma GCC unroll 8
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  __m512 u[16];  // u[4g + q], 128-bit lane L: rows 4g..4g+3 of column 4L + q
#pragma GCC unroll 4
  for (int g = 0; g < 4; ++g) {
    u[4 * g] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0x44);
    u[4 * g + 1] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0xEE);
    u[4 * g + 2] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
    u[4 * g + 3] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xEE);
  }
#pragma GCC unroll 4
  for (int q = 0; q < 4; ++q) {
    const __m512 v0 = _mm512_shuffle_f32x4(u[q], u[4 + q], 0x44);
    const __m512 v1 = _mm512_shuffle_f32x4(u[q], u[4 + q], 0xEE);
    const __m512 v2 = _mm512_shuffle_f32x4(u[8 + q], u[12 + q], 0x44);
    const __m512 v3 = _mm512_shuffle_f32x4(u[8 + q], u[12 + q], 0xEE);
    r[q] = _mm512_shuffle_f32x4(v0, v2, 0x88);
    r[4 + q] = _mm512_shuffle_f32x4(v0, v2, 0xDD);
    r[8 + q] = _mm512_shuffle_f32x4(v1, v3, 0x88);
    r[12 + q] = _mm512_shuffle_f32x4(v1, v3, 0xDD);
  }
}

}  // namespace pb
#endif
