// Naive pooling reference: every output (or input gradient) element computed on its own.
#include "reference/pool.h"

#include <algorithm>

namespace pb::ref {

namespace {
// Image rows [r0, r1) and columns [c0, c1) covered by output (oh, ow).
struct Window {
  int64_t r0, r1, c0, c1;
};
Window window(const PoolDesc& d, int64_t oh, int64_t ow) {
  const int64_t r = oh * d.sh - d.ph, c = ow * d.sw - d.pw;
  return {std::max<int64_t>(r, 0), std::min(r + d.kh, d.ih), std::max<int64_t>(c, 0),
          std::min(c + d.kw, d.iw)};
}
double divisor(const PoolDesc& d, const Window& w) {
  return d.alg == PoolAlg::avg_p ? static_cast<double>(d.kh * d.kw)
                                 : static_cast<double>((w.r1 - w.r0) * (w.c1 - w.c0));
}
}  // namespace

int64_t pool_argmax(const PoolDesc& d, const float* plane, int64_t oh, int64_t ow) {
  Window w = window(d, oh, ow);
  int64_t best = w.r0 * d.iw + w.c0;
  for (int64_t r = w.r0; r < w.r1; ++r)
    for (int64_t c = w.c0; c < w.c1; ++c)
      if (plane[r * d.iw + c] > plane[best]) best = r * d.iw + c;  // strict: first max wins
  return best;
}

double pool_fwd_at(const PoolDesc& d, const Tensor& src, int64_t i) {
  const int64_t ow = i % d.ow, oh = i / d.ow % d.oh, plane = i / (d.ow * d.oh);
  const float* x = src.data() + plane * d.ih * d.iw;
  if (d.alg == PoolAlg::max) return x[pool_argmax(d, x, oh, ow)];
  Window w = window(d, oh, ow);
  double s = 0;
  for (int64_t r = w.r0; r < w.r1; ++r)
    for (int64_t c = w.c0; c < w.c1; ++c) s += x[r * d.iw + c];
  return s / divisor(d, w);
}

double pool_bwd_at(const PoolDesc& d, const Tensor& src, const Tensor& diff_dst, int64_t i) {
  const int64_t c = i % d.iw, r = i / d.iw % d.ih, plane = i / (d.iw * d.ih);
  const float* x = src.data() + plane * d.ih * d.iw;
  const float* dy = diff_dst.data() + plane * d.oh * d.ow;
  double s = 0;
  // Every output whose window covers (r, c): oh*sh - ph <= r < oh*sh - ph + kh.
  auto first = [](int64_t v, int64_t k, int64_t s) {  // smallest o with o*s + k > v, o >= 0
    int64_t num = v - k + 1;
    return num <= 0 ? 0 : (num + s - 1) / s;
  };
  const int64_t oh1 = std::min(d.oh - 1, (r + d.ph) / d.sh);
  const int64_t ow1 = std::min(d.ow - 1, (c + d.pw) / d.sw);
  for (int64_t oh = first(r + d.ph, d.kh, d.sh); oh <= oh1; ++oh) {
    for (int64_t ow = first(c + d.pw, d.kw, d.sw); ow <= ow1; ++ow) {
      if (d.alg == PoolAlg::max) {
        if (pool_argmax(d, x, oh, ow) == r * d.iw + c) s += dy[oh * d.ow + ow];
      } else {
        s += dy[oh * d.ow + ow] / divisor(d, window(d, oh, ow));
      }
    }
  }
  return s;
}

Tensor64 pool_fwd(const PoolDesc& d, const Tensor& src) {
  Tensor64 out({d.mb, d.ic, d.oh, d.ow});
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < out.size(); ++i) out[i] = pool_fwd_at(d, src, i);
  return out;
}

Tensor64 pool_bwd(const PoolDesc& d, const Tensor& src, const Tensor& diff_dst) {
  Tensor64 out({d.mb, d.ic, d.ih, d.iw});
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < out.size(); ++i) out[i] = pool_bwd_at(d, src, diff_dst, i);
  return out;
}

}  // namespace pb::ref
