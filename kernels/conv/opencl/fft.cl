// FFT convolution kernels for ocl/fft (stride 1, overlap-save tiles): fft_input transforms NH x NW
// input tiles to their half spectra (r2c), laid out for one real GEMM per (group, frequency);
// fft_output transforms the products back (c2r) and writes the valid th x tw corner of each tile.
//
// One work-item per (tile, block of VC channels, group): the VC channels are the lanes of explicit
// floatVC vectors (PoCL's implicit vectorisation across work-items did not vectorise these
// kernels: ~1.5 GFLOP/s). Every 1-D FFT runs in registers (radix-2 DIT, fully unrolled, so bit
// reversal and twiddles are compile-time constants); the plane between the row and column passes
// lives in local memory. Real data use the two-for-one trick: rows 2r and 2r + 1 are the real and
// imaginary parts of one complex FFT, and the real DC and Nyquist columns share one FFT.
//
// Spectrum layout: per (group gi, frequency f = k1 * W2 + k2, k1 < NH, k2 <= NW / 2) the GEMM's
// operand X_f^T is column-major: X[(gi * F + f) * fs + p * ps + t * ld + c] holds part p of tile
// t, channel c. GAUSS 0 (real embedding, ld = 2 icg, ps = icg): p = 0 Re, 1 Im, one K = 2 icg
// matrix. GAUSS 1 (3M, ld = icg, ps = T * icg): p = 0 Re + Im, 1 Im, 2 Re, three matrices. The
// GEMM makes Y_f^T in the same layout (ocg for icg): Re Y = Y0, Im Y = Y1 (GAUSS 0) or
// Re Y = Y0 - Y1, Im Y = Y0 + Y2 (GAUSS 1).

#ifndef NH
#define NH 16  // FFT rows (8, 16, 32 or 64)
#endif
#ifndef NW
#define NW 16  // FFT columns (8, 16, 32 or 64)
#endif
#ifndef VC
#define VC 16  // channels per work-item (vector width: 4, 8 or 16)
#endif
#ifndef GAUSS
#define GAUSS 0  // complex products as 3 real GEMMs (1) or one on the real embedding (0)
#endif
#define W2 (NW / 2 + 1)  // half-spectrum columns
#define F (NH * W2)      // frequencies per plane
#define HL (NH / 2)      // row pairs
#define WL (NW / 2)      // the Nyquist column
#define LOG2(n) ((n) == 8 ? 3 : (n) == 16 ? 4 : (n) == 32 ? 5 : 6)

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define floatV CAT(float, VC)
#define VLOAD(p) CAT(vload, VC)(0, (p))
#define VSTORE(v, p) CAT(vstore, VC)((v), 0, (p))

// exp(-2 pi i k / 64), k < 32.
__constant float2 TW64[32] = {
    (float2)(1.000000000e+00f, 0.000000000e+00f),   (float2)(9.951847267e-01f, -9.801714033e-02f),
    (float2)(9.807852804e-01f, -1.950903220e-01f),  (float2)(9.569403357e-01f, -2.902846773e-01f),
    (float2)(9.238795325e-01f, -3.826834324e-01f),  (float2)(8.819212643e-01f, -4.713967368e-01f),
    (float2)(8.314696123e-01f, -5.555702330e-01f),  (float2)(7.730104534e-01f, -6.343932842e-01f),
    (float2)(7.071067812e-01f, -7.071067812e-01f),  (float2)(6.343932842e-01f, -7.730104534e-01f),
    (float2)(5.555702330e-01f, -8.314696123e-01f),  (float2)(4.713967368e-01f, -8.819212643e-01f),
    (float2)(3.826834324e-01f, -9.238795325e-01f),  (float2)(2.902846773e-01f, -9.569403357e-01f),
    (float2)(1.950903220e-01f, -9.807852804e-01f),  (float2)(9.801714033e-02f, -9.951847267e-01f),
    (float2)(0.000000000e+00f, -1.000000000e+00f),  (float2)(-9.801714033e-02f, -9.951847267e-01f),
    (float2)(-1.950903220e-01f, -9.807852804e-01f), (float2)(-2.902846773e-01f, -9.569403357e-01f),
    (float2)(-3.826834324e-01f, -9.238795325e-01f), (float2)(-4.713967368e-01f, -8.819212643e-01f),
    (float2)(-5.555702330e-01f, -8.314696123e-01f), (float2)(-6.343932842e-01f, -7.730104534e-01f),
    (float2)(-7.071067812e-01f, -7.071067812e-01f), (float2)(-7.730104534e-01f, -6.343932842e-01f),
    (float2)(-8.314696123e-01f, -5.555702330e-01f), (float2)(-8.819212643e-01f, -4.713967368e-01f),
    (float2)(-9.238795325e-01f, -3.826834324e-01f), (float2)(-9.569403357e-01f, -2.902846773e-01f),
    (float2)(-9.807852804e-01f, -1.950903220e-01f), (float2)(-9.951847267e-01f, -9.801714033e-02f)};

