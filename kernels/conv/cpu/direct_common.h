// Helpers shared by cpu/direct's forward and backward kernels: the forward's input plan, the
// 16-float SIMD vector, the register-tile tap and store, the tile-width choice, and the entry
// points of the backward passes (direct_bwd_data/weights.cpp) and of the reduced-precision
// forward (direct_lowp.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#if defined(__AVX512F__)
#include <immintrin.h>

#include "kernels/core/transpose_avx512.h"
#endif
#include "kernels/conv/desc.h"
#include "kernels/core/post_ops.h"
#include "kernels/core/quant.h"
#include "kernels/core/tensor.h"

namespace pb::direct {

// Shape facts the forward kernels need, fixed in plan(). The input is copied to
// [n][ih][channel group][padded row][G]: each row padded and split into stride phases (padded
// column x' = sw*q + r lives at r*phase_len + q: unit stride along output columns), the channels
// of a group of G interleaved per pixel (G = 1 for fp32, 2 for bf16 pairs, 4 for u8 quadruples;
// a convolution group's icg channels take ceil(icg / G) channel groups). Strides in elements.
struct Plan {
  int64_t icg = 0, kh = 0, kw = 0, ih = 0, sh = 1, ph = 0, dh1 = 1;
  int64_t cgroups = 0;        // channel groups per convolution group: ceil(icg / G)
  int64_t row_len = 0;        // pixels per padded input row
  int64_t cstride = 0;        // elements between channel groups of a row (= row_len * G)
  int64_t row_stride = 0;     // elements between input rows (= g * cgroups * cstride)
  int64_t phase_len = 0;      // pixels per stride phase within a row
  std::vector<int64_t> koff;  // per kx: pixel offset of output column 0 within a row
};
inline Plan make_plan(const ConvDesc& d, int G) {
  Plan p;
  p.icg = d.icg(), p.kh = d.kh, p.kw = d.kw, p.ih = d.ih, p.sh = d.sh, p.ph = d.ph;
  p.dh1 = d.dh + 1;
  p.cgroups = (d.icg() + G - 1) / G;
  const int64_t ext_w = (d.kw - 1) * (d.dw + 1) + 1;
  const int64_t span = (d.ow - 1) * d.sw + ext_w;  // padded columns read
  p.phase_len = (std::max(span, d.pw + d.iw) + d.sw - 1) / d.sw;
  p.row_len = p.phase_len * d.sw;
  p.koff.assign(d.kw, 0);
  for (int64_t kx = 0; kx < d.kw; ++kx) {
    const int64_t x = kx * (d.dw + 1);
    p.koff[kx] = (x % d.sw) * p.phase_len + x / d.sw;
  }
  p.cstride = p.row_len * G;
  p.row_stride = d.g * p.cgroups * p.cstride;
  return p;
}

// The SIMD vector of the ISA the build targets: 16 floats with AVX-512 (32 registers), 8 below
// it (AVX2: 16 registers). The layouts keep blocks of 16 channels either way; a block is
// kVec16 vectors. 16-float vectors on AVX2 were lowered to spilled halves: cpu/direct ran at
// 4.3 GFLOP/s in every direction on a Zen 3 (ResNet-50-CIFAR's 64-channel 3x3, batch 4).
#if defined(__AVX512F__)
constexpr int kLanes = 16, kRegs = 32;
#else
constexpr int kLanes = 8, kRegs = 16;
#endif
constexpr int kVec16 = 16 / kLanes;
using vf = float __attribute__((vector_size(4 * kLanes), aligned(4 * kLanes)));

inline vf load(const float* p) {
  vf v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store(float* p, vf v) {
  std::memcpy(p, &v, sizeof v);
}

// One kernel tap of a J x NV register tile (J output columns x NV vectors of channels):
// acc[j] += w * x[j], with the NV weight vectors at w and the J inputs at x[0..J).
template <int J, int NV>
__attribute__((always_inline)) inline void tap(vf (&acc)[J][NV], const float* x, const float* w) {
  vf wv[NV];
  for (int v = 0; v < NV; ++v) wv[v] = load(w + kLanes * v);
#pragma GCC unroll 16
  for (int j = 0; j < J; ++j) {
    const float s = x[j];
    for (int v = 0; v < NV; ++v) acc[j][v] += wv[v] * s;
  }
}

// Writes a J x NV tile: column j's NV vectors at out + j * wstep.
template <int J, int NV>
__attribute__((always_inline)) inline void store_tile(float* out, int64_t wstep,
                                                      const vf (&acc)[J][NV]) {
  for (int j = 0; j < J; ++j)
    for (int v = 0; v < NV; ++v) store(out + j * wstep + kLanes * v, acc[j][v]);
}

// Output columns per register tile, at most (the tile tables' and buffers' size): with
// AVX-512, 14 x 2 accumulators + 2 weight vectors + the broadcast input fit in 32 registers.
constexpr int kMaxJ = 14;

// The widest tile of V 16-channel blocks: J x NV accumulators, the broadcast input and one
// weight vector in registers (the other weight vectors can be FMA memory operands). AVX-512: 14
// for both V; AVX2: 7 for V = 1 (14 accumulators: GCC spills one, see pick_j_f32), 3 for V = 2.
constexpr int max_j(int v) {
  const int nv = v * kVec16;
  return std::min(kMaxJ, (kRegs - 2) / nv);
}

// The forward's task loop, shared by every data type: OpenMP over (image, group, block of nb
// output-channel blocks, output row), each row in J-wide chunks (the last overlapping the one
// before instead of running past the row): tile(n, gi, b, oy, ox0, buf) with a per-thread scratch
// of kMaxJ x 32 floats. One contiguous range of rows per thread: each thread then reads the input
// rows its own core copied (the input copies split the same order statically) and writes output
// rows the other core does not touch. 2 threads, Zen 5 family 26, alternating processes (medians
// of 3), ms shared out dynamically (4 rows at a time) -> static: fp32 AlexNet conv1 (11x11
// stride 4) 10.3 -> 7.4, VGG-16 conv1_1 30.2 -> 20.4, ResNet-50 res2 1x1 256 -> 64 13.0 -> 10.9,
// AlexNet conv2 (5x5, 2 groups) 18.9 -> 18.0; u8s8 ResNet-50 conv1 (7x7 stride 2) 10.4 -> 7.4,
// res2 3x3 4.18 -> 3.40; bf16 res2 3x3 6.90 -> 5.85, res4 3x3 5.30 -> 5.09.
template <class F>
void for_tiles(const ConvDesc& d, int64_t nb, int j, F&& tile) {
  const int64_t chunks = (d.ow + j - 1) / j;
  const int64_t ntasks = d.mb * d.g * nb * d.oh;
#pragma omp parallel
  {
    alignas(64) float buf[kMaxJ * 32];
#pragma omp for schedule(static)
    for (int64_t t = 0; t < ntasks; ++t) {
      const int64_t oy = t % d.oh, b = (t / d.oh) % nb, gi = (t / d.oh / nb) % d.g,
                    n = t / d.oh / nb / d.g;
      for (int64_t ch = 0; ch < chunks; ++ch) tile(n, gi, b, oy, std::min(ch * j, d.ow - j), buf);
    }
  }
}

#if defined(__AVX512F__)
// (GCC 12 reports its own intrinsics' undefined vectors as maybe uninitialized.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// The vector form of scatter_tile_post (p: post-ops, or nullptr for a plain scatter) for a tile
// of j <= 16 pixels: each 16 channels go through a register transpose (transpose_avx512.h), and
// each channel's j pixels, post-ops and typed copy (the same values as PostOps::store_q's) are
// one masked vector each. Element by element, the scatter took 18% of the samples of a 56x56,
// 64-channel u8s8 3x3 layer (Zen 5).
inline void scatter_tile_vec(const float* buf, int w16, int64_t noc, int j, const PostOps* p,
                             float* out, int64_t plane) {
  const __mmask16 k = static_cast<__mmask16>((1u << j) - 1);
  for (int64_t o0 = 0; o0 < noc; o0 += 16) {
    __m512 r[16];
    for (int jj = 0; jj < 16; ++jj)
      r[jj] = jj < j ? _mm512_loadu_ps(buf + jj * w16 + o0) : _mm512_setzero_ps();
    transpose16(r);  // r[o] lane jj: pixel jj of channel o0 + o
    const int64_t nch = std::min<int64_t>(16, noc - o0);
    for (int64_t o = 0; o < nch; ++o) {
      const int64_t c = o0 + o, at = c * plane;
      __m512 v = r[o];
      if (p) {
        const float m = p->scale ? p->scale[c] : 1.0f, sh = p->shift ? p->shift[c] : 0.0f;
        v = _mm512_fmadd_ps(v, _mm512_set1_ps(m), _mm512_set1_ps(sh));
        if (p->res) {
          const float rm = p->res_scale ? p->res_scale[c] : 1.0f;
          const float rc = p->res_shift ? p->res_shift[c] : 0.0f;
          v = _mm512_add_ps(v, _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k, p->res + at),
                                               _mm512_set1_ps(rm), _mm512_set1_ps(rc)));
        }
        if (p->relu) v = _mm512_max_ps(v, _mm512_setzero_ps());
      }
      _mm512_mask_storeu_ps(out + at, k, v);
      if (!p || !p->q) continue;
      if (p->q_kind == PostOps::Q::bf16) {  // to_bf16: round to nearest even, NaN kept quiet
        const __m512i u = _mm512_castps_si512(v);
        const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
        const __m512i rounded = _mm512_srli_epi32(
            _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7FFF)), odd), 16);
        const __mmask16 nan = _mm512_cmpgt_epu32_mask(
            _mm512_and_si512(u, _mm512_set1_epi32(0x7FFFFFFF)), _mm512_set1_epi32(0x7F800000));
        const __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
        _mm512_mask_cvtepi32_storeu_epi16(static_cast<uint16_t*>(p->q) + at, k,
                                          _mm512_mask_blend_epi32(nan, rounded, quiet));
      } else {  // quantise_u8: round(v * inv) + zero (to nearest even), saturated
        __m512 q = _mm512_roundscale_ps(_mm512_mul_ps(v, _mm512_set1_ps(p->q_inv)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        q = _mm512_add_ps(q, _mm512_set1_ps(p->q_zero));
        q = _mm512_min_ps(_mm512_max_ps(q, _mm512_setzero_ps()), _mm512_set1_ps(255.0f));
        _mm512_mask_cvtepi32_storeu_epi8(static_cast<uint8_t*>(p->q) + at, k,
                                         _mm512_cvtps_epi32(q));
      }
    }
  }
}
#pragma GCC diagnostic pop
#endif

