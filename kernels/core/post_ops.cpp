#include "kernels/core/post_ops.h"

namespace pb {

namespace {

using Q = PostOps::Q;

// One column: n elements of one channel, its residual r (kSum), the typed copy q (kQ). x and y
// may be the same.
template <bool kRelu, bool kSum, Q kQ>
void column(const float* x, float* y, const float* __restrict r, void* __restrict q, int64_t n,
            float m1, float o1, float m2, float o2, float q_inv, float q_zero) {
  uint16_t* __restrict qb = static_cast<uint16_t*>(q);
  uint8_t* __restrict qu = static_cast<uint8_t*>(q);
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i] * m1 + o1;
    if constexpr (kSum) v += r[i] * m2 + o2;
    if constexpr (kRelu) v = v > 0.0f ? v : 0.0f;
    y[i] = v;
    if constexpr (kQ == Q::bf16) qb[i] = to_bf16(v);
    if constexpr (kQ == Q::u8) qu[i] = quantise_u8(v, q_inv, q_zero);
  }
}

float or_one(const float* v, int64_t j) {
  return v ? v[j] : 1.0f;
}
float or_zero(const float* v, int64_t j) {
  return v ? v[j] : 0.0f;
}

template <bool kRelu, bool kSum, Q kQ>
void block(const PostOps& p, int64_t m, int64_t n, const float* x, int64_t ldx, float* y,
           int64_t ldy) {
  if (m == 1) {  // a row of channels (an fc's output): element j is channel j
    for (int64_t j = 0; j < n; ++j) {
      float v = x[j * ldx] * or_one(p.scale, j) + or_zero(p.shift, j);
      if constexpr (kSum) v += p.res[j * p.ldr] * or_one(p.res_scale, j) + or_zero(p.res_shift, j);
      if constexpr (kRelu) v = v > 0.0f ? v : 0.0f;
      y[j * ldy] = v;
      if constexpr (kQ != Q::none) p.store_q(j * p.ldr, v);
    }
    return;
  }
  for (int64_t j = 0; j < n; ++j)
    column<kRelu, kSum, kQ>(
        x + j * ldx, y + j * ldy, kSum ? p.res + j * p.ldr : nullptr,
        kQ != Q::none ? static_cast<uint8_t*>(p.q) + j * p.ldr * PostOps::q_bytes(kQ) : nullptr, m,
        or_one(p.scale, j), or_zero(p.shift, j), or_one(p.res_scale, j), or_zero(p.res_shift, j),
        p.q_inv, p.q_zero);
}

template <bool kRelu, bool kSum>
void typed(const PostOps& p, int64_t m, int64_t n, const float* x, int64_t ldx, float* y,
           int64_t ldy) {
  if (!p.q || p.q_kind == Q::none) return block<kRelu, kSum, Q::none>(p, m, n, x, ldx, y, ldy);
  if (p.q_kind == Q::bf16) return block<kRelu, kSum, Q::bf16>(p, m, n, x, ldx, y, ldy);
  block<kRelu, kSum, Q::u8>(p, m, n, x, ldx, y, ldy);
}

}  // namespace

void apply_post_ops(const PostOps& p, int64_t m, int64_t n, const float* x, int64_t ldx, float* y,
                    int64_t ldy) {
  if (m <= 0 || n <= 0) return;
  if (p.relu)
    p.res ? typed<true, true>(p, m, n, x, ldx, y, ldy)
          : typed<true, false>(p, m, n, x, ldx, y, ldy);
  else
    p.res ? typed<false, true>(p, m, n, x, ldx, y, ldy)
          : typed<false, false>(p, m, n, x, ldx, y, ldy);
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
