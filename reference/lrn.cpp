// Naive LRN reference (see lrn.h): every element on its own, fp64.
#include "reference/lrn.h"

#include <algorithm>
#include <cmath>

namespace pb::ref {

namespace {

// scale at channel c of pixel p of image n.
double scale_at(const LrnDesc& d, const Tensor& src, int64_t n, int64_t c, int64_t p) {
  double s = 0;
  for (int64_t j = std::max<int64_t>(0, c - d.half()); j <= std::min(d.ic - 1, c + d.half()); ++j) {
    const double x = src[(n * d.ic + j) * d.hw() + p];
    s += x * x;
  }
  return d.k + d.alpha / d.ls * s;
}

}  // namespace

double lrn_fwd_at(const LrnDesc& d, const Tensor& src, int64_t i) {
  const int64_t p = i % d.hw(), c = i / d.hw() % d.ic, n = i / (d.hw() * d.ic);
  return src[i] * std::pow(scale_at(d, src, n, c, p), -d.beta);
}

Tensor64 lrn_fwd(const LrnDesc& d, const Tensor& src) {
  Tensor64 out({d.mb, d.ic, d.ih, d.iw});
  for (int64_t i = 0; i < out.size(); ++i) out[i] = lrn_fwd_at(d, src, i);
  return out;
}

double lrn_bwd_at(const LrnDesc& d, const Tensor& src, const Tensor& dy, int64_t i) {
  const int64_t p = i % d.hw(), c = i / d.hw() % d.ic, n = i / (d.hw() * d.ic);
  double acc = 0;  // channels c' whose window holds c: |c' - c| <= half
  for (int64_t j = std::max<int64_t>(0, c - d.half()); j <= std::min(d.ic - 1, c + d.half()); ++j) {
    const int64_t at = (n * d.ic + j) * d.hw() + p;
    acc += static_cast<double>(dy[at]) * src[at] * std::pow(scale_at(d, src, n, j, p), -d.beta - 1);
  }
  return dy[i] * std::pow(scale_at(d, src, n, c, p), -d.beta) -
         2 * d.alpha * d.beta / d.ls * src[i] * acc;
}

Tensor64 lrn_bwd(const LrnDesc& d, const Tensor& src, const Tensor& dy) {
  Tensor64 out({d.mb, d.ic, d.ih, d.iw});
  for (int64_t i = 0; i < out.size(); ++i) out[i] = lrn_bwd_at(d, src, dy, i);
  return out;
}

}  // namespace pb::ref
