// cpu/im2col's column copies (im2col, col2im), NCHW <-> chunk-matrix gathers and sgemm wrapper.
#include "kernels/conv/cpu/im2col_cols.h"

#include <algorithm>
#include <cstring>

#include <omp.h>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "kernels/gemm/cpu/packed_sgemm.h"  // transpose_words
#include "kernels/gemm/cpu/sgemm.h"

namespace pb::im2col {

void sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc, const PostOps* post) {
  sgemm_rowmajor(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc, post);
}

bool pointwise(const ConvDesc& d) {
  return d.kh == 1 && d.kw == 1 && d.sh == 1 && d.sw == 1 && d.ph == 0 && d.pw == 0 &&
         d.pad_b() == 0 && d.pad_r() == 0;
}

Chunking plan_chunks(const ConvDesc& d) {
  constexpr int64_t kWideN = 1024;           // columns per sgemm that keep it efficient
  constexpr int64_t kColBytes = 64ll << 20;  // column buffer budget
  Chunking c;
  const int64_t ohw = d.oh * d.ow, k = d.icg() * d.kh * d.kw;
  c.wide = ohw >= (pointwise(d) ? kWideN / 4 : kWideN);
  c.nb = c.wide ? std::max<int64_t>(1, kColBytes / (4 * k * ohw))
                : std::max<int64_t>(1, (kWideN + ohw - 1) / ohw);
  c.nb = std::min(c.nb, d.mb);
  c.no_copy = c.wide && pointwise(d);
  c.threads = omp_get_max_threads();
  c.per_thread = c.threads > 1 && d.mb >= c.threads;
  if (c.per_thread && c.wide) c.nb = 1;
  if (c.per_thread && !c.wide) {
    // Whole rounds of chunks: every thread gets as many chunks (16 images, 2 threads, 6 per
    // chunk would give 10 images to one thread and 6 to the other; 4 per chunk gives 8 and 8).
    const int64_t chunks = (d.mb + c.nb - 1) / c.nb;
    const int64_t rounds = (chunks + c.threads - 1) / c.threads;
    c.nb = (d.mb + rounds * c.threads - 1) / (rounds * c.threads);
  }
  return c;
}

