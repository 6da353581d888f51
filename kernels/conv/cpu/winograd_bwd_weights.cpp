// cpu/winograd bwd_w: per chunk of tile rows, B^T d B of src and A dy A^T of diff_dst, summed per
// position over the chunk's tiles (register-blocked, no packing); at the end G^T acc G in fp64.
#include "kernels/conv/cpu/winograd_bwd_weights.h"

#include <omp.h>

#include <algorithm>

#include "kernels/conv/cpu/winograd_gemm.h"
#include "kernels/conv/cpu/winograd_layout.h"
#include "kernels/conv/cpu/winograd_transforms.h"

namespace pb {
namespace wino {

namespace {

// Shared path: transformed src and diff_dst of one chunk within this budget, written by the
// transforms and read by the sums while still in L3 (32 MiB on Zen 4).
constexpr int64_t kChunkBytes = int64_t(24) << 20;
// Slot path: at most kMaxSlots partial accumulators of at most kSlotAccBytes each (one per
// thread at a time, with its chunk, in L3), each summing at least kSlotTiles tiles (adding the
// slots up costs a pass over them); with fewer than kMinSlots the shared path runs. Its chunks:
// per thread, L2-sized, but at least kChunkTiles tiles (every chunk passes over the whole slot).
constexpr int64_t kMaxSlots = 16, kMinSlots = 4, kSlotAccBytes = int64_t(6) << 20;
constexpr int64_t kSlotTiles = 512, kSlotChunkBytes = int64_t(2) << 20, kChunkTiles = 128;
// Tiles per pass over a position's accumulators: 32 input channels of them (16 KiB) stay in L1
// while every block of 12 output channels passes.
constexpr int64_t kSumTiles = 128;
// Tile rows per work item of the transforms (dynamic, so that a thread slowed down by others is
// helped out; within an item, each src row is copied once).
constexpr int64_t kItemRows = 4;

}  // namespace

template <int M>
Support BwdWeights<M>::supports(const ConvDesc& d, const std::string& who) {
  constexpr int F = Tables<M>::alpha * Tables<M>::alpha;
  if (4.0 * F * double(d.icg()) * double(d.ocg()) > 2.0 * (1 << 30))
    return Support::no(who + " bwd_w: the per-position accumulators would need over 2 GiB");
  return Support::yes();
}

template <int M>
void BwdWeights<M>::prepare(const ConvDesc& d, int nthreads) {
  constexpr int A = Tables<M>::alpha, F = A * A;
  d_ = d;
  nthreads_ = nthreads;
  th_ = (d.oh + M - 1) / M;
  tw_ = (d.ow + M - 1) / M;
  const int64_t cb = (d.icg() + kLanes - 1) / kLanes, ob = (d.ocg() + kLanes - 1) / kLanes;
  // Row strides: one cache line more than the channels, against 4 KiB aliasing; they cover the
  // accumulator blocks' padding too (ocp_ <= ws_, icp_ <= vs_).
  vs_ = cb * kLanes + kLanes;
  ws_ = ob * kLanes + kLanes;
  ocp_ = (d.ocg() + kRows - 1) / kRows * kRows;
  icp_ = (d.icg() + kCols - 1) / kCols * kCols;
  const int64_t per_row = F * 4 * (vs_ + ws_) * tw_, rows = d.mb * th_, acc = F * ocp_ * icp_;
  slots_ = std::min({kMaxSlots, rows, rows * tw_ / kSlotTiles});
  if (slots_ < kMinSlots || 4 * acc > kSlotAccBytes) slots_ = 1;
  const int64_t nbuf = slots_ > 1 ? nthreads_ : 1;
  rc_ = slots_ > 1 ? std::max(kSlotChunkBytes / per_row, (kChunkTiles + tw_ - 1) / tw_)
                   : kChunkBytes / per_row;
  rc_ = std::max<int64_t>(1, std::min(rc_, rows));
  cap_ = rc_ * tw_;
  acc_ = Tensor({slots_ * acc});
  const int64_t wp = tw_ * M + 2;
  v_.clear(), w_.clear(), s_.clear();
  for (int64_t t = 0; t < nbuf; ++t) {
    v_.emplace_back(Dims{F * cap_ * vs_});
    w_.emplace_back(Dims{F * cap_ * ws_});
    v_.back().fill(0);  // lanes past the channels are read (and multiplied) but never written
    w_.back().fill(0);
  }
  for (int t = 0; t < nthreads_; ++t)
    s_.emplace_back(Dims{(2 * cb * A * wp + ob * M * tw_ * M) * kLanes});
}

template <int M>
size_t BwdWeights<M>::workspace_bytes() const {
  size_t b = acc_.bytes();
  for (const auto* ts : {&v_, &w_, &s_})
    for (const Tensor& t : *ts) b += t.bytes();
  return b;
}

template <int M>
void BwdWeights<M>::run(const float* src, const float* diff_dst, float* diff_wei) {
  for (int64_t g = 0; g < d_.g; ++g) {
    if (slots_ > 1)
      run_slots(g, src, diff_dst);
    else
      run_shared(g, src, diff_dst);
    finish(g, diff_wei);
  }
}

// Shared path (large accumulators): all threads transform a chunk into the shared buffers, then
// sum it per position (one position per thread at a time).
template <int M>
void BwdWeights<M>::run_shared(int64_t g, const float* src, const float* dd) {
  constexpr int F = Tables<M>::alpha * Tables<M>::alpha;
  const int64_t rows = d_.mb * th_, chunks = (rows + rc_ - 1) / rc_;
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t r0 = c * rc_, nr = std::min(rc_, rows - r0);
    const int64_t items = (nr + kItemRows - 1) / kItemRows;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nthreads_)
    for (int64_t it = 0; it < items; ++it)
      transform_rows(g, r0, it * kItemRows, std::min(nr, (it + 1) * kItemRows), src, dd,
                     s_[omp_get_thread_num()].data(), 0);
#pragma omp parallel for schedule(dynamic, 1) num_threads(nthreads_)
    for (int64_t p = 0; p < F; ++p) sum_position(0, nr * tw_, p, acc_.data(), c == 0);
  }
}

