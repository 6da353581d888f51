// Direct convolution, register-blocked: each work-item computes VW adjacent output columns
// (one explicit float vector) of one output row for OCB output channels. Weights are padded to a
// multiple of OCB channels per group (zeros), so the inner loop is branch free; stride-1 interior
// columns use vector loads, edges and strides gather lane by lane. Any stride, padding,
// dilation, groups and kernel size.

#ifndef OCB
#define OCB 16  // output channels per work-item (register block)
#endif
#ifndef VW
#define VW 16  // output columns per work-item (vector width: 8 or 16)
#endif
#ifndef WX
#define WX 1  // work-items per group along output column blocks
#endif
#ifndef WY
#define WY 4  // work-items per group along output rows
#endif
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define floatV CAT(float, VW)
#define VLOAD(p) CAT(vload, VW)(0, (p))
#define VSTORE(v, p) CAT(vstore, VW)((v), 0, (p))

// global: (ceil(ow / VW) rounded to WX, oh rounded to WY, mb * g * ocgp / OCB)
__kernel __attribute__((reqd_work_group_size(WX, WY, 1))) void conv_direct(
    __global const float* restrict src, __global const float* restrict wei,
    __global float* restrict dst, const int g, const int icg, const int ocg, const int ocgp,
    const int ih, const int iw, const int oh, const int ow, const int kh, const int kw,
    const int sh, const int sw, const int ph, const int pw, const int dh, const int dw) {
  const int x0 = get_global_id(0) * VW, y = get_global_id(1);
  if (x0 >= ow || y >= oh) return;
  const int nblk = ocgp / OCB;
  const int z = get_global_id(2);
  const int ob = z % nblk, gi = (z / nblk) % g, n = z / (nblk * g);
  const int ih0 = y * sh - ph, iw0 = x0 * sw - pw;
  const int ksz = icg * kh * kw;
  __global const float* s = src + ((size_t)n * g + gi) * icg * ih * iw;
  __global const float* w = wei + ((size_t)gi * ocgp + ob * OCB) * ksz;

  floatV acc[OCB];
#pragma unroll
  for (int o = 0; o < OCB; ++o) acc[o] = (floatV)(0.0f);

  for (int c = 0; c < icg; ++c) {
    for (int r = 0; r < kh; ++r) {
      const int yi = ih0 + r * dh;
      if (yi < 0 || yi >= ih) continue;
      __global const float* srow = s + ((size_t)c * ih + yi) * iw;
      __global const float* wrow = w + (c * kh + r) * kw;
      for (int t = 0; t < kw; ++t) {
        const int xi = iw0 + t * dw;
        floatV v;
        if (sw == 1 && xi >= 0 && xi + VW <= iw) {
          v = VLOAD(srow + xi);
        } else {
          float tmp[VW];
#pragma unroll
          for (int l = 0; l < VW; ++l) {
            const int xl = xi + l * sw;
            tmp[l] = (xl >= 0 && xl < iw) ? srow[xl] : 0.0f;
          }
          v = VLOAD(tmp);
        }
#pragma unroll
        for (int o = 0; o < OCB; ++o) acc[o] = fma(v, (floatV)(wrow[o * ksz + t]), acc[o]);
      }
    }
  }
  const int oc0 = ob * OCB;
  __global float* d = dst + (((size_t)n * g + gi) * ocg + oc0) * oh * ow + (size_t)y * ow + x0;
  const bool full = x0 + VW <= ow;
#pragma unroll
  for (int o = 0; o < OCB; ++o) {
    if (oc0 + o >= ocg) break;
    __global float* dd = d + (size_t)o * oh * ow;
    if (full) {
      VSTORE(acc[o], dd);
    } else {
      float tmp[VW];
      VSTORE(acc[o], tmp);
      for (int l = 0; l < ow - x0; ++l) dd[l] = tmp[l];
    }
  }
}
