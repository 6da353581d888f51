// Data movement of the Winograd engine: a 16 x 16 fp32 transpose, used to turn NCHW source rows
// into channel-interleaved pixels and channel-interleaved output tiles back into NCHW rows.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace pb {
namespace wino {

// out[j * os + i] = in[i * is + j], i, j < 16.
inline void transpose16(const float* in, int64_t is, float* out, int64_t os) {
#if defined(__AVX512F__)
  __m512 r[16], t[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(in + i * is);
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  // r[4i + c], 128-bit lane L: column 4L + c of rows 4i..4i+3.
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    r[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
    r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
    r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
  }
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {
    const __m512 a = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x88),
                 b = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xDD),
                 e = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x88),
                 f = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xDD);
    _mm512_storeu_ps(out + c * os, _mm512_shuffle_f32x4(a, e, 0x88));
    _mm512_storeu_ps(out + (8 + c) * os, _mm512_shuffle_f32x4(a, e, 0xDD));
    _mm512_storeu_ps(out + (4 + c) * os, _mm512_shuffle_f32x4(b, f, 0x88));
    _mm512_storeu_ps(out + (12 + c) * os, _mm512_shuffle_f32x4(b, f, 0xDD));
  }
#else
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) out[j * os + i] = in[i * is + j];
#endif
}

// dst[x * 16 + c] = src[c * ss + x] for x < nx, c < nc; channels nc..15 become zero (nx, nc <= 16).
inline void interleave16(const float* src, int64_t ss, int nc, int nx, float* dst) {
  if (nc == 16 && nx == 16) return transpose16(src, ss, dst, 16);
  alignas(64) float in[16][16] = {}, out[16][16];
  for (int c = 0; c < nc; ++c) std::memcpy(in[c], src + c * ss, nx * sizeof(float));
  transpose16(in[0], 16, out[0], 16);
  std::memcpy(dst, out[0], nx * 16 * sizeof(float));
}

}  // namespace wino
}  // namespace pb
