// The executor's own small steps between primitive calls: bias add and its gradient, residual
// add, gradient sums at fan-outs, the SGD update. OpenMP, fixed summation orders.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/core/channel_sums.h"
#include "kernels/core/tensor.h"

namespace pb::net {

// y[n][c][...] += b[c] for an NCHW tensor (an fc output, mb x out, is NCHW with hw = 1).
inline void add_channel_bias(Tensor& y, const Tensor& b, int64_t mb) {
  const int64_t c = b.size(), hw = y.size() / (mb * c);
  float* p = y.data();
  const float* bp = b.data();
#pragma omp parallel for schedule(static)
  for (int64_t nc = 0; nc < mb * c; ++nc) {
    const float v = bp[nc % c];
    float* q = p + nc * hw;
#pragma omp simd
    for (int64_t i = 0; i < hw; ++i) q[i] += v;
  }
}

// db[c] = sum over images and pixels of g[n][c][...] (an fc gradient, mb x out, has hw = 1).
inline void bias_grad(const Tensor& g, Tensor& db, int64_t mb) {
  channel_sums(g.data(), mb, db.size(), g.size() / (mb * db.size()), db.data());
}

inline void add(const Tensor& a, const Tensor& b, Tensor& out) {
  const float *x = a.data(), *y = b.data();
  float* z = out.data();
  const int64_t n = out.size();
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) z[i] = x[i] + y[i];
}

inline void sum(const std::vector<const Tensor*>& parts, Tensor& out) {
  add(*parts[0], *parts[1], out);
  float* z = out.data();
  const int64_t n = out.size();
  for (size_t k = 2; k < parts.size(); ++k) {
    const float* x = parts[k]->data();
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i) z[i] += x[i];
  }
}

// w += a * g
inline void axpy(float a, const Tensor& g, Tensor& w) {
  const float* x = g.data();
  float* y = w.data();
  const int64_t n = w.size();
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

}  // namespace pb::net
