// Direct convolution backward on OpenCL (ocl/direct): bwd_d as a transposed convolution split by
// column stride phase, bwd_w as per-chunk partial weight gradients; explicit float vectors of VW
// columns, register blocks of channels and taps. Any stride, padding, dilation and groups.

#ifndef ICB
#define ICB 16  // bwd_d: input channels per work-item
#endif
#ifndef OB
#define OB 4  // bwd_w: output channels per work-item
#endif
#ifndef TB
#define TB 4  // bwd_w: taps (input channel, kernel column) per work-item
#endif
#ifndef VW
#define VW 16  // columns per vector (8 or 16)
#endif
#ifndef WX
#define WX 1
#endif
#ifndef WY
#define WY 4
#endif
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define floatV CAT(float, VW)
#define VLOAD(p) CAT(vload, VW)(0, (p))
#define VSTORE(v, p) CAT(vstore, VW)((v), 0, (p))

// VW values row[x0 + l * step] for lanes l with 0 <= x0 + l * step < len (and l < lanes), else 0.
inline floatV gather(__global const float* row, int x0, int step, int len, int lanes) {
  float tmp[VW];
#pragma unroll
  for (int l = 0; l < VW; ++l) {
    const int x = x0 + l * step;
    tmp[l] = (l < lanes && x >= 0 && x < len) ? row[x] : 0.0f;
  }
  return VLOAD(tmp);
}

// bwd_d: diff_src(n, c, iy, ix) = sum over (o, ky, kx) of diff_dst(n, o, oy, ox) * w(o, c, ky, kx)
// with oy * sh = iy + ph - ky * dh, ox * sw = ix + pw - kx * dw. Columns of one phase
// rx = (ix + pw) % sw are ix = sw * q + rx - pw; a tap kx reaches them iff (kx * dw - rx) % sw ==
// 0, at ox = q - (kx * dw - rx) / sw: VW adjacent q read VW adjacent ox (one vector load inside).
// Each work-item: VW columns q of one phase, one row iy, ICB input channels. Weights repacked to
// [g][icgp / ICB][kh][kw][ocg][ICB] (zero channels past icg).
// global: (sw * ceil(nq / VW) (dimension 0 = q-block * sw + rx), ih, mb * g * icgp / ICB).
__kernel __attribute__((reqd_work_group_size(WX, WY, 1))) void conv_direct_bwd_d(
    __global const float* restrict dd, __global const float* restrict wei,
    __global float* restrict ds, const int g, const int icg, const int ocg, const int icgp,
    const int ih, const int iw, const int oh, const int ow, const int kh, const int kw,
    const int sh, const int sw, const int ph, const int pw, const int dh, const int dw) {
  const int gx = get_global_id(0), iy = get_global_id(1);
  if (iy >= ih) return;
  const int rx = gx % sw, qb = gx / sw;
  // Phase rx covers q in [lo, hi): 0 <= sw * q + rx - pw < iw.
  const int lo = (pw - rx + sw - 1) / sw, last = iw - 1 + pw - rx;
  const int hi = last < 0 ? lo : max(lo, last / sw + 1);
  const int q0 = lo + qb * VW;
  if (q0 >= hi) return;
  const int nblk = icgp / ICB, z = get_global_id(2);
  const int ib = z % nblk, gi = (z / nblk) % g, n = z / (nblk * g);
  const size_t ohw = (size_t)oh * ow;
  __global const float* s = dd + ((size_t)n * g + gi) * ocg * ohw;
  __global const float* w = wei + (size_t)(gi * nblk + ib) * kh * kw * ocg * ICB;

  floatV acc[ICB];
#pragma unroll
  for (int i = 0; i < ICB; ++i) acc[i] = (floatV)(0.0f);

  for (int ky = 0; ky < kh; ++ky) {
    const int t = iy + ph - ky * dh;
    if (t < 0 || t % sh) continue;
    const int oy = t / sh;
    if (oy >= oh) continue;
    for (int kx = 0; kx < kw; ++kx) {
      const int xx = kx * dw - rx;
      if (xx % sw) continue;
      const int ox0 = q0 - xx / sw;
      const bool vec = ox0 >= 0 && ox0 + VW <= ow;
      __global const float* row = s + (size_t)oy * ow;
      __global const float* wk = w + (ky * kw + kx) * ocg * ICB;
      for (int o = 0; o < ocg; ++o, row += ohw, wk += ICB) {
        const floatV v = vec ? VLOAD(row + ox0) : gather(row, ox0, 1, ow, VW);
#pragma unroll
        for (int i = 0; i < ICB; ++i) acc[i] = fma(v, (floatV)(wk[i]), acc[i]);
      }
    }
  }
  const int c0 = ib * ICB, ix0 = sw * q0 + rx - pw, lanes = min(VW, hi - q0);
  __global float* d = ds + (((size_t)n * g + gi) * icg + c0) * ih * iw + (size_t)iy * iw + ix0;
#pragma unroll
  for (int i = 0; i < ICB; ++i) {
    if (c0 + i >= icg) break;
    __global float* dd_ = d + (size_t)i * ih * iw;
    if (sw == 1 && lanes == VW) {
      VSTORE(acc[i], dd_);
    } else {
      float tmp[VW];
      VSTORE(acc[i], tmp);
      for (int l = 0; l < lanes; ++l) dd_[l * sw] = tmp[l];
    }
  }
}

inline float hsum(floatV v) {
  float tmp[VW];
  VSTORE(v, tmp);
  float s = 0.0f;
#pragma unroll
  for (int l = 0; l < VW; ++l) s += tmp[l];
  return s;
}

