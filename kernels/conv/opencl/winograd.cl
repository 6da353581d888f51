// Winograd F(WM x WM, 3 x 3) transforms for ocl/winograd_f2 / _f4 (WM = 2 or 4): input tiles ->
// V, and the batched GEMM's products M -> output tiles. The GEMM over tile positions is
// gemm/tiled.cl's gemm_tiled_batched. One work-item per (tile, channel); adjacent work-items are
// adjacent tiles, so the V and M accesses are contiguous across them.

#ifndef WM
#define WM 4
#endif
#ifndef WT
#define WT 64  // work-items per group along tiles
#endif
#define ALPHA (WM + 2)
#define A2 (ALPHA * ALPHA)

#if WM == 2
// B^T d (1-D, 4 points) and A^T m (4 -> 2).
inline void bt_1d(const float* d, float* r) {
  r[0] = d[0] - d[2];
  r[1] = d[1] + d[2];
  r[2] = d[2] - d[1];
  r[3] = d[1] - d[3];
}
inline void at_1d(const float* m, float* y) {
  y[0] = m[0] + m[1] + m[2];
  y[1] = m[1] - m[2] - m[3];
}
#else
// Points 0, +-1, +-2, infinity (Lavin & Gray 2015): B^T d (6 points) and A^T m (6 -> 4).
inline void bt_1d(const float* d, float* r) {
  r[0] = 4.0f * d[0] - 5.0f * d[2] + d[4];
  r[1] = -4.0f * (d[1] + d[2]) + d[3] + d[4];
  r[2] = 4.0f * (d[1] - d[2]) - d[3] + d[4];
  r[3] = 2.0f * (d[3] - d[1]) - d[2] + d[4];
  r[4] = 2.0f * (d[1] - d[3]) - d[2] + d[4];
  r[5] = 4.0f * d[1] - 5.0f * d[3] + d[5];
}
inline void at_1d(const float* m, float* y) {
  y[0] = m[0] + m[1] + m[2] + m[3] + m[4];
  y[1] = m[1] - m[2] + 2.0f * (m[3] - m[4]);
  y[2] = m[1] + m[2] + 4.0f * (m[3] + m[4]);
  y[3] = m[1] - m[2] + 8.0f * (m[3] - m[4]) + m[5];
}
#endif

// global: (T, icg, g), T = tiles of the chunk (image-major, then tile row, tile column).
// V[((gi * A2 + pos) * icg + c) * T + t] = (B^T d B)[pos] of input tile t, channel c of group gi.
__kernel __attribute__((reqd_work_group_size(WT, 1, 1))) void wino_input(
    __global const float* restrict src, const long src_off, __global float* restrict V, const int T,
    const int th, const int tw, const int ic, const int icg, const int ih, const int iw,
    const int ph, const int pw) {
  const int t = get_global_id(0), c = get_global_id(1), gi = get_global_id(2);
  if (t >= T) return;
  const int nl = t / (th * tw), rem = t - nl * th * tw, ty = rem / tw, tx = rem - ty * tw;
  __global const float* s = src + src_off + ((size_t)nl * ic + gi * icg + c) * ih * iw;
  const int y0 = ty * WM - ph, x0 = tx * WM - pw;
  float d[ALPHA][ALPHA], u[ALPHA][ALPHA], v[ALPHA][ALPHA];
#pragma unroll
  for (int i = 0; i < ALPHA; ++i) {
    const int y = y0 + i;
    const bool yok = y >= 0 && y < ih;
#pragma unroll
    for (int j = 0; j < ALPHA; ++j) {
      const int x = x0 + j;
      d[i][j] = (yok && x >= 0 && x < iw) ? s[(size_t)y * iw + x] : 0.0f;
    }
  }
#pragma unroll
  for (int j = 0; j < ALPHA; ++j) {
    float col[ALPHA], out[ALPHA];
#pragma unroll
    for (int i = 0; i < ALPHA; ++i) col[i] = d[i][j];
    bt_1d(col, out);
#pragma unroll
    for (int i = 0; i < ALPHA; ++i) u[i][j] = out[i];
  }
#pragma unroll
  for (int i = 0; i < ALPHA; ++i) bt_1d(u[i], v[i]);
  __global float* o = V + ((size_t)gi * A2 * icg + c) * T + t;
  const size_t ps = (size_t)icg * T;
#pragma unroll
  for (int i = 0; i < ALPHA; ++i)
#pragma unroll
    for (int j = 0; j < ALPHA; ++j) o[(i * ALPHA + j) * ps] = v[i][j];
}

// global: (T, ocg, g). Output tile t, channel k of group gi = A^T M A with
// M[pos] = Mb[((gi * A2 + pos) * ocg + k) * T + t]; clipped at the image's edge.
__kernel __attribute__((reqd_work_group_size(WT, 1, 1))) void wino_output(
    __global const float* restrict Mb, __global float* restrict dst, const long dst_off,
    const int T, const int th, const int tw, const int oc, const int ocg, const int oh,
    const int ow) {
  const int t = get_global_id(0), k = get_global_id(1), gi = get_global_id(2);
  if (t >= T) return;
  const int nl = t / (th * tw), rem = t - nl * th * tw, ty = rem / tw, tx = rem - ty * tw;
  __global const float* m = Mb + ((size_t)gi * A2 * ocg + k) * T + t;
  const size_t ps = (size_t)ocg * T;
  float mm[ALPHA][ALPHA], u[WM][ALPHA], y[WM][WM];
#pragma unroll
  for (int i = 0; i < ALPHA; ++i)
#pragma unroll
    for (int j = 0; j < ALPHA; ++j) mm[i][j] = m[(i * ALPHA + j) * ps];
#pragma unroll
  for (int j = 0; j < ALPHA; ++j) {
    float col[ALPHA], out[WM];
#pragma unroll
    for (int i = 0; i < ALPHA; ++i) col[i] = mm[i][j];
    at_1d(col, out);
#pragma unroll
    for (int i = 0; i < WM; ++i) u[i][j] = out[i];
  }
#pragma unroll
  for (int i = 0; i < WM; ++i) at_1d(u[i], y[i]);
  __global float* d =
      dst + dst_off + (((size_t)nl * oc + gi * ocg + k) * oh + ty * WM) * ow + tx * WM;
#pragma unroll
  for (int i = 0; i < WM; ++i)
#pragma unroll
    for (int j = 0; j < WM; ++j)
      if (ty * WM + i < oh && tx * WM + j < ow) d[i * ow + j] = y[i][j];
}
