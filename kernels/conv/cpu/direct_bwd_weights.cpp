// cpu/direct backward weights: diff_wei(o, c, ky, kx) = sum over (n, oy, ox) of
// diff_dst(n, o, oy, ox) * src(n, c, oy*sh - ph + ky*(dh+1), ox*sw - pw + kx*(dw+1)).
// SIMD over 16V output channels; a register tile holds T taps (kx, c) of one kernel row.
// src is copied to [n][ih][padded iw][ic] (the tile's channels adjacent, zero padding, so no
// edge tests along x) and diff_dst to [n][g*oc-block][oh*ow][16V]. The batch x rows are cut
// into chunks taken in order; within a chunk every tile adds its sum to its own accumulator in
// memory. Each weight belongs to one tile and the order of its sum is fixed: no atomics, and
// the gradient is bitwise the same for any thread count or schedule.
#include <array>
#include <utility>

#include "kernels/conv/cpu/direct_common.h"

namespace pb::direct {

namespace {

constexpr int kMaxT1 = 24, kMaxT2 = 14;  // the tile tables: T x V taps, AVX-512's widest
// Taps per tile that stay in registers: T x NV accumulators, NV diff_dst vectors and the
// broadcast src value (AVX-512: 24 for V = 1, 14 for V = 2; AVX2: 6 for V = 1).
constexpr int max_t(int v) {
  const int nv = v * kVec16;
  return std::min(v == 2 ? kMaxT2 : kMaxT1, (kRegs - 1 - nv) / nv);
}
constexpr int64_t kChunkPx = 1024;  // output pixels per chunk: 128 KiB of diff_dst per block

struct Geo {
  int64_t oh, ow, ih, sh, ph, dh1, rows_n;  // rows_n: floats per image of the src copy
  int64_t row_stride, xstep;                // floats per src-copy row; per output column
  int64_t dd_img, wstep;                    // floats per image of the diff_dst copy; 16V
};

// T input channels x 16V output channels at one (ky, kx), summed over flattened output rows
// [r0, r1) (r = n*oh + oy). `x` is the src copy at (image 0, row 0, column kx*(dw+1), first
// channel), `dd` the diff_dst copy of the oc-block (image 0). The chunk is summed in registers
// from zero and its total added to acc[t][16V]: two-level summation, so the rounding error grows
// with sqrt(chunk) + sqrt(chunks) rather than sqrt(mb*oh*ow).
template <int T, int V>
void tile(const Geo& g, int64_t r0, int64_t r1, int64_t ky, const float* x, const float* dd,
          float* accp, int64_t acc_step) {
  constexpr int NV = V * kVec16;
  vf acc[T][NV];
  for (int t = 0; t < T; ++t)
    for (int v = 0; v < NV; ++v) acc[t][v] = vf{};
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t n = r / g.oh, oy = r % g.oh;
    const int64_t iy = oy * g.sh - g.ph + ky * g.dh1;
    if (iy < 0 || iy >= g.ih) continue;
    const float* xr = x + n * g.rows_n + iy * g.row_stride;
    const float* dr = dd + n * g.dd_img + oy * g.ow * g.wstep;
    for (int64_t ox = 0; ox < g.ow; ++ox) {
      vf dv[NV];
      for (int v = 0; v < NV; ++v) dv[v] = load(dr + ox * g.wstep + kLanes * v);
      const float* s = xr + ox * g.xstep;
#pragma GCC unroll 24
      for (int t = 0; t < T; ++t) {
        const float sv = s[t];
        for (int v = 0; v < NV; ++v) acc[t][v] += dv[v] * sv;
      }
    }
  }
  for (int t = 0; t < T; ++t)
    for (int v = 0; v < NV; ++v) {
      float* p = accp + t * acc_step + kLanes * v;
      store(p, load(p) + acc[t][v]);
    }
}

using TileFn = void (*)(const Geo&, int64_t, int64_t, int64_t, const float*, const float*, float*,
                        int64_t);
template <int V, size_t... I>
constexpr std::array<TileFn, sizeof...(I)> tiles(std::index_sequence<I...>) {
  return {&tile<static_cast<int>(I) + 1, V>...};
}
const std::array<TileFn, kMaxT1> kTiles1 = tiles<1>(std::make_index_sequence<kMaxT1>());
const std::array<TileFn, kMaxT2> kTiles2 = tiles<2>(std::make_index_sequence<kMaxT2>());

}  // namespace

void BwdWeights::prepare(const ConvDesc& d) {
  d_ = d;
  // 1x1 inner products pay for their vector tails on small images (measured slower than the
  // general path at 14x14 and 7x7, faster at 56x56).
  one_ = d.kh == 1 && d.kw == 1 && d.ph == 0 && d.pw == 0 && d.oh * d.ow >= 784;
  if (one_) return prepare_1x1();
  v_ = pick_v_f32(d.ocg());
  const int64_t w16 = 16 * v_;
  nb_ = (d.ocg() + w16 - 1) / w16;
  // Taps per tile: as even a split as the register budget allows. Without dilation and groups,
  // the taps (kx, c) of a kernel row are adjacent in a src-copy row (offset kx*ic + c = f): one
  // tile may span several kx (a 7x7 filter on 3 channels: 21 taps, 2 tiles, not 7 of 3).
  const int64_t tmax = max_t(v_);
  auto split = [&](int64_t n, auto&& emit) {
    const int64_t parts = (n + tmax - 1) / tmax, t = (n + parts - 1) / parts;
    for (int64_t i = 0; i < n; i += t) emit(i, std::min(t, n - i));
  };
  taps_.clear();
  if (d.g == 1 && d.dw == 0)
    split(d.kw * d.ic, [&](int64_t f, int64_t t) { taps_.push_back({f, t, f}); });
  else
    for (int64_t kx = 0; kx < d.kw; ++kx)
      split(d.icg(), [&](int64_t c, int64_t t) {
        taps_.push_back({kx * d.icg() + c, t, kx * (d.dw + 1) * d.ic + c});
      });
  wpad_ = std::max(d.pw + d.iw, (d.ow - 1) * d.sw + (d.kw - 1) * (d.dw + 1) + 1);
  rows_per_chunk_ = std::max<int64_t>(1, kChunkPx / d.ow);
  xs_.assign(static_cast<size_t>(d.mb * d.ih * wpad_ * d.ic), 0.0f);  // padding stays 0
  dd_.assign(static_cast<size_t>(d.mb * d.g * nb_ * d.oh * d.ow * w16), 0.0f);
  acc_.assign(static_cast<size_t>(d.g * nb_ * d.icg() * d.kh * d.kw * w16), 0.0f);
}