// Slot path (small accumulators): slot s sums tile rows [rows * s / slots_, rows * (s + 1) /
// slots_) into its own accumulators, chunk by chunk on one thread (no barrier per chunk); the
// slots are then added in slot order. The slots depend on the shape only, not on the threads.
template <int M>
void BwdWeights<M>::run_slots(int64_t g, const float* src, const float* dd) {
  constexpr int F = Tables<M>::alpha * Tables<M>::alpha;
  const int64_t rows = d_.mb * th_, acc = F * ocp_ * icp_;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nthreads_)
  for (int64_t sl = 0; sl < slots_; ++sl) {
    const int t = omp_get_thread_num();
    const int64_t end = rows * (sl + 1) / slots_;
    for (int64_t r0 = rows * sl / slots_; r0 < end; r0 += rc_) {
      const int64_t nr = std::min(rc_, end - r0);
      transform_rows(g, r0, 0, nr, src, dd, s_[t].data(), t);
      for (int64_t p = 0; p < F; ++p)
        sum_position(t, nr * tw_, p, acc_.data() + sl * acc, r0 == rows * sl / slots_);
    }
  }
  float* a = acc_.data();
#pragma omp parallel for schedule(static) num_threads(nthreads_)
  for (int64_t i = 0; i < acc; ++i)
    for (int64_t sl = 1; sl < slots_; ++sl) a[i] += a[sl * acc + i];
}

