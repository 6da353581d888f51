// Implicit-GEMM convolution: C (positions x output channels) = A (positions x icg*kh*kw) * B
// (weights), where the tiles of A are gathered from the source on the fly into local memory (no
// im2col workspace); the micro-kernel is gemm/tiled.cl's (vectors along positions). Any shape.

#ifndef TSM
#define TSM 64  // output positions per work-group
#endif
#ifndef TSN
#define TSN 64  // output channels per work-group
#endif
#ifndef TSK
#define TSK 32  // reduction depth per step
#endif
#ifndef WPTM
#define WPTM 32
#endif
#ifndef WPTN
#define WPTN 8
#endif
#ifndef VW
#define VW 16
#endif
#define RTSM (TSM / WPTM)
#define RTSN (TSN / WPTN)
#define WG (RTSM * RTSN)
#define VM (WPTM / VW)
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define floatV CAT(float, VW)
#define VLOAD(p) CAT(vload, VW)(0, (p))
#define VSTORE(v, p) CAT(vstore, VW)((v), 0, (p))

// ktab[3 * k + {0, 1, 2}] = source offset, row shift and column shift of reduction index k
// (k = (c * kh + r) * kw + t: c * ih * iw + r * dh * iw + t * dw, r * dh, t * dw).
// global: (ceil(P / TSM) * RTSM, ceil(ocg / TSN) * RTSN, mb * g); P = oh * ow.
__kernel __attribute__((reqd_work_group_size(RTSM, RTSN, 1))) void conv_implicit_gemm(
    __global const float* restrict src, __global const float* restrict wei,
    __global float* restrict dst, __global const int* restrict ktab, const int K, const int g,
    const int icg, const int ocg, const int ih, const int iw, const int oh, const int ow,
    const int sh, const int sw, const int ph, const int pw) {
  __local float Al[TSK * TSM];  // Al[k][m]
  __local float Bl[TSN * TSK];  // Bl[n][k]
  const int tm = get_local_id(0), tn = get_local_id(1), lid = tn * RTSM + tm;
  const int m0 = get_group_id(0) * TSM, n0 = get_group_id(1) * TSN, b = get_group_id(2);
  const int P = oh * ow;
  __global const float* s = src + (size_t)b * icg * ih * iw;  // b = image * g + group
  __global const float* w = wei + (size_t)(b % g) * ocg * K;

  // This work-item's rows of the A tile: m = lid, lid + WG, ... (< TSM).
  int y0[TSM / WG], x0[TSM / WG];
#pragma unroll
  for (int j = 0; j < TSM / WG; ++j) {
    const int m = m0 + lid + j * WG;
    const int oy = m / ow, ox = m - oy * ow;
    y0[j] = m < P ? oy * sh - ph : -(1 << 28);
    x0[j] = ox * sw - pw;
  }

  floatV acc[WPTN][VM];
#pragma unroll
  for (int j = 0; j < WPTN; ++j)
#pragma unroll
    for (int v = 0; v < VM; ++v) acc[j][v] = (floatV)(0.0f);

  for (int k0 = 0; k0 < K; k0 += TSK) {
    for (int k = 0; k < TSK; ++k) {
      const int kk = k0 + k;
      const bool kok = kk < K;
      const int off = kok ? ktab[3 * kk] : 0, dy = kok ? ktab[3 * kk + 1] : -(1 << 28);
      const int dx = kok ? ktab[3 * kk + 2] : 0;
#pragma unroll
      for (int j = 0; j < TSM / WG; ++j) {
        const int y = y0[j] + dy, x = x0[j] + dx;
        const bool ok = y >= 0 && y < ih && x >= 0 && x < iw;
        Al[k * TSM + lid + j * WG] = ok ? s[y0[j] * iw + x0[j] + off] : 0.0f;
      }
    }
    for (int e = lid; e < TSN * TSK; e += WG) {
      const int n = e / TSK, k = e - n * TSK;
      Bl[e] = (n0 + n < ocg && k0 + k < K) ? w[(size_t)(n0 + n) * K + k0 + k] : 0.0f;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const int kt = min(TSK, K - k0);
    for (int k = 0; k < kt; ++k) {
      floatV a[VM];
#pragma unroll
      for (int v = 0; v < VM; ++v) a[v] = VLOAD(&Al[k * TSM + tm * WPTM + v * VW]);
#pragma unroll
      for (int j = 0; j < WPTN; ++j) {
        const float bv = Bl[(tn * WPTN + j) * TSK + k];
#pragma unroll
        for (int v = 0; v < VM; ++v) acc[j][v] = fma(a[v], (floatV)(bv), acc[j][v]);
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }

  const int mb = m0 + tm * WPTM;
#pragma unroll
  for (int j = 0; j < WPTN; ++j) {
    const int n = n0 + tn * WPTN + j;
    if (n >= ocg) break;
    __global float* c = dst + ((size_t)b * ocg + n) * P + mb;
    if (mb + WPTM <= P) {
#pragma unroll
      for (int v = 0; v < VM; ++v) VSTORE(acc[j][v], c + v * VW);
    } else {
#pragma unroll
      for (int v = 0; v < VM; ++v) {
        float tmp[VW];
        VSTORE(acc[j][v], tmp);
        for (int i = 0; i < VW; ++i)
          if (mb + v * VW + i < P) c[v * VW + i] = tmp[i];
      }
    }
  }
}