// A tile buf[j][w16] (w16 = 16V channels) into NCHW: out[o * plane + jj] for o < noc, jj < j.
template <class T>
inline void scatter_tile(const T* buf, int w16, int64_t noc, int j, T* out, int64_t plane) {
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float>)
    if (j <= 16) return scatter_tile_vec(buf, w16, noc, j, nullptr, out, plane);
#endif
  for (int64_t o = 0; o < noc; ++o)
    for (int jj = 0; jj < j; ++jj) out[o * plane + jj] = buf[jj * w16 + o];
}

// scatter_tile of an fp32 tile with post-ops: out[o * plane + jj] = p(buf[jj * w16 + o]), p's
// channel o, its residual (and typed copy) at the same place as out. Each element from buf, so that
// the overlapping last tile of a row writes the same values again.
inline void scatter_tile_post(const float* buf, int w16, int64_t noc, int j, const PostOps& p,
                              float* out, int64_t plane) {
#if defined(__AVX512F__)
  if (j <= 16) return scatter_tile_vec(buf, w16, noc, j, &p, out, plane);
#endif
  for (int64_t o = 0; o < noc; ++o) {
    const float m = p.scale ? p.scale[o] : 1.0f, c = p.shift ? p.shift[o] : 0.0f;
    const float rm = p.res_scale ? p.res_scale[o] : 1.0f, rc = p.res_shift ? p.res_shift[o] : 0.0f;
    for (int jj = 0; jj < j; ++jj) {
      float v = buf[jj * w16 + o] * m + c;
      if (p.res) v += p.res[o * plane + jj] * rm + rc;
      if (p.relu) v = v > 0.0f ? v : 0.0f;
      out[o * plane + jj] = v;
      if (p.q) p.store_q(o * plane + jj, v);
    }
  }
}