// The low `bits` bits of j, reversed (constant-folded once the FFT is unrolled).
inline int bitrev(const int j, const int bits) {
  int r = 0;
  for (int b = 0; b < bits; ++b) r |= ((j >> b) & 1) << (bits - 1 - b);
  return r;
}

// In-place complex FFT of N points on VC lanes: z[k] = sum_j z[j] exp(-sgn 2 pi i j k / N)
// (sgn = 1: forward, -1: inverse, unnormalised). Radix-2 DIT after a bit-reversed copy; the
// w = 1 and w = -sgn i butterflies skip the multiply.
#define DEFINE_FFT(NAME, N)                                                         \
  inline void NAME(floatV* re, floatV* im, const float sgn) {                       \
    floatV tr[N], ti[N];                                                            \
    _Pragma("unroll") for (int j = 0; j < (N); ++j) {                               \
      const int r = bitrev(j, LOG2(N));                                             \
      tr[j] = re[r];                                                                \
      ti[j] = im[r];                                                                \
    }                                                                               \
    _Pragma("unroll") for (int s = 0; s < LOG2(N); ++s) {                           \
      const int hf = 1 << s, m = hf << 1;                                           \
      _Pragma("unroll") for (int k = 0; k < (N); k += m) {                          \
        _Pragma("unroll") for (int j = 0; j < hf; ++j) {                            \
          const floatV ar = tr[k + j], ai = ti[k + j];                              \
          const floatV br = tr[k + j + hf], bi = ti[k + j + hf];                    \
          floatV pr, pi;                                                            \
          if (j == 0) {                                                             \
            pr = br, pi = bi;                                                       \
          } else if (4 * j == m) {                                                  \
            pr = sgn * bi, pi = -sgn * br;                                          \
          } else {                                                                  \
            const float wr = TW64[j * (64 / m)].x, wi = sgn * TW64[j * (64 / m)].y; \
            pr = br * wr - bi * wi, pi = br * wi + bi * wr;                         \
          }                                                                         \
          tr[k + j] = ar + pr, ti[k + j] = ai + pi;                                 \
          tr[k + j + hf] = ar - pr, ti[k + j + hf] = ai - pi;                       \
        }                                                                           \
      }                                                                             \
    }                                                                               \
    _Pragma("unroll") for (int j = 0; j < (N); ++j) re[j] = tr[j], im[j] = ti[j];   \
  }

DEFINE_FFT(fft_h, NH)
#if NW != NH
DEFINE_FFT(fft_w, NW)
#else
#define fft_w fft_h
#endif

// Lane l = p[off[l]].
inline floatV gather(__global const float* p, const int* off) {
  float v[VC];
#pragma unroll
  for (int l = 0; l < VC; ++l) v[l] = p[off[l]];
  return VLOAD(v);
}
// p[l * stride] = lane l, for l < n.
inline void scatter(const floatV x, __global float* p, const int stride, const int n) {
  float v[VC];
  VSTORE(x, v);
#pragma unroll
  for (int l = 0; l < VC; ++l)
    if (l < n) p[l * stride] = v[l];
}
// VC contiguous floats, or the first n when n < VC.
inline void store_n(const floatV x, __global float* p, const int n) {
  if (n == VC) {
    VSTORE(x, p);
  } else {
    float v[VC];
    VSTORE(x, v);
    for (int l = 0; l < n; ++l) p[l] = v[l];
  }
}
inline floatV load_n(__global const float* p, const int n) {
  if (n == VC) return VLOAD(p);
  float v[VC];
#pragma unroll
  for (int l = 0; l < VC; ++l) v[l] = l < n ? p[l] : 0.0f;
  return VLOAD(v);
}