namespace {
// Output columns ox whose input column ox*sw + off lies inside the image: [lo, hi).
void col_range(const ConvDesc& d, int64_t off, int64_t* lo, int64_t* hi) {
  *lo = std::min(d.ow, std::max<int64_t>(0, (-off + d.sw - 1) / d.sw));
  *hi = std::max(*lo, std::min(d.ow, (d.iw - off + d.sw - 1) / d.sw));
}
// o[i] = s[i * S], i < n: with the stride a constant GCC vectorises the loop (loads and
// permutes); with it a variable the loop stayed scalar, 31% of cpu/im2col's time on AlexNet's
// conv1 (stride 4).
template <int S, class T>
void copy_stride(T* __restrict o, const T* __restrict s, int64_t n) {
  for (int64_t i = 0; i < n; ++i) o[i] = s[i * S];
}
#if defined(__AVX512BW__)
// GCC 12's false (maybe-)uninitialized reports on its own intrinsics (_mm256_undefined_si256).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
// Stride 2 with AVX-512: the even elements of two vectors' worth of source per vector of output
// (vpermt2w / vpermt2ps; bytes: vpmovwb of one vector), the last part under masks. A row of a
// ResNet-50 stride-2 layer holds 28 (56 / 2) or 14 elements, too few for the compiler's vector
// loop, which starts after a scalar peel: the bf16 column copy of the 3x3 stride-2 128-channel
// layer took a quarter of its time.
template <class T>
void copy_even(T* o, const T* s, int64_t n) {
  if constexpr (sizeof(T) == 1) {  // the low byte of each 16-bit pair (vpmovwb), 32 per step
    int64_t i = 0;
    for (; i < n; i += 32) {
      const int64_t m = std::min<int64_t>(32, n - i);
      const __m512i a = _mm512_maskz_loadu_epi8(~0ull >> (64 - (2 * m - 1)), s + 2 * i);
      _mm256_mask_storeu_epi8(o + i, __mmask32(~0ull >> (64 - m)), _mm512_cvtepi16_epi8(a));
    }
    return;
  }
  constexpr int64_t L = 64 / sizeof(T);  // elements per vector
  // o[i, i + m) = s[2i], s[2i + 2], ..., m <= L: 2m - 1 elements read (none past the last even
  // one, which may end the source).
  auto step = [&](int64_t i, int64_t m) {
    const int64_t lo = std::min<int64_t>(2 * m - 1, L), hi = 2 * m - 1 - lo;
    if constexpr (sizeof(T) == 2) {
      const __m512i idx =
          _mm512_set_epi16(62, 60, 58, 56, 54, 52, 50, 48, 46, 44, 42, 40, 38, 36, 34, 32, 30, 28,
                           26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
      const __m512i a = _mm512_maskz_loadu_epi16(__mmask32(~0ull >> (64 - lo)), s + 2 * i);
      const __m512i b = hi ? _mm512_maskz_loadu_epi16(__mmask32(~0ull >> (64 - hi)), s + 2 * i + L)
                           : _mm512_setzero_si512();
      _mm512_mask_storeu_epi16(o + i, __mmask32(~0ull >> (64 - m)),
                               _mm512_permutex2var_epi16(a, idx, b));
    } else {
      const __m512i idx =
          _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
      const __m512 a = _mm512_maskz_loadu_ps(__mmask16(~0ull >> (64 - lo)), s + 2 * i);
      const __m512 b = hi ? _mm512_maskz_loadu_ps(__mmask16(~0ull >> (64 - hi)), s + 2 * i + L)
                          : _mm512_setzero_ps();
      _mm512_mask_storeu_ps(o + i, __mmask16(~0ull >> (64 - m)), _mm512_permutex2var_ps(a, idx, b));
    }
  };
  int64_t i = 0;
  for (; i + L <= n; i += L) step(i, L);
  if (i < n) step(i, n - i);
}
#pragma GCC diagnostic pop
#endif

}  // namespace

template <class T>
void copy_strided(T* o, const T* s, int64_t n, int64_t stride) {
  switch (stride) {
    case 2:
#if defined(__AVX512BW__)
      return copy_even(o, s, n);
#endif
      return copy_stride<2>(o, s, n);
    case 3:
      return copy_stride<3>(o, s, n);
    case 4:
      return copy_stride<4>(o, s, n);
    default:
      for (int64_t i = 0; i < n; ++i) o[i] = s[i * stride];
  }
}

template void copy_strided<float>(float*, const float*, int64_t, int64_t);

namespace {
// Row r = (c, ky, kx) of the column matrix for output rows [oy0, oy1) of one image (`plane`: its
// channel c), written to out (oy - oy0) * ow on.
template <class T>
void im2col_row(const ConvDesc& d, const T* plane, int64_t ky, int64_t kx, int64_t oy0, int64_t oy1,
                T* out, T pad) {
  const int64_t off = kx * (d.dw + 1) - d.pw;
  int64_t lo, hi;
  col_range(d, off, &lo, &hi);
  for (int64_t oy = oy0; oy < oy1; ++oy) {
    T* o = out + (oy - oy0) * d.ow;
    const int64_t iy = oy * d.sh - d.ph + ky * (d.dh + 1);
    if (iy < 0 || iy >= d.ih) {
      std::fill(o, o + d.ow, pad);
      continue;
    }
    const T* s = plane + iy * d.iw;
    std::fill(o, o + lo, pad);
    if (d.sw == 1)
      std::memcpy(o + lo, s + lo + off, (hi - lo) * sizeof(T));
    else
      copy_strided(o + lo, s + lo * d.sw + off, hi - lo, d.sw);
    std::fill(o + hi, o + d.ow, pad);
  }
}
}  // namespace

// Channels [c0, c1) and output rows [oy0, oy1) of nb images: col[((c - c0)*kh + ky)*kw + kx]
// [i*(oy1 - oy0)*ow + (oy - oy0)*ow + ox].
template <class T>
void im2col_part(const ConvDesc& d, const T* img, int64_t nb, int64_t ncol, int64_t c0, int64_t c1,
                 int64_t oy0, int64_t oy1, T* col, bool par, T pad) {
  const int64_t per = d.kh * d.kw, ihw = d.ih * d.iw, img_cols = (oy1 - oy0) * d.ow;
#pragma omp parallel for collapse(2) schedule(static) if (par)
  for (int64_t i = 0; i < nb; ++i)
    for (int64_t r = c0 * per; r < c1 * per; ++r) {
      const int64_t kx = r % d.kw, ky = (r / d.kw) % d.kh, c = r / per;
      im2col_row(d, img + (i * d.ic + c) * ihw, ky, kx, oy0, oy1,
                 col + (r - c0 * per) * ncol + i * img_cols, pad);
    }
}

template <class T>
void im2col(const ConvDesc& d, const T* img, int64_t nb, int64_t ncol, T* col, bool par, T pad) {
  im2col_part(d, img, nb, ncol, 0, d.icg(), 0, d.oh, col, par, pad);
}

void im2col_block(const ConvDesc& d, const float* img, int64_t nb, int64_t ncol, int64_t c0,
                  int64_t c1, int64_t oy0, int64_t oy1, float* col, bool par) {
  im2col_part(d, img, nb, ncol, c0, c1, oy0, oy1, col, par, 0.0f);
}

template void im2col<float>(const ConvDesc&, const float*, int64_t, int64_t, float*, bool, float);
template void im2col<uint16_t>(const ConvDesc&, const uint16_t*, int64_t, int64_t, uint16_t*, bool,
                               uint16_t);
template void im2col<uint8_t>(const ConvDesc&, const uint8_t*, int64_t, int64_t, uint8_t*, bool,
                              uint8_t);

namespace {
// o[2 i] += s[i] for i in [lo, hi), where o's row has `room` floats from o on: with AVX2, 8 sums
// at a time as two contiguous vectors of o with s interleaved with zeros, while those stay in
// the row (the odd positions add +0, which leaves every value but -0 as it was, and -0 == +0).
// Element by element the strided adds took a fifth of cpu/im2col's bwd_d on ResNet-50's 3x3
// stride-2 layer (perf).
void add_stride2(float* o, const float* s, int64_t lo, int64_t hi, int64_t room) {
  int64_t i = lo;
#if defined(__AVX2__)
  const __m256 z = _mm256_setzero_ps();
  for (; i + 8 <= hi && 2 * i + 16 <= room; i += 8) {
    const __m256 v = _mm256_loadu_ps(s + i);
    const __m256 l = _mm256_unpacklo_ps(v, z), h = _mm256_unpackhi_ps(v, z);
    float* q = o + 2 * i;
    _mm256_storeu_ps(q, _mm256_add_ps(_mm256_loadu_ps(q), _mm256_permute2f128_ps(l, h, 0x20)));
    _mm256_storeu_ps(q + 8,
                     _mm256_add_ps(_mm256_loadu_ps(q + 8), _mm256_permute2f128_ps(l, h, 0x31)));
  }
#else
  (void)room;
#endif
  for (; i < hi; ++i) o[2 * i] += s[i];
}

// Adds row r = (c, ky, kx) of the column matrix, output rows [oy0, oy1) from `in`, into channel
// c's plane.
void col2im_row(const ConvDesc& d, const float* in, int64_t ky, int64_t kx, int64_t oy0,
                int64_t oy1, float* plane) {
  const int64_t off = kx * (d.dw + 1) - d.pw;
  int64_t lo, hi;
  col_range(d, off, &lo, &hi);
  for (int64_t oy = oy0; oy < oy1; ++oy) {
    const int64_t iy = oy * d.sh - d.ph + ky * (d.dh + 1);
    if (iy < 0 || iy >= d.ih) continue;
    float* o = plane + iy * d.iw + off;
    const float* s = in + (oy - oy0) * d.ow;
    if (d.sw == 1)
      for (int64_t ox = lo; ox < hi; ++ox) o[ox] += s[ox];
    else if (d.sw == 2)
      add_stride2(o, s, lo, hi, d.iw - off);
    else
      for (int64_t ox = lo; ox < hi; ++ox) o[ox * d.sw] += s[ox];
  }
}
}  // namespace

void col2im(const ConvDesc& d, const float* col, int64_t nb, int64_t ncol, float* img, bool par) {
  const int64_t ihw = d.ih * d.iw, ohw = d.oh * d.ow;
#pragma omp parallel for collapse(2) schedule(static) if (par)
  for (int64_t i = 0; i < nb; ++i)
    for (int64_t c = 0; c < d.icg(); ++c) {
      float* plane = img + (i * d.ic + c) * ihw;
      if (pointwise(d)) {  // one entry per pixel: a copy
        std::memcpy(plane, col + c * ncol + i * ohw, ihw * sizeof(float));
        continue;
      }
      std::fill(plane, plane + ihw, 0.0f);
      for (int64_t ky = 0; ky < d.kh; ++ky)
        for (int64_t kx = 0; kx < d.kw; ++kx)
          col2im_row(d, col + ((c * d.kh + ky) * d.kw + kx) * ncol + i * ohw, ky, kx, 0, d.oh,
                     plane);
    }
}

void col2im_rows_add(const ConvDesc& d, const float* col, int64_t oy0, int64_t oy1, float* img) {
  const int64_t ihw = d.ih * d.iw, ncol = (oy1 - oy0) * d.ow;
  for (int64_t c = 0; c < d.icg(); ++c)
    for (int64_t ky = 0; ky < d.kh; ++ky)
      for (int64_t kx = 0; kx < d.kw; ++kx)
        col2im_row(d, col + ((c * d.kh + ky) * d.kw + kx) * ncol, ky, kx, oy0, oy1, img + c * ihw);
}

void scatter(const ConvDesc& d, const float* t, bool transposed, int64_t n0, int64_t nb, int64_t gi,
             float* x, bool par) {
  const int64_t ohw = d.oh * d.ow;
  if (transposed) {  // t: (image, pixel) x channel; blocks of 64 pixels of one image each
    const int64_t ocg = d.ocg(), blocks = (ohw + 63) / 64;
#pragma omp parallel for schedule(static) if (par)
    for (int64_t u = 0; u < nb * blocks; ++u) {
      const int64_t i = u / blocks, p0 = u % blocks * 64;
      transpose_words(t + (i * ohw + p0) * ocg, ocg,
                      static_cast<int>(std::min<int64_t>(64, ohw - p0)), ocg,
                      x + ((n0 + i) * d.oc + gi * ocg) * ohw + p0, ohw);
    }
    return;
  }
#pragma omp parallel for collapse(2) schedule(static) if (par)
  for (int64_t i = 0; i < nb; ++i)
    for (int64_t o = 0; o < d.ocg(); ++o)
      std::memcpy(x + ((n0 + i) * d.oc + gi * d.ocg() + o) * ohw, t + (o * nb + i) * ohw,
                  ohw * sizeof(float));
}

template <class T>
void gather(const ConvDesc& d, const T* x, int64_t n0, int64_t nb, int64_t gi, T* t, bool par) {
  const int64_t ohw = d.oh * d.ow;
#pragma omp parallel for collapse(2) schedule(static) if (par)
  for (int64_t i = 0; i < nb; ++i)
    for (int64_t o = 0; o < d.ocg(); ++o)
      std::memcpy(t + (o * nb + i) * ohw, x + ((n0 + i) * d.oc + gi * d.ocg() + o) * ohw,
                  ohw * sizeof(T));
}
template void gather<float>(const ConvDesc&, const float*, int64_t, int64_t, int64_t, float*, bool);
template void gather<uint16_t>(const ConvDesc&, const uint16_t*, int64_t, int64_t, int64_t,
                               uint16_t*, bool);

}  // namespace pb::im2col