void BwdWeights::run(const Tensor& src, const Tensor& diff_dst, Tensor& diff_wei) {
  if (one_) return run_1x1(src, diff_dst, diff_wei);
  const ConvDesc& d = d_;
  const int64_t w16 = 16 * v_, ohw = d.oh * d.ow, ihw = d.ih * d.iw, kk = d.kh * d.kw;
  const int64_t nbt = d.g * nb_;  // oc-blocks over all groups
  Geo geo{d.oh,
          d.ow,
          d.ih,
          d.sh,
          d.ph,
          d.dh + 1,
          d.ih * wpad_ * d.ic,
          wpad_ * d.ic,
          d.sw * d.ic,
          nbt * ohw * w16,
          w16};
  const int64_t ntaps = static_cast<int64_t>(taps_.size()), ntiles = nbt * d.kh * ntaps;
  const int64_t fstep = d.kw * d.icg();  // flat taps per kernel row
  const int64_t nrows = d.mb * d.oh, nchunks = (nrows + rows_per_chunk_ - 1) / rows_per_chunk_;
  const std::array<TileFn, kMaxT2>* t2 = &kTiles2;
  const std::array<TileFn, kMaxT1>* t1 = &kTiles1;
#pragma omp parallel
  {
    // src NCHW -> [n][ih][wpad][ic], per (image, row).
#pragma omp for schedule(static)
    for (int64_t r = 0; r < d.mb * d.ih; ++r) {
      const int64_t n = r / d.ih, iy = r % d.ih;
      float* o = xs_.data() + r * wpad_ * d.ic + d.pw * d.ic;
      const float* s = src.data() + n * d.ic * ihw + iy * d.iw;
      for (int64_t c = 0; c < d.ic; ++c)
        for (int64_t ix = 0; ix < d.iw; ++ix) o[ix * d.ic + c] = s[c * ihw + ix];
    }
    // diff_dst NCHW -> [n][oc-block][oh*ow][16V], per (image, oc-block).
#pragma omp for schedule(static) nowait
    for (int64_t r = 0; r < d.mb * nbt; ++r) {
      const int64_t n = r / nbt, b = r % nbt, gi = b / nb_, o0 = (b % nb_) * w16;
      const int64_t no = std::min(w16, d.ocg() - o0);
      float* o = dd_.data() + r * ohw * w16;
      const float* s = diff_dst.data() + (n * d.oc + gi * d.ocg() + o0) * ohw;
      for (int64_t p = 0; p < ohw; ++p)
        for (int64_t c = 0; c < no; ++c) o[p * w16 + c] = s[c * ohw + p];
    }
#pragma omp for schedule(static)
    for (size_t i = 0; i < acc_.size(); ++i) acc_[i] = 0.0f;
    // Chunks in order; a static schedule over the same tile count gives every thread the same
    // tiles in every chunk, so no barrier is needed between chunks.
    for (int64_t ch = 0; ch < nchunks; ++ch) {
      const int64_t r0 = ch * rows_per_chunk_, r1 = std::min(nrows, r0 + rows_per_chunk_);
#pragma omp for schedule(static) nowait
      for (int64_t t = 0; t < ntiles; ++t) {
        const Taps& tp = taps_[t % ntaps];
        const int64_t ky = (t / ntaps) % d.kh, b = t / ntaps / d.kh, gi = b / nb_;
        const float* x = xs_.data() + tp.src + gi * d.icg();
        const float* dd = dd_.data() + b * ohw * w16;
        float* accp = acc_.data() + ((b * d.kh + ky) * fstep + tp.f0) * w16;
        const TileFn f = v_ == 2 ? (*t2)[tp.t - 1] : (*t1)[tp.t - 1];
        f(geo, r0, r1, ky, x, dd, accp, w16);
      }
    }
#pragma omp barrier
    // acc [g][oc-block][kh][kw][icg][16V] -> diff_wei [g][ocg][icg][kh][kw].
#pragma omp for schedule(static)
    for (int64_t o = 0; o < d.oc; ++o) {
      const int64_t gi = o / d.ocg(), og = o % d.ocg(), b = gi * nb_ + og / w16, lane = og % w16;
      float* w = diff_wei.data() + o * d.icg() * kk;
      const float* a = acc_.data() + b * kk * d.icg() * w16 + lane;
      for (int64_t c = 0; c < d.icg(); ++c)
        for (int64_t k = 0; k < kk; ++k) w[c * kk + k] = a[(k * d.icg() + c) * w16];
    }
  }
}

}  // namespace pb::direct