// Stores the spectrum value (re, im) of VC channels at p (parts ps apart).
inline void put(const floatV re, const floatV im, __global float* p, const long ps, const int n) {
#if GAUSS
  store_n(re + im, p, n);
  store_n(im, p + ps, n);
  store_n(re, p + 2 * ps, n);
#else
  store_n(re, p, n);
  store_n(im, p + ps, n);
#endif
}
// Loads the product (re, im) of VC channels from p.
inline void get(__global const float* p, const long ps, const int n, floatV* re, floatV* im) {
#if GAUSS
  const floatV k1 = load_n(p, n);
  *re = k1 - load_n(p + ps, n);
  *im = k1 + load_n(p + 2 * ps, n);
#else
  *re = load_n(p, n);
  *im = load_n(p + ps, n);
#endif
}

// The plane between the passes: S[(r * W2 + k) * VC + lane], real and imaginary parts apart.
#define SRE(r, k) (Sre + ((r)*W2 + (k)) * VC)
#define SIM(r, k) (Sim + ((r)*W2 + (k)) * VC)

// global: (T, ceil(icg / VC), g). Tile t (image-major, then tile row, tile column) starts at
// output (ty * th, tx * tw), i.e. input (ty * th - ph, tx * tw - pw); zero outside the image.
__kernel __attribute__((reqd_work_group_size(1, 1, 1))) void fft_input(
    __global const float* restrict src, const long src_off, __global float* restrict X,
    const long fs, const long ps, const int ld, const int tiles_h, const int tiles_w, const int th,
    const int tw, const int ic, const int icg, const int ih, const int iw, const int ph,
    const int pw) {
  __local float Sre[NH * W2 * VC], Sim[NH * W2 * VC];
  const int t = get_global_id(0), c0 = get_global_id(1) * VC, gi = get_global_id(2);
  const int nc = min(VC, icg - c0), per = tiles_h * tiles_w;
  const int nl = t / per, rem = t - nl * per, ty = rem / tiles_w, tx = rem - ty * tiles_w;
  __global const float* s = src + src_off + ((size_t)nl * ic + gi * icg + c0) * ih * iw;
  int off[VC];
#pragma unroll
  for (int l = 0; l < VC; ++l) off[l] = min(l, nc - 1) * ih * iw;
  const int y0 = ty * th - ph, x0 = tx * tw - pw;
  // Rows 2 r2 and 2 r2 + 1: one complex FFT, split into two half spectra.
  for (int r2 = 0; r2 < HL; ++r2) {
    const int ya = y0 + 2 * r2, yb = ya + 1;
    const bool oka = ya >= 0 && ya < ih, okb = yb >= 0 && yb < ih;
    if (!oka && !okb) {
#pragma unroll
      for (int k = 0; k < W2; ++k) {
        VSTORE((floatV)0.0f, SRE(2 * r2, k)), VSTORE((floatV)0.0f, SIM(2 * r2, k));
        VSTORE((floatV)0.0f, SRE(2 * r2 + 1, k)), VSTORE((floatV)0.0f, SIM(2 * r2 + 1, k));
      }
      continue;
    }
    floatV zr[NW], zi[NW];
#pragma unroll
    for (int j = 0; j < NW; ++j) {
      const int x = x0 + j;
      const bool okx = x >= 0 && x < iw;
      zr[j] = oka && okx ? gather(s + ya * iw + x, off) : (floatV)0.0f;
      zi[j] = okb && okx ? gather(s + yb * iw + x, off) : (floatV)0.0f;
    }
    fft_w(zr, zi, 1.0f);
#pragma unroll
    for (int k = 0; k < W2; ++k) {
      const int m = (NW - k) & (NW - 1);
      // A = (Z[k] + conj Z[m]) / 2, B = -i (Z[k] - conj Z[m]) / 2
      VSTORE(0.5f * (zr[k] + zr[m]), SRE(2 * r2, k));
      VSTORE(0.5f * (zi[k] - zi[m]), SIM(2 * r2, k));
      VSTORE(0.5f * (zi[k] + zi[m]), SRE(2 * r2 + 1, k));
      VSTORE(-0.5f * (zr[k] - zr[m]), SIM(2 * r2 + 1, k));
    }
  }
  __global float* x = X + (size_t)gi * F * fs + (size_t)t * ld + c0;
  // Column 0 (DC) + i * column NW / 2 (Nyquist): both real.
  {
    floatV zr[NH], zi[NH];
#pragma unroll
    for (int r = 0; r < NH; ++r) zr[r] = VLOAD(SRE(r, 0)), zi[r] = VLOAD(SRE(r, WL));
    fft_h(zr, zi, 1.0f);
#pragma unroll
    for (int k = 0; k < NH; ++k) {
      const int m = (NH - k) & (NH - 1);
      __global float* p0 = x + k * W2 * fs;
      put(0.5f * (zr[k] + zr[m]), 0.5f * (zi[k] - zi[m]), p0, ps, nc);
      put(0.5f * (zi[k] + zi[m]), -0.5f * (zr[k] - zr[m]), p0 + WL * fs, ps, nc);
    }
  }
  for (int c = 1; c < WL; ++c) {
    floatV zr[NH], zi[NH];
#pragma unroll
    for (int r = 0; r < NH; ++r) zr[r] = VLOAD(SRE(r, c)), zi[r] = VLOAD(SIM(r, c));
    fft_h(zr, zi, 1.0f);
#pragma unroll
    for (int k = 0; k < NH; ++k) put(zr[k], zi[k], x + (k * W2 + c) * fs, ps, nc);
  }
}

