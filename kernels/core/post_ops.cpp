#include "kernels/core/post_ops.h"

namespace pb {

namespace {

// One column: n elements of one channel, its residual r (kSum). x and y may be the same.
template <bool kRelu, bool kSum>
void column(const float* x, float* y, const float* __restrict r, int64_t n, float m1, float o1,
            float m2, float o2) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i] * m1 + o1;
    if constexpr (kSum) v += r[i] * m2 + o2;
    if constexpr (kRelu) v = v > 0.0f ? v : 0.0f;
    y[i] = v;
  }
}

float or_one(const float* v, int64_t j) {
  return v ? v[j] : 1.0f;
}
float or_zero(const float* v, int64_t j) {
  return v ? v[j] : 0.0f;
}

template <bool kRelu, bool kSum>
void block(const PostOps& p, int64_t m, int64_t n, const float* x, int64_t ldx, float* y,
           int64_t ldy) {
  if (m == 1) {  // a row of channels (an fc's output): element j is channel j
    for (int64_t j = 0; j < n; ++j) {
      float v = x[j * ldx] * or_one(p.scale, j) + or_zero(p.shift, j);
      if constexpr (kSum) v += p.res[j * p.ldr] * or_one(p.res_scale, j) + or_zero(p.res_shift, j);
      if constexpr (kRelu) v = v > 0.0f ? v : 0.0f;
      y[j * ldy] = v;
    }
    return;
  }
  for (int64_t j = 0; j < n; ++j)
    column<kRelu, kSum>(x + j * ldx, y + j * ldy, kSum ? p.res + j * p.ldr : nullptr, m,
                        or_one(p.scale, j), or_zero(p.shift, j), or_one(p.res_scale, j),
                        or_zero(p.res_shift, j));
}

}  // namespace

void apply_post_ops(const PostOps& p, int64_t m, int64_t n, const float* x, int64_t ldx, float* y,
                    int64_t ldy) {
  if (m <= 0 || n <= 0) return;
  if (p.relu)
    p.res ? block<true, true>(p, m, n, x, ldx, y, ldy)
          : block<true, false>(p, m, n, x, ldx, y, ldy);
  else
    p.res ? block<false, true>(p, m, n, x, ldx, y, ldy)
          : block<false, false>(p, m, n, x, ldx, y, ldy);
}

void apply_post_ops_nchw(const PostOps& p, int64_t mb, int64_t c, int64_t hw, const float* x,
                         float* y) {
  if (hw == 1) {  // per image, a row of channels
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < mb; ++n)
      apply_post_ops(p.at(0, n * c, 1), 1, c, x + n * c, 1, y + n * c, 1);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t nc = 0; nc < mb * c; ++nc)
    apply_post_ops(p.at(nc % c, nc * hw, hw), hw, 1, x + nc * hw, hw, y + nc * hw, hw);
}

}  // namespace pb
