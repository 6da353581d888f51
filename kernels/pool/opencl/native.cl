// Pooling kernels for ocl/native: one work-item per output (forward) or per input element
// (backward, a gather: deterministic, no atomics). NCHW; global size (columns, rows, planes).
// ALG: 0 max, 1 average including padding, 2 average excluding padding. WS_T: the argmax
// workspace type (the window index of the first maximum in row-major scan order).
#ifndef ALG
#define ALG 0
#endif
#ifndef WS_T
#define WS_T int
#endif

inline float divisor(int oh, int ow, int IH, int IW, int KH, int KW, int SH, int SW, int PH,
                     int PW) {
#if ALG == 1
  return (float)(KH * KW);
#else
  const int r = oh * SH - PH, c = ow * SW - PW;
  return (float)((min(r + KH, IH) - max(r, 0)) * (min(c + KW, IW) - max(c, 0)));
#endif
}

__kernel void pool_fwd(const int IH, const int IW, const int OH, const int OW, const int KH,
                       const int KW, const int SH, const int SW, const int PH, const int PW,
                       __global const float* restrict src, __global float* restrict dst,
                       __global WS_T* restrict ws, const int with_ws) {
  const int ow = get_global_id(0), oh = get_global_id(1);
  const size_t p = get_global_id(2);
  if (ow >= OW || oh >= OH) return;
  __global const float* x = src + p * IH * IW;
  const int r0 = oh * SH - PH, c0 = ow * SW - PW;
  const int i0 = max(0, -r0), i1 = min(KH, IH - r0), j0 = max(0, -c0), j1 = min(KW, IW - c0);
#if ALG == 0
  float best = -INFINITY;
  int arg = i0 * KW + j0;
  for (int i = i0; i < i1; ++i)
    for (int j = j0; j < j1; ++j) {
      const float v = x[(r0 + i) * IW + c0 + j];
      if (v > best) best = v, arg = i * KW + j;  // strict: the first maximum wins ties
    }
  dst[(p * OH + oh) * OW + ow] = best;
  if (with_ws) ws[(p * OH + oh) * OW + ow] = (WS_T)arg;
#else
  float s = 0.0f;
  for (int i = i0; i < i1; ++i)
    for (int j = j0; j < j1; ++j) s += x[(r0 + i) * IW + c0 + j];
  dst[(p * OH + oh) * OW + ow] = s / divisor(oh, ow, IH, IW, KH, KW, SH, SW, PH, PW);
#endif
}

// diff_src(r, c) = sum over the outputs whose window covers (r, c) of their share of diff_dst.
__kernel void pool_bwd(const int IH, const int IW, const int OH, const int OW, const int KH,
                       const int KW, const int SH, const int SW, const int PH, const int PW,
                       __global const float* restrict dy, __global const WS_T* restrict ws,
                       __global float* restrict dx) {
  const int c = get_global_id(0), r = get_global_id(1);
  const size_t p = get_global_id(2);
  if (c >= IW || r >= IH) return;
  // Outputs with oh*SH - PH <= r < oh*SH - PH + KH.
  const int rr = r + PH, cc = c + PW;
  const int oh0 = rr - KH + 1 <= 0 ? 0 : (rr - KH + SH) / SH, oh1 = min(OH - 1, rr / SH);
  const int ow0 = cc - KW + 1 <= 0 ? 0 : (cc - KW + SW) / SW, ow1 = min(OW - 1, cc / SW);
  __global const float* g = dy + p * OH * OW;
  float s = 0.0f;
  for (int oh = oh0; oh <= oh1; ++oh)
    for (int ow = ow0; ow <= ow1; ++ow) {
#if ALG == 0
      const int k = (rr - oh * SH) * KW + (cc - ow * SW);
      if ((int)ws[p * OH * OW + oh * OW + ow] == k) s += g[oh * OW + ow];
#else
      s += g[oh * OW + ow] / divisor(oh, ow, IH, IW, KH, KW, SH, SW, PH, PW);
#endif
    }
  dx[(p * IH + r) * IW + c] = s;
}