// Tile rows r0 + k, k in [k0, k1), of group g (tile row r: image r / th_, row r % th_) -> buffers
// b of v_ and w_ at tiles k * tw_ ...; s: this thread's rows (two of src, alternating, and one of
// diff_dst).
template <int M>
void BwdWeights<M>::transform_rows(int64_t g, int64_t r0, int64_t k0, int64_t k1, const float* src,
                                   const float* dd, float* s, int b) {
  constexpr int A = Tables<M>::alpha;
  const ConvDesc& d = d_;
  const int64_t icg = d.icg(), ocg = d.ocg(), wp = tw_ * M + 2, wd = tw_ * M;
  const int64_t cb = (icg + kLanes - 1) / kLanes, ob = (ocg + kLanes - 1) / kLanes;
  const RowSpan rs{icg, d.ih, d.iw, d.pw, wp, A, M}, rd{ocg, d.oh, d.ow, 0, wd, M, M};
  float* const srows[2] = {s, s + cb * A * wp * kLanes};
  float* const drows = s + 2 * cb * A * wp * kLanes;
  for (int64_t k = k0; k < k1; ++k) {
    const int64_t n = (r0 + k) / th_, ty = (r0 + k) % th_;
    float* sk = srows[k & 1];
    copy_rows(rs, src + (n * d.ic + g * icg) * d.ih * d.iw, ty * M - d.ph,
              k > k0 && ty > 0 ? srows[(k - 1) & 1] : nullptr, sk);
    copy_rows(rd, dd + (n * d.oc + g * ocg) * d.oh * d.ow, ty * M, nullptr, drows);
    for (int64_t x = 0; x < tw_; ++x) {
      const int64_t tile = k * tw_ + x;
      for (int64_t i = 0; i < cb; ++i)
        input_transform<M>(sk + (i * A * wp + x * M) * kLanes, wp * kLanes, kLanes,
                           v_[b].data() + tile * vs_ + i * kLanes, cap_ * vs_);
      for (int64_t o = 0; o < ob; ++o)
        diff_transform<M>(drows + (o * M * wd + x * M) * kLanes, wd * kLanes, kLanes,
                          w_[b].data() + tile * ws_ + o * kLanes, cap_ * ws_);
    }
  }
}

// acc[p] (ocp_ x icp_) (+)= W[p]^T (ocg x nt) * V[p] (nt x icg) from buffers b, in blocks of
// kRows x kCols (padding lanes of W and V are zero), in one fixed order.
template <int M>
void BwdWeights<M>::sum_position(int b, int64_t nt, int64_t p, float* acc, bool first) {
  const float* w = w_[b].data() + p * cap_ * ws_;
  const float* v = v_[b].data() + p * cap_ * vs_;
  float* c = acc + p * ocp_ * icp_;
  for (int64_t t0 = 0; t0 < nt; t0 += kSumTiles) {
    const int64_t kn = std::min(kSumTiles, nt - t0);
    const bool add = !first || t0 > 0;
    for (int64_t i = 0; i < icp_; i += kCols)
      for (int64_t o = 0; o < ocp_; o += kRows)
        gemm_block_tn(w + t0 * ws_ + o, ws_, v + t0 * vs_ + i, vs_, c + o * icp_ + i, icp_, kn,
                      add);
  }
}

// diff_wei[g][o][c] = G^T acc[.][o][c] G.
template <int M>
void BwdWeights<M>::finish(int64_t g, float* diff_wei) {
  const int64_t icg = d_.icg(), ocg = d_.ocg();
#pragma omp parallel for schedule(static) num_threads(nthreads_)
  for (int64_t o = 0; o < ocg; ++o)
    for (int64_t c = 0; c < icg; c += kGradBatch)
      filter_gradient<M>(acc_.data() + o * icp_ + c, ocp_ * icp_,
                         int(std::min<int64_t>(kGradBatch, icg - c)),
                         diff_wei + ((g * ocg + o) * icg + c) * 9);
}

template class BwdWeights<2>;
template class BwdWeights<4>;

}  // namespace wino
}  // namespace pb
