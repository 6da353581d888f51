// Backward copies of ocl/im2col: col2im (bwd_d: the GEMM's columns summed back into diff_src,
// one work-item per pixel, a fixed order), the transposed im2col and the diff_dst gather of bwd_w
// (chunk matrices for one batched GEMM per pass). Work-items along dimension 0 are adjacent
// columns.

#ifndef WX
#define WX 16
#endif
#ifndef WY
#define WY 4
#endif

// global: (iw, ih, nb * g * icg). The col layout of im2col.cl (plane z = (image * g + group) *
// icg + c owns rows z * kh * kw ...): ds(z, iy, ix) = sum over (r, t) in order of
// col[(z * kh * kw + r * kw + t) * oh * ow + oy * ow + ox] where oy * sh = iy + ph - r * dh and
// ox * sw = ix + pw - t * dw fall on the output grid.
__kernel __attribute__((reqd_work_group_size(WX, WY, 1))) void col2im(
    __global const float* restrict col, __global float* restrict ds, const long ds_off,
    const int ih, const int iw, const int oh, const int ow, const int kh, const int kw,
    const int sh, const int sw, const int ph, const int pw, const int dh, const int dw) {
  const int x = get_global_id(0), y = get_global_id(1), z = get_global_id(2);
  if (x >= iw || y >= ih) return;
  const size_t P = (size_t)oh * ow;
  __global const float* c = col + (size_t)z * kh * kw * P;
  float s = 0.0f;
  for (int r = 0; r < kh; ++r) {
    const int ty = y + ph - r * dh;
    if (ty < 0 || ty % sh || ty / sh >= oh) continue;
    __global const float* cr = c + (size_t)r * kw * P + (size_t)(ty / sh) * ow;
    for (int t = 0; t < kw; ++t) {
      const int tx = x + pw - t * dw;
      if (tx < 0 || tx % sw || tx / sw >= ow) continue;
      s += cr[(size_t)t * P + tx / sw];
    }
  }
  ds[ds_off + (size_t)z * ih * iw + (size_t)y * iw + x] = s;
}

// global: (ow, oh, cnt * g) for images n0 .. n0 + cnt - 1 of a pass of chunks of nb images.
// Image i = s * nb + n of the pass (chunk s), group gi: colT[((s * g + gi) * nb + n) * oh * ow + p]
// is a row of K = icg * kh * kw values (c, r, t), so each chunk and group is a K x (nb * oh * ow)
// column-major matrix with leading dimension K.
__kernel __attribute__((reqd_work_group_size(WX, WY, 1))) void im2col_t(
    __global const float* restrict src, const int n0, __global float* restrict colT, const int nb,
    const int g, const int icg, const int ih, const int iw, const int oh, const int ow,
    const int kh, const int kw, const int sh, const int sw, const int ph, const int pw,
    const int dh, const int dw) {
  const int x = get_global_id(0), y = get_global_id(1), z = get_global_id(2);
  if (x >= ow || y >= oh) return;
  const int i = z / g, gi = z - i * g, s = i / nb, n = i - s * nb;
  const size_t ihw = (size_t)ih * iw, K = (size_t)icg * kh * kw;
  __global const float* img = src + ((size_t)(n0 + i) * g + gi) * icg * ihw;
  __global float* out = colT + ((((size_t)s * g + gi) * nb + n) * oh * ow + (size_t)y * ow + x) * K;
  const int ih0 = y * sh - ph, iw0 = x * sw - pw;
  for (int c = 0; c < icg; ++c, img += ihw) {
    for (int r = 0; r < kh; ++r) {
      const int yi = ih0 + r * dh;
      const bool rok = yi >= 0 && yi < ih;
      for (int t = 0; t < kw; ++t) {
        const int xi = iw0 + t * dw;
        *out++ = (rok && xi >= 0 && xi < iw) ? img[(size_t)yi * iw + xi] : 0.0f;
      }
    }
  }
}

// global: (ceil(oh * ow / 8), ocg, cnt * g), images as im2col_t: the chunk matrix
// ddg[(((s * g + gi) * ocg + o) * nb + n) * oh * ow + p] = dd(n0 + i, gi * ocg + o, p), so each
// chunk and group is an (nb * oh * ow) x ocg column-major matrix.
__kernel __attribute__((reqd_work_group_size(WX, 1, 1))) void gather_dd(
    __global const float* restrict dd, const int n0, __global float* restrict ddg, const int nb,
    const int g, const int ocg, const int P) {
  const int p0 = get_global_id(0) * 8, o = get_global_id(1), z = get_global_id(2);
  if (p0 >= P) return;
  const int i = z / g, gi = z - i * g, s = i / nb, n = i - s * nb;
  __global const float* in = dd + (((size_t)(n0 + i) * g + gi) * ocg + o) * P;
  __global float* out = ddg + ((((size_t)s * g + gi) * ocg + o) * nb + n) * P;
  if (p0 + 8 <= P)
    vstore8(vload8(0, in + p0), 0, out + p0);
  else
    for (int p = p0; p < P; ++p) out[p] = in[p];
}
