// Naive activation reference.
#include "reference/act.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/core/threads.h"

namespace pb::ref {

namespace {
double fwd1(ActFunc f, double x) {
  switch (f) {
    case ActFunc::relu:
      return x > 0 ? x : 0;
    case ActFunc::sigmoid:
      return 1 / (1 + std::exp(-x));
    default:
      return std::tanh(x);
  }
}
double bwd1(ActFunc f, double x, double dy) {
  switch (f) {
    case ActFunc::relu:
      return x > 0 ? dy : 0;
    case ActFunc::sigmoid: {
      const double s = 1 / (1 + std::exp(-x));
      return dy * s * (1 - s);
    }
    default: {
      const double t = std::tanh(x);
      return dy * (1 - t * t);
    }
  }
}
int64_t at(const ActDesc& d, int64_t n, int64_t c, int64_t i) {
  return (n * d.ic + c) * d.hw() + i;
}
}  // namespace

void softmax_at(const ActDesc& d, const Tensor& src, int64_t n, int64_t i, double* p) {
  double m = -INFINITY, s = 0;
  for (int64_t c = 0; c < d.ic; ++c) m = std::max(m, double(src[at(d, n, c, i)]));
  for (int64_t c = 0; c < d.ic; ++c) s += p[c] = std::exp(src[at(d, n, c, i)] - m);
  for (int64_t c = 0; c < d.ic; ++c) p[c] /= s;
}

std::vector<Tensor64> act_fwd(const ActDesc& d, const std::vector<const Tensor*>& in) {
  const Tensor& x = *in[0];
  std::vector<Tensor64> out;
  out.emplace_back(Dims{d.mb, d.ic, d.ih, d.iw});
  if (d.eltwise()) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < x.size(); ++i) out[0][i] = fwd1(d.func, x[i]);
    return out;
  }
  if (d.func == ActFunc::xent) {
    check_labels(d, in[1]->data());
    out.emplace_back(Dims{d.mb, d.ih, d.iw});
  }
  RegionErrors errors;  // the per-position vector's allocation must not leave the region
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < d.positions(); ++p)
    errors.run([&] {
      const int64_t n = p / d.hw(), i = p % d.hw();
      std::vector<double> v(d.ic);
      softmax_at(d, x, n, i, v.data());
      for (int64_t c = 0; c < d.ic; ++c) out[0][at(d, n, c, i)] = v[c];
      if (d.func == ActFunc::xent) {
        // -log p[label] = log sum exp(x - max) - (x[label] - max), without rounding p first.
        const int64_t label = static_cast<int64_t>((*in[1])[p]);
        double m = -INFINITY, s = 0;
        for (int64_t c = 0; c < d.ic; ++c) m = std::max(m, double(x[at(d, n, c, i)]));
        for (int64_t c = 0; c < d.ic; ++c) s += std::exp(x[at(d, n, c, i)] - m);
        out[1][p] = std::log(s) - (x[at(d, n, label, i)] - m);
      }
    });
  errors.rethrow();
  return out;
}

std::vector<Tensor64> act_bwd(const ActDesc& d, const std::vector<const Tensor*>& in) {
  std::vector<Tensor64> out;
  out.emplace_back(Dims{d.mb, d.ic, d.ih, d.iw});
  Tensor64& dx = out[0];
  if (d.eltwise()) {
    const Tensor &x = *in[0], &dy = *in[1];
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < x.size(); ++i) dx[i] = bwd1(d.func, x[i], dy[i]);
    return out;
  }
  if (d.func == ActFunc::xent) check_labels(d, in[1]->data());
  RegionErrors errors;  // the per-position vector's allocation must not leave the region
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < d.positions(); ++p)
    errors.run([&] {
      const int64_t n = p / d.hw(), i = p % d.hw();
      if (d.func == ActFunc::softmax) {
        const Tensor &y = *in[0], &dy = *in[1];
        double dot = 0;
        for (int64_t c = 0; c < d.ic; ++c) dot += double(dy[at(d, n, c, i)]) * y[at(d, n, c, i)];
        for (int64_t c = 0; c < d.ic; ++c)
          dx[at(d, n, c, i)] = y[at(d, n, c, i)] * (dy[at(d, n, c, i)] - dot);
      } else {  // xent
        std::vector<double> v(d.ic);
        softmax_at(d, *in[0], n, i, v.data());
        const int64_t label = static_cast<int64_t>((*in[1])[p]);
        for (int64_t c = 0; c < d.ic; ++c) dx[at(d, n, c, i)] = v[c] - (c == label ? 1.0 : 0.0);
      }
    });
  errors.rethrow();
  return out;
}

}  // namespace pb::ref
