// Data movement of the Winograd engine: a 16 x 16 fp32 transpose, used to turn NCHW source rows
// (fp32, or bf16 widened to fp32) into channel-interleaved tile rows (copy_rows) and
// channel-interleaved output tiles back into NCHW rows, and a streaming copy for output rows that
// will not be read again soon (or their bf16 rounding).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/core/dtype.h"

#if defined(__AVX512F__)
#include "kernels/core/transpose_avx512.h"
#elif defined(__AVX2__)
#include "kernels/core/transpose_avx2.h"
#endif

// GCC 12 reports _mm512_undefined_ps inside the shuffle intrinsics as maybe uninitialised (at
// -O2), or as uninitialised (at the sanitizer builds' -O1).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace pb {
namespace wino {

// out[j * os + i] = in[i * is + j], i, j < 16.
inline void transpose16(const float* in, int64_t is, float* out, int64_t os) {
#if defined(__AVX512F__)
  __m512 r[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(in + i * is);
  pb::transpose16(r);
#pragma GCC unroll 16
  for (int j = 0; j < 16; ++j) _mm512_storeu_ps(out + j * os, r[j]);
#elif defined(__AVX2__)
  for (int bi = 0; bi < 16; bi += 8)  // four 8 x 8 blocks
    for (int bj = 0; bj < 16; bj += 8) transpose8x8(in + bi * is + bj, is, out + bj * os + bi, os);
#else
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) out[j * os + i] = in[i * is + j];
#endif
}

// n source elements as fp32: a copy, or bf16 (uint16_t) widened.
inline void widen(const float* src, int n, float* dst) {
  std::memcpy(dst, src, n * sizeof(float));
}
inline void widen(const uint16_t* src, int n, float* dst) {
  for (int i = 0; i < n; ++i) dst[i] = from_bf16(src[i]);
}

// dst[x * 16 + c] = src[c * ss + x] (as fp32) for x < nx, c < nc; channels nc..15 become zero
// (nx, nc <= 16). T: float, or bf16 (uint16_t).
template <class T>
inline void interleave16(const T* src, int64_t ss, int nc, int nx, float* dst) {
  if constexpr (std::is_same_v<T, float>)
    if (nc == 16 && nx == 16) return transpose16(src, ss, dst, 16);
  alignas(64) float in[16][16], out[16][16];
  if (nc < 16 || nx < 16) std::memset(in, 0, sizeof in);  // a full block is written whole
  for (int c = 0; c < nc; ++c) widen(src + c * ss, nx, in[c]);
  transpose16(in[0], 16, out[0], 16);
  std::memcpy(dst, out[0], nx * 16 * sizeof(float));
}

// Where copy_rows reads and writes: `rows` rows of `chans` channels of an NCHW plane set (ih x iw
// per channel), as [channel block of 16][row][wp columns][16 channels]; column X holds image
// column X - pw. Consecutive tile rows start `step` rows apart.
struct RowSpan {
  int64_t chans, ih, iw, pw, wp;
  int rows, step;
};

// Rows sy0 .. sy0 + r.rows - 1 of in (channel 0 of the span) -> s, zero outside the image. prev:
// the same for the tile row before (sy0 - r.step; its overlapping rows are copied), or null.
template <class T>
inline void copy_rows(const RowSpan& r, const T* in, int64_t sy0, const float* prev, float* s) {
  const int64_t row = r.wp * 16, x0 = std::max<int64_t>(0, r.pw);
  const int64_t cols = std::max<int64_t>(0, std::min(r.iw - (x0 - r.pw), r.wp - x0));
  const int64_t blocks = (r.chans + 15) / 16;
  for (int64_t cb = 0; cb < blocks; ++cb) {
    const int nc = int(std::min<int64_t>(16, r.chans - cb * 16));
    for (int i = 0; i < r.rows; ++i) {
      float* p = s + (cb * r.rows + i) * row;
      if (prev && i < r.rows - r.step) {
        std::memcpy(p, prev + (cb * r.rows + i + r.step) * row, row * sizeof(float));
        continue;
      }
      const int64_t sy = sy0 + i;
      if (sy < 0 || sy >= r.ih || cols == 0) {
        std::memset(p, 0, row * sizeof(float));
        continue;
      }
      std::memset(p, 0, x0 * 16 * sizeof(float));
      std::memset(p + (x0 + cols) * 16, 0, (r.wp - x0 - cols) * 16 * sizeof(float));
      const T* q = in + ((cb * 16) * r.ih + sy) * r.iw + (x0 - r.pw);
      for (int64_t x = 0; x < cols; x += 16)
        interleave16(q + x, r.ih * r.iw, nc, int(std::min<int64_t>(16, cols - x)),
                     p + (x0 + x) * 16);
    }
  }
}

// A 4 x 4 output tile of 16 channels, t[(i * 4 + j) * 16 + o], -> rows y[(o * 4 + i) * ys + j]:
// per row i, a 4 x 16 transpose in registers, each 128-bit lane stored as one channel's row.
inline void scatter4x4(const float* t, float* y, int64_t ys) {
#if defined(__AVX512F__)
  for (int i = 0; i < 4; ++i) {
    const float* r = t + i * 64;
    const __m512 a = _mm512_loadu_ps(r), b = _mm512_loadu_ps(r + 16), c = _mm512_loadu_ps(r + 32),
                 d = _mm512_loadu_ps(r + 48);
    const __m512 t0 = _mm512_unpacklo_ps(a, b), t1 = _mm512_unpackhi_ps(a, b),
                 t2 = _mm512_unpacklo_ps(c, d), t3 = _mm512_unpackhi_ps(c, d);
    // u[k], 128-bit lane L: channel 4L + k.
    const __m512 u[4] = {_mm512_shuffle_ps(t0, t2, 0x44), _mm512_shuffle_ps(t0, t2, 0xEE),
                         _mm512_shuffle_ps(t1, t3, 0x44), _mm512_shuffle_ps(t1, t3, 0xEE)};
    float* q = y + i * ys;
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      _mm_storeu_ps(q + (k * 4) * ys, _mm512_castps512_ps128(u[k]));
      _mm_storeu_ps(q + (16 + k * 4) * ys, _mm512_extractf32x4_ps(u[k], 1));
      _mm_storeu_ps(q + (32 + k * 4) * ys, _mm512_extractf32x4_ps(u[k], 2));
      _mm_storeu_ps(q + (48 + k * 4) * ys, _mm512_extractf32x4_ps(u[k], 3));
    }
  }
#elif defined(__AVX2__)
  // Per row i and half h of the channels, a 4 x 8 transpose. With this and transpose16's 8 x 8
  // blocks (both were plain loops on AVX2), Zen 3, 2 threads, ms (medians of 3 alternating
  // runs), F4: VGG-16 conv1_2 fwd 139 -> 128, ResNet-50 res3 3x3 fwd 8.5 -> 7.5, res4 3x3 bwd_d
  // 11.8 -> 11.1. Streaming stores for the output rows (stream_copy, as on AVX-512) took conv1_2
  // to 122 but res4's bwd_d to 12.0 (F2 11.9 -> 13.6), so AVX2 stores them plainly.
  for (int i = 0; i < 4; ++i)
    for (int h = 0; h < 2; ++h) transpose4x8(t + i * 64 + 8 * h, 16, y + (i + 32 * h) * ys, 4 * ys);
#else
  for (int o = 0; o < 16; ++o)
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) y[(o * 4 + i) * ys + j] = t[(i * 4 + j) * 16 + o];
#endif
}

// dst[0..n) = src[0..n) with non-temporal stores from dst's first aligned vector on (no read for
// ownership of lines that are overwritten whole). Call stream_fence() before others read dst.
inline void stream_copy(float* dst, const float* src, int64_t n) {
#if defined(__AVX512F__)
  int64_t i = std::min<int64_t>(n, int64_t((-reinterpret_cast<uintptr_t>(dst) & 63) / 4));
  std::memcpy(dst, src, i * sizeof(float));
  for (; i + 16 <= n; i += 16) _mm512_stream_ps(dst + i, _mm512_loadu_ps(src + i));
  std::memcpy(dst + i, src + i, (n - i) * sizeof(float));
#else
  std::memcpy(dst, src, n * sizeof(float));
#endif
}

// dst[0..n) = the bf16 rounding of src[0..n) (a bf16 output).
inline void round_copy(uint16_t* dst, const float* src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = to_bf16(src[i]);
}

inline void stream_fence() {
#if defined(__AVX512F__)
  _mm_sfence();
#endif
}

}  // namespace wino
}  // namespace pb

#pragma GCC diagnostic pop