// global: (T, ceil(ocg / VC), g). The inverse of fft_input for Y (the filters' spectra carry the
// 1 / (NH * NW)); writes rows < th and columns < tw of each tile, clipped at the image's edge.
__kernel __attribute__((reqd_work_group_size(1, 1, 1))) void fft_output(
    __global const float* restrict Y, __global float* restrict dst, const long dst_off,
    const long fs, const long ps, const int ld, const int tiles_h, const int tiles_w, const int th,
    const int tw, const int oc, const int ocg, const int oh, const int ow) {
  __local float Sre[NH * W2 * VC], Sim[NH * W2 * VC];
  const int t = get_global_id(0), c0 = get_global_id(1) * VC, gi = get_global_id(2);
  const int nc = min(VC, ocg - c0), per = tiles_h * tiles_w;
  __global const float* y = Y + (size_t)gi * F * fs + (size_t)t * ld + c0;
  // Inverse column FFTs; column 0 packs DC + i * Nyquist (both real after it).
  {
    floatV zr[NH], zi[NH];
#pragma unroll
    for (int r = 0; r < NH; ++r) {
      floatV ar, ai, br, bi;
      get(y + r * W2 * fs, ps, nc, &ar, &ai);
      get(y + (r * W2 + WL) * fs, ps, nc, &br, &bi);
      zr[r] = ar - bi, zi[r] = ai + br;
    }
    fft_h(zr, zi, -1.0f);
#pragma unroll
    for (int r = 0; r < NH; ++r) {
      VSTORE(zr[r], SRE(r, 0)), VSTORE((floatV)0.0f, SIM(r, 0));
      VSTORE(zi[r], SRE(r, WL)), VSTORE((floatV)0.0f, SIM(r, WL));
    }
  }
  for (int c = 1; c < WL; ++c) {
    floatV zr[NH], zi[NH];
#pragma unroll
    for (int r = 0; r < NH; ++r) get(y + (r * W2 + c) * fs, ps, nc, &zr[r], &zi[r]);
    fft_h(zr, zi, -1.0f);
#pragma unroll
    for (int r = 0; r < NH; ++r) VSTORE(zr[r], SRE(r, c)), VSTORE(zi[r], SIM(r, c));
  }
  // Rows 2 r2, 2 r2 + 1: Hermitian half rows A, B -> one complex inverse FFT of A + i B.
  const int nl = t / per, rem = t - nl * per, ty = rem / tiles_w, tx = rem - ty * tiles_w;
  const int x0 = tx * tw, plane = oh * ow;
  __global float* d = dst + dst_off + (((size_t)nl * oc + gi * ocg + c0) * oh + ty * th) * ow + x0;
  const int rows = min(th, oh - ty * th), cols = min(tw, ow - x0);
  for (int r2 = 0; 2 * r2 < rows; ++r2) {
    const int ra = 2 * r2, rb = ra + 1;
    floatV zr[NW], zi[NW];
#pragma unroll
    for (int j = 0; j < NW; ++j) {
      const int k = j <= WL ? j : NW - j;
      const float sg = j <= WL ? 1.0f : -1.0f;  // conjugate the mirrored half
      const floatV ar = VLOAD(SRE(ra, k)), ai = sg * VLOAD(SIM(ra, k));
      const floatV br = VLOAD(SRE(rb, k)), bi = sg * VLOAD(SIM(rb, k));
      zr[j] = ar - bi, zi[j] = ai + br;
    }
    fft_w(zr, zi, -1.0f);
    __global float* da = d + ra * ow;
#pragma unroll
    for (int j = 0; j < NW; ++j)
      if (j < cols) scatter(zr[j], da + j, plane, nc);
    if (rb < rows) {
#pragma unroll
      for (int j = 0; j < NW; ++j)
        if (j < cols) scatter(zi[j], da + ow + j, plane, nc);
    }
  }
}
