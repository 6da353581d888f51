// Naive batch-norm reference.
#include "reference/bnorm.h"

#include <cmath>

namespace pb::ref {

namespace {
// Visits every element of channel c: f(flat index).
template <class F>
void each(const BnormDesc& d, int64_t c, F f) {
  for (int64_t n = 0; n < d.mb; ++n)
    for (int64_t i = 0; i < d.hw(); ++i) f((n * d.ic + c) * d.hw() + i);
}
}  // namespace

void bnorm_stats(const BnormDesc& d, const Tensor& src, std::vector<double>* mean,
                 std::vector<double>* var) {
  mean->assign(d.ic, 0);
  var->assign(d.ic, 0);
  const double n = static_cast<double>(d.reduce_size());
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < d.ic; ++c) {
    double s = 0, s2 = 0;
    each(d, c, [&](int64_t i) { s += src[i]; });
    const double m = s / n;
    each(d, c, [&](int64_t i) { s2 += (src[i] - m) * (src[i] - m); });
    (*mean)[c] = m;
    (*var)[c] = s2 / n;
  }
}

std::vector<Tensor64> bnorm_fwd(const BnormDesc& d, const Tensor& src, const Tensor& scale,
                                const Tensor& shift, const Tensor& mean, const Tensor& var) {
  std::vector<double> m(d.ic), v(d.ic);
  if (d.inference) {
    for (int64_t c = 0; c < d.ic; ++c) m[c] = mean[c], v[c] = var[c];
  } else {
    bnorm_stats(d, src, &m, &v);
  }
  std::vector<Tensor64> out;
  out.emplace_back(Dims{d.mb, d.ic, d.ih, d.iw});
  Tensor64& y = out[0];
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < d.ic; ++c) {
    const double g = d.scale ? scale[c] : 1.0, b = d.shift ? shift[c] : 0.0;
    const double rstd = 1.0 / std::sqrt(v[c] + d.eps);
    each(d, c, [&](int64_t i) {
      const double t = g * (src[i] - m[c]) * rstd + b;
      y[i] = d.relu && t < 0 ? 0.0 : t;
    });
  }
  if (d.inference) return out;
  const double n = static_cast<double>(d.reduce_size());
  for (int k = 0; k < 4; ++k) out.emplace_back(Dims{d.ic});
  for (int64_t c = 0; c < d.ic; ++c) {
    out[1][c] = m[c];
    out[2][c] = v[c];
    const double unbiased = n > 1 ? v[c] * n / (n - 1) : v[c];
    out[3][c] = (1 - d.mom) * mean[c] + d.mom * m[c];
    out[4][c] = (1 - d.mom) * var[c] + d.mom * unbiased;
  }
  return out;
}

std::vector<Tensor64> bnorm_bwd(const BnormDesc& d, const Tensor& src, const Tensor& diff_dst,
                                const Tensor& scale, const Tensor& shift, const Tensor& mean,
                                const Tensor& var) {
  std::vector<Tensor64> out;
  out.emplace_back(Dims{d.mb, d.ic, d.ih, d.iw});
  Tensor64 dg({d.ic}), db({d.ic});
  Tensor64& dx = out[0];
  const double n = static_cast<double>(d.reduce_size());
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < d.ic; ++c) {
    const double g = d.scale ? scale[c] : 1.0, b = d.shift ? shift[c] : 0.0;
    const double m = mean[c], rstd = 1.0 / std::sqrt(var[c] + d.eps);
    // dy through the fused ReLU: zero where the forward output is not positive.
    auto dyr = [&](int64_t i) {
      return d.relu && g * (src[i] - m) * rstd + b <= 0 ? 0.0 : static_cast<double>(diff_dst[i]);
    };
    double sdy = 0, sdyx = 0;
    each(d, c, [&](int64_t i) {
      sdy += dyr(i);
      sdyx += dyr(i) * (src[i] - m) * rstd;
    });
    dg[c] = sdyx;
    db[c] = sdy;
    each(d, c, [&](int64_t i) {
      const double xhat = (src[i] - m) * rstd;
      dx[i] = d.inference ? g * rstd * dyr(i) : g * rstd * (dyr(i) - sdy / n - xhat * sdyx / n);
    });
  }
  if (d.scale) out.push_back(std::move(dg));
  if (d.shift) out.push_back(std::move(db));
  return out;
}

}  // namespace pb::ref
