// im2col for ocl/im2col: unrolls a chunk of images into the column matrix that gemm/tiled.cl
// multiplies by the weights. Work-items along dimension 0 are adjacent output columns.

#ifndef WX
#define WX 16
#endif
#ifndef WY
#define WY 4
#endif

// global: (ow, oh, nb * g * icg). Input plane z of the chunk (z = (image * g + group) * icg + c)
// becomes rows z * kh * kw .. + kh * kw - 1 of col, each oh * ow long:
// col[(z * kh * kw + r * kw + t) * oh * ow + y * ow + x] = src(z, y * sh - ph + r * dh, ...).
__kernel __attribute__((reqd_work_group_size(WX, WY, 1))) void im2col(
    __global const float* restrict src, const long src_off, __global float* restrict col,
    const int ih, const int iw, const int oh, const int ow, const int kh, const int kw,
    const int sh, const int sw, const int ph, const int pw, const int dh, const int dw) {
  const int x = get_global_id(0), y = get_global_id(1), z = get_global_id(2);
  if (x >= ow || y >= oh) return;
  __global const float* s = src + src_off + (size_t)z * ih * iw;
  const size_t P = (size_t)oh * ow;
  __global float* c = col + (size_t)z * kh * kw * P + (size_t)y * ow + x;
  const int ih0 = y * sh - ph, iw0 = x * sw - pw;
  for (int r = 0; r < kh; ++r) {
    const int yi = ih0 + r * dh;
    const bool rok = yi >= 0 && yi < ih;
    for (int t = 0; t < kw; ++t) {
      const int xi = iw0 + t * dw;
      c[(size_t)(r * kw + t) * P] = (rok && xi >= 0 && xi < iw) ? s[(size_t)yi * iw + xi] : 0.0f;
    }
  }
}
