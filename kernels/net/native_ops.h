// The executor's own small steps between primitive calls: bias add and its gradient, residual
// add, gradient sums at fan-outs, the SGD update. OpenMP, fixed summation orders.
#pragma once

#include <algorithm>
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

// Channel slices of NCHW tensors (concat and its gradient): per image, the c channels of src
// starting at channel src_off (of src_c) go to dst's channels from dst_off (of dst_c).
inline void copy_channels(const float* src, int64_t src_c, int64_t src_off, float* dst,
                          int64_t dst_c, int64_t dst_off, int64_t mb, int64_t c, int64_t hw) {
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < mb; ++n) {
    const float* x = src + (n * src_c + src_off) * hw;
    float* y = dst + (n * dst_c + dst_off) * hw;
    for (int64_t i = 0; i < c * hw; ++i) y[i] = x[i];
  }
}

// Dropout's keep decision for element i of training step `step`: a counter-based hash of the seed,
// the step and i (splitmix64), so the host and the device draw the same mask without storing it.
// Kept when the hash's upper 32 bits are >= threshold = p * 2^32.
inline uint64_t dropout_hash(uint64_t seed, uint64_t step, uint64_t i) {
  uint64_t z = seed ^ (step * 0x9E3779B97F4A7C15ull) ^ (i * 0xD1B54A32D192ED03ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
inline uint32_t dropout_threshold(double p) {
  return static_cast<uint32_t>(std::min(4294967295.0, p * 4294967296.0));
}
// y = x * mask / (1 - p) (forward), or the same of the gradient (backward: the same mask).
inline void dropout(const Tensor& x, Tensor& y, double p, uint64_t seed, uint64_t step) {
  const uint32_t t = dropout_threshold(p);
  const float scale = static_cast<float>(1.0 / (1.0 - p));
  const float* a = x.data();
  float* b = y.data();
  const int64_t n = y.size();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i)
    b[i] = (dropout_hash(seed, step, i) >> 32) >= t ? a[i] * scale : 0.0f;
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
