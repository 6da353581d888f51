// Helpers shared by cpu/direct's forward and backward kernels: the 16-float SIMD vector, the
// register-tile tap and store, the tile-width choice, and the backward passes' entry points
// (direct_bwd_data/weights.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/conv/desc.h"
#include "kernels/core/tensor.h"

namespace pb::direct {

using vf = float __attribute__((vector_size(64), aligned(64)));

inline vf load(const float* p) {
  vf v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store(float* p, vf v) {
  std::memcpy(p, &v, sizeof v);
}

// One kernel tap of a J x V register tile (J output columns x V*16 channels):
// acc[j] += w * x[j], with the V weight vectors at w and the J inputs at x[0..J).
template <int J, int V>
__attribute__((always_inline)) inline void tap(vf (&acc)[J][V], const float* x, const float* w) {
  vf wv[V];
  for (int v = 0; v < V; ++v) wv[v] = load(w + 16 * v);
#pragma GCC unroll 16
  for (int j = 0; j < J; ++j) {
    const float s = x[j];
    for (int v = 0; v < V; ++v) acc[j][v] += wv[v] * s;
  }
}

// Writes a J x V tile: column j's V vectors at out + j * wstep.
template <int J, int V>
__attribute__((always_inline)) inline void store_tile(float* out, int64_t wstep,
                                                      const vf (&acc)[J][V]) {
  for (int j = 0; j < J; ++j)
    for (int v = 0; v < V; ++v) store(out + j * wstep + 16 * v, acc[j][v]);
}

// Vectors per tile (1 or 2 x 16 channels) for `ch` vectorised channels: 32 unless 16 divides
// them and 32 does not.
inline int pick_v(int64_t ch) {
  return ch >= 32 && !(ch % 32 != 0 && ch % 16 == 0) ? 2 : 1;
}

// Tile width: the J <= min(max_j, n) covering n with the fewest computed columns (the last
// tile overlaps the previous one instead of running past the row), larger J on ties.
inline int pick_j(int64_t n, int max_j) {
  int best = 1;
  int64_t best_cost = n;
  for (int j = 2; j <= std::min<int64_t>(max_j, n); ++j) {
    int64_t cost = (n + j - 1) / j * j;
    if (cost <= best_cost) best = j, best_cost = cost;
  }
  return best;
}

// Backward data: diff_src = the transposed convolution of diff_dst with the weights, split by
// stride phase into unit-stride correlations (direct_bwd_data.cpp).
class BwdData {
 public:
  void prepare(const ConvDesc& d, const Tensor& wei);  // repacks the weights
  void run(const Tensor& diff_dst, Tensor& diff_src);  // overwrites diff_src
  size_t workspace_bytes() const { return (wp_.size() + dd_.size()) * sizeof(float); }

 private:
  ConvDesc d_;
  int v_ = 1, j_ = 1;
  int64_t nb_ = 1, lpad_ = 0, row_len_ = 0;
  std::vector<float> wp_, dd_;
};

// Backward weights: diff_wei reduced over the batch in a fixed order, each weight owned by one
// thread (direct_bwd_weights.cpp).
class BwdWeights {
 public:
  void prepare(const ConvDesc& d);
  void run(const Tensor& src, const Tensor& diff_dst, Tensor& diff_wei);  // overwrites diff_wei
  size_t workspace_bytes() const { return (xs_.size() + dd_.size() + acc_.size()) * sizeof(float); }

 private:
  ConvDesc d_;
  // One register tile of one kernel row: T taps from flat tap f0 (f = kx*icg + c), reading src
  // at column offset `src` (floats within a pixel row, before the group's channel offset).
  struct Taps {
    int64_t f0, t, src;
  };
  // 1x1 unpadded layers: diff_wei = diff_dst x src^T per group, as inner products over
  // pixels in SIMD lanes, straight from NCHW (direct_bwd_weights_1x1.cpp).
  void prepare_1x1();
  void run_1x1(const Tensor& src, const Tensor& diff_dst, Tensor& diff_wei);
  bool one_ = false;
  int64_t px_ = 0;  // pixels per chunk (1x1 path)
  int v_ = 1;
  int64_t nb_ = 1, wpad_ = 0, rows_per_chunk_ = 1;
  std::vector<Taps> taps_;
  std::vector<float> xs_, dd_, acc_;
};

}  // namespace pb::direct