// Vectors per tile (1 or 2 x 16 channels) for `ch` vectorised channels: 32 unless 16 divides
// them and 32 does not.
inline int pick_v(int64_t ch) {
  return ch >= 32 && !(ch % 32 != 0 && ch % 16 == 0) ? 2 : 1;
}
// pick_v for the fp32 kernels on this build's vectors: with 8-float vectors (AVX2) one block
// of 16 channels, so that a tile of 5-7 columns has 10-14 accumulators (see pick_j_f32), where
// 32 channels would leave room for 3 columns (max_j).
inline int pick_v_f32(int64_t ch) {
  return kLanes == 16 ? pick_v(ch) : 1;
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

// Tile width of the fp32 kernels for rows of n columns and V 16-channel blocks: pick_j up to
// max_j(V) with AVX-512. With AVX2 the cost is ceil(n / J) x the cost of a tile, which goes with
// its J x NV accumulators: below 10 each tap's FMAs wait on the previous tap's (latency 4 on 2
// pipes, plus the loads) and the pipes idle, counted as 14; 14 accumulators leave one register
// short, counted as 17; else the accumulators. Ties to fewer computed columns, then to the wider
// tile. Zen 3, 2 threads, forward, ms unless noted, J = 4/5/6/7: 64-channel 3x3 on 32 columns
// (batch 4): J = 4 (pick_j's exact cover) 91 GFLOP/s, J = 5 139, J = 6 145; ResNet-50 (batch 16)
// res5 3x3, 7 columns: 43.5/31.8/34.7/24.7; res4 3x3, 14 columns: J = 5 23.6, 6 25.8, 7 25.8;
// min of 3 alternating runs, J = 5/6/7: res3 3x3, 28 columns, 25.2/23.1/27.4; res2 3x3, 56
// columns, 32.4/30.3/33.8.
// jmax: the caller's widest tile (max_j(V), or less where its loop keeps more registers live).
inline int pick_j_f32(int64_t n, int v, int jmax) {
  if (kLanes == 16) return pick_j(n, jmax);
  const int nv = v * kVec16;
  int best = 1;
  int64_t best_cost = -1, best_cols = 0;
  for (int j = 1; j <= std::min<int64_t>(jmax, n); ++j) {
    const int acc = j * nv;
    const int64_t chunks = (n + j - 1) / j, cost = chunks * (acc < 10 ? 14 : acc > 12 ? 17 : acc);
    if (best_cost < 0 || cost < best_cost || (cost == best_cost && chunks * j <= best_cols))
      best = j, best_cost = cost, best_cols = chunks * j;
  }
  return best;
}

// The weights (goihw) repacked for the SIMD tiles: [g][block of w16 channels][other][kh][kw][w16],
// the blocks over the output channels (block_oc: the forward's [g][oc-block][icg][kh][kw][16V])
// or over the input channels (bwd_d's [g][ic-block][ocg][kh][kw][16V]); lanes past the last
// channel are not written (planned zero). A run of w16 lanes at a time, in parallel: once per
// step in training, where a new zeroed tensor written element by element on one thread cost 12.6
// ms (fwd) and 21 ms (bwd_d) a step for AlexNet conv3 (384 x 192 x 3 x 3) against 11.3 for its
// forward (Zen 5 family 26, 2 threads; fresh pages fault in).
inline void repack_blocked(const ConvDesc& d, const float* w, bool block_oc, int64_t w16,
                           int64_t nb, float* wp) {
  const int64_t kk = d.kh * d.kw, icg = d.icg(), ocg = d.ocg();
  const int64_t blocked = block_oc ? ocg : icg, other = block_oc ? icg : ocg;
  const int64_t lane_stride = block_oc ? icg * kk : kk, other_stride = block_oc ? kk : icg * kk;
#pragma omp parallel for collapse(3) schedule(static)
  for (int64_t gi = 0; gi < d.g; ++gi)
    for (int64_t b = 0; b < nb; ++b)
      for (int64_t x = 0; x < other; ++x) {
        const int64_t c0 = b * w16, n = std::min(w16, blocked - c0);
        const float* s = w + gi * ocg * icg * kk + c0 * lane_stride + x * other_stride;
        for (int64_t k = 0; k < kk; ++k) {
          float* t = wp + (((gi * nb + b) * other + x) * kk + k) * w16;
          for (int64_t i = 0; i < n; ++i) t[i] = s[k + i * lane_stride];
        }
      }
}

// Backward data: diff_src = the transposed convolution of diff_dst with the weights, split by
// stride phase into unit-stride correlations (direct_bwd_data.cpp).
class BwdData {
 public:
  void plan(const ConvDesc& d);                        // the shape's buffers, zeroed
  void repack(const Tensor& wei);                      // the weights into the planned buffer
  void run(const Tensor& diff_dst, Tensor& diff_src);  // overwrites diff_src
  size_t workspace_bytes() const { return (wp_.size() + dd_.size()) * sizeof(float); }

 private:
  ConvDesc d_;
  int v_ = 1, j_ = 1;
  int64_t nb_ = 1, lpad_ = 0, row_len_ = 0;
  Tensor wp_, dd_;  // 64-byte aligned
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

// Forward in a reduced type (direct_lowp.cpp): the same tiles and threading as the fp32 forward,
// each tap a dot product over a channel group (vdpbf16ps on bf16 pairs, vpdpbusd on u8 x s8
// quadruples); u8s8's source zero point is the padding's value and is compensated per output
// row by the sums of the weights over the kernel rows inside the image.
class LowpFwd {
 public:
  // Why this CPU cannot run d's type here ("" when it can).
  static std::string unsupported(const ConvDesc& d);
  void prepare(const ConvDesc& d, const QuantParams& q);
  void repack(const void* wei);      // weights(): the typed weights (oc x icg x kh x kw)
  void copy_input(const void* src);  // reorder_in(): the typed NCHW source
  void run(void* out);               // the typed (or f32) NCHW output
  // With an fp32 output: applied to each tile as it is scattered; nullptr: none. By pointer.
  void set_post_ops(const PostOps* p) { post_ = p; }
  size_t workspace_bytes() const {
    return wp_.size() + in_.size() + 4 * (wsum_.size() + scale_.size());
  }

 private:
  ConvDesc d_;
  Plan plan_;
  int v_ = 1, j_ = 1;
  int64_t nb_ = 1;
  int32_t zero_ = 0;
  std::vector<uint8_t> wp_, in_;  // repacked weights, padded phase-split input
  std::vector<int32_t> wsum_;     // u8s8: [g][oc block][kh][16V] weight sums per kernel row
  std::vector<float> scale_;      // per output channel (padded to whole blocks)
  const PostOps* post_ = nullptr;
};

}  // namespace pb::direct