// bwd_w copies (run before conv_direct_bwd_w), so that its loads are whole vectors:
// global: (ih, mb * ic). Row (z, y) of src split by column phase and padded with zeros:
// xs[((z * ih + y) * sw + ph) * wq + q] = src(z, y, q * sw + ph - pw) (0 outside the image).
__kernel __attribute__((reqd_work_group_size(1, 1, 1))) void split_src(
    __global const float* restrict src, __global float* restrict xs, const int ih, const int iw,
    const int sw, const int pw, const int wq) {
  const int y = get_global_id(0), z = get_global_id(1);
  __global const float* in = src + ((size_t)z * ih + y) * iw;
  __global float* out = xs + ((size_t)z * ih + y) * sw * wq;
  for (int ph = 0; ph < sw; ++ph, out += wq)
    for (int q = 0; q < wq; ++q) {
      const int xi = q * sw + ph - pw;
      out[q] = (xi >= 0 && xi < iw) ? in[xi] : 0.0f;
    }
}

// global: (oh, mb * oc). diff_dst rows padded with zeros to owp (a multiple of VW).
__kernel __attribute__((reqd_work_group_size(1, 1, 1))) void pad_dd(
    __global const float* restrict dd, __global float* restrict ddp, const int oh, const int ow,
    const int owp) {
  const size_t row = (size_t)get_global_id(1) * oh + get_global_id(0);
  __global const float* in = dd + row * ow;
  __global float* out = ddp + row * owp;
  for (int x = 0; x < owp; ++x) out[x] = x < ow ? in[x] : 0.0f;
}

// bwd_w: diff_wei(o, c, ky, kx) = sum over (n, oy, ox) of diff_dst(n, o, oy, ox) *
// src(n, c, oy * sh - ph + ky * dh, ox * sw - pw + kx * dw). Each work-item sums, over the
// flattened rows r = n * oh + oy of its chunk [p * rows, (p + 1) * rows), OB output channels x
// TB taps f = c * kw + kx at one ky, VW columns ox per vector; it writes the lane sums to the
// chunk's partial gradient part + p * wsize (goihw). Every weight has one owner and a fixed order.
// Inputs are split_src's xs (tap kx reads phase (kx * dw) % sw from q = ox + kx * dw / sw) and
// pad_dd's ddp (zero lanes past ow), so every load is a vector.
// global: (ceil(icg * kw / TB), ceil(ocg / OB) * kh, g * parts).
__kernel __attribute__((reqd_work_group_size(WX, 1, 1))) void conv_direct_bwd_w(
    __global const float* restrict xs, __global const float* restrict ddp,
    __global float* restrict part, const int g, const int icg, const int ocg, const int ih,
    const int oh, const int owp, const int kh, const int kw, const int sh, const int sw,
    const int ph, const int dh, const int dw, const int wq, const int rows, const int nrows) {
  const int nf = icg * kw, f0 = get_global_id(0) * TB;
  if (f0 >= nf) return;
  const int nob = (ocg + OB - 1) / OB, y = get_global_id(1), z = get_global_id(2);
  const int ob = y % nob, ky = y / nob, gi = z % g, p = z / g;
  const int r0 = p * rows, r1 = min(nrows, r0 + rows);
  const size_t xrow = (size_t)sw * wq, xplane = (size_t)ih * xrow, dplane = (size_t)oh * owp;
  const size_t ximg = (size_t)g * icg * xplane, dimg = (size_t)g * ocg * dplane;
  // Tap and channel offsets; ragged blocks repeat the last tap / channel (results dropped).
  size_t soff[TB], doff[OB];
#pragma unroll
  for (int j = 0; j < TB; ++j) {
    const int f = min(f0 + j, nf - 1), c = f / kw, kx = f - c * kw, x = kx * dw;
    soff[j] = (size_t)(gi * icg + c) * xplane + (size_t)(x % sw) * wq + x / sw;
  }
#pragma unroll
  for (int o = 0; o < OB; ++o) doff[o] = (size_t)(gi * ocg + min(ob * OB + o, ocg - 1)) * dplane;

  floatV acc[OB][TB];
#pragma unroll
  for (int o = 0; o < OB; ++o)
#pragma unroll
    for (int j = 0; j < TB; ++j) acc[o][j] = (floatV)(0.0f);

  for (int r = r0; r < r1; ++r) {
    const int n = r / oh, oy = r - n * oh, iy = oy * sh - ph + ky * dh;
    if (iy < 0 || iy >= ih) continue;
    __global const float* sr = xs + n * ximg + (size_t)iy * xrow;
    __global const float* dr = ddp + n * dimg + (size_t)oy * owp;
    for (int x0 = 0; x0 < owp; x0 += VW) {
      floatV dv[OB];
#pragma unroll
      for (int o = 0; o < OB; ++o) dv[o] = VLOAD(dr + doff[o] + x0);
#pragma unroll
      for (int j = 0; j < TB; ++j) {
        const floatV sv = VLOAD(sr + soff[j] + x0);
#pragma unroll
        for (int o = 0; o < OB; ++o) acc[o][j] = fma(dv[o], sv, acc[o][j]);
      }
    }
  }
  const size_t kk = (size_t)kh * kw;
  __global float* out = part + (size_t)p * g * ocg * icg * kk;
#pragma unroll
  for (int o = 0; o < OB; ++o) {
    const int oo = ob * OB + o;
    if (oo >= ocg) break;
#pragma unroll
    for (int j = 0; j < TB; ++j) {
      const int f = f0 + j;
      if (f >= nf) break;
      const int c = f / kw, kx = f - c * kw;
      out[((size_t)(gi * ocg + oo) * icg + c) * kk + ky * kw + kx] = hsum(acc[o][j]);
    }
  }
}
