// cpu/direct backward weights of 1x1 unpadded layers: per group, diff_wei(o, c) = sum over
// (n, p) of diff_dst(n, o, p) * src(n, c, p): inner products over pixels, 16 pixels in the SIMD
// lanes (8 with AVX2), read straight from NCHW (a strided layer first gathers its src pixels).
// Register tiles of MO x MC (o, c) pairs; the pixels are cut into cache-sized chunks taken in
// order, each tile keeping its lane sums in memory between chunks and owned by one thread (a static
// schedule over the same tile count), and the lanes are summed in a fixed order at the end: the
// result is bitwise the same for any thread count.
#include <array>
#include <utility>

#include "kernels/conv/cpu/direct_common.h"

namespace pb::direct {

namespace {

// MO x MC accumulators + MO diff_dst vectors + 1 src in the registers: AVX-512 4 x 6 (29 of
// 32), AVX2 3 x 4 (16 of 16).
constexpr int kMO = kLanes == 16 ? 4 : 3, kMC = kLanes == 16 ? 6 : 4;
constexpr int64_t kChunkPx = 1024;  // pixels per chunk
constexpr int64_t kOBlock = 16;     // o-tiles sharing a pass over the src channels

struct Span {
  int64_t n0, n1, p0, p1;  // images [n0, n1), pixels [p0, p1) of each
};

// acc[MO][MC] += sum over the span of d(o0 + i) * x(c0 + j), rows `stride` floats apart per
// channel and `img` floats apart per image.
template <int MO, int MC>
void tile(const float* dd, const float* x, int64_t dd_img, int64_t x_img, int64_t stride,
          const Span& s, float* accp) {
  vf acc[MO][MC];
  for (int i = 0; i < MO; ++i)
    for (int j = 0; j < MC; ++j) acc[i][j] = load(accp + (i * kMC + j) * kLanes);
  const int64_t full = s.p0 + (s.p1 - s.p0) / kLanes * kLanes, tail = s.p1 - full;
  for (int64_t n = s.n0; n < s.n1; ++n) {
    const float* d = dd + n * dd_img;
    const float* xr = x + n * x_img;
    for (int64_t p = s.p0; p < full; p += kLanes) {
      vf dv[MO];
      for (int i = 0; i < MO; ++i) dv[i] = load(d + i * stride + p);
      for (int j = 0; j < MC; ++j) {
        const vf xv = load(xr + j * stride + p);
        for (int i = 0; i < MO; ++i) acc[i][j] += dv[i] * xv;
      }
    }
    if (tail) {  // the last pixels, zero-extended to a vector
      vf dv[MO];
      for (int i = 0; i < MO; ++i) {
        dv[i] = vf{};
        std::memcpy(&dv[i], d + i * stride + full, tail * sizeof(float));
      }
      for (int j = 0; j < MC; ++j) {
        vf xv{};
        std::memcpy(&xv, xr + j * stride + full, tail * sizeof(float));
        for (int i = 0; i < MO; ++i) acc[i][j] += dv[i] * xv;
      }
    }
  }
  for (int i = 0; i < MO; ++i)
    for (int j = 0; j < MC; ++j) store(accp + (i * kMC + j) * kLanes, acc[i][j]);
}

using TileFn = void (*)(const float*, const float*, int64_t, int64_t, int64_t, const Span&, float*);
template <int MO, size_t... J>
constexpr std::array<TileFn, kMC> row(std::index_sequence<J...>) {
  return {&tile<MO, static_cast<int>(J) + 1>...};
}
template <size_t... I>
constexpr std::array<std::array<TileFn, kMC>, kMO> table(std::index_sequence<I...>) {
  return {row<static_cast<int>(I) + 1>(std::make_index_sequence<kMC>())...};
}
const std::array<std::array<TileFn, kMC>, kMO> kTiles = table(std::make_index_sequence<kMO>());

}  // namespace

void BwdWeights::prepare_1x1() {
  const ConvDesc& d = d_;
  const int64_t ohw = d.oh * d.ow;
  // The src pixels are the image itself only at stride 1 with no unused end rows/columns.
  const bool strided = d.sh > 1 || d.sw > 1 || d.oh != d.ih || d.ow != d.iw;
  px_ = kChunkPx;
  xs_.assign(strided ? static_cast<size_t>(d.mb * d.ic * ohw) : 0, 0.0f);
  const int64_t ot = (d.ocg() + kMO - 1) / kMO, ct = (d.icg() + kMC - 1) / kMC;
  const int64_t otb = std::min(ot, kOBlock), nblk = (ot + otb - 1) / otb;
  acc_.assign(static_cast<size_t>(d.g * nblk * otb * ct * kMO * kMC * kLanes), 0.0f);
  dd_.clear();
}

void BwdWeights::run_1x1(const Tensor& src, const Tensor& diff_dst, Tensor& diff_wei) {
  const ConvDesc& d = d_;
  const int64_t ohw = d.oh * d.ow, ihw = d.ih * d.iw;
  // Tiles ordered (group, block of otb o-tiles, c-tile, o-tile): a block's diff_dst rows stay
  // in cache while the src channels stream past once per block.
  const int64_t ot = (d.ocg() + kMO - 1) / kMO, ct = (d.icg() + kMC - 1) / kMC;
  const int64_t otb = std::min(ot, kOBlock), nblk = (ot + otb - 1) / otb;
  const int64_t ntiles = d.g * nblk * ct * otb, per_tile = kMO * kMC * kLanes;
  auto coords = [&](int64_t t, int64_t* gi, int64_t* o0, int64_t* c0) {
    const int64_t oi = t % otb, c = t / otb % ct, blk = t / otb / ct % nblk;
    *gi = t / otb / ct / nblk;
    *o0 = (blk * otb + oi) * kMO;
    *c0 = c * kMC;
  };
  // Chunks: several whole images when they are small, else pixel ranges of one image.
  std::vector<Span> spans;
  if (ohw <= px_) {
    const int64_t per = std::max<int64_t>(1, px_ / ohw);
    for (int64_t n = 0; n < d.mb; n += per) spans.push_back({n, std::min(d.mb, n + per), 0, ohw});
  } else {
    for (int64_t n = 0; n < d.mb; ++n)
      for (int64_t p = 0; p < ohw; p += px_) spans.push_back({n, n + 1, p, std::min(ohw, p + px_)});
  }
  const float* x = xs_.empty() ? src.data() : xs_.data();
#pragma omp parallel
  {
    if (!xs_.empty()) {  // gather the src pixels used to [n][ic][oh*ow]
#pragma omp for schedule(static)
      for (int64_t r = 0; r < d.mb * d.ic * d.oh; ++r) {
        const int64_t oy = r % d.oh, nc = r / d.oh;
        const float* s = src.data() + nc * ihw + oy * d.sh * d.iw;
        float* o = xs_.data() + nc * ohw + oy * d.ow;
        for (int64_t ox = 0; ox < d.ow; ++ox) o[ox] = s[ox * d.sw];
      }
    }
#pragma omp for schedule(static)
    for (size_t i = 0; i < acc_.size(); ++i) acc_[i] = 0.0f;
    for (const Span& s : spans) {
#pragma omp for schedule(static) nowait
      for (int64_t t = 0; t < ntiles; ++t) {
        int64_t gi, o0, c0;
        coords(t, &gi, &o0, &c0);
        if (o0 >= d.ocg()) continue;
        const int mo = static_cast<int>(std::min<int64_t>(kMO, d.ocg() - o0));
        const int mc = static_cast<int>(std::min<int64_t>(kMC, d.icg() - c0));
        kTiles[mo - 1][mc - 1](diff_dst.data() + (gi * d.ocg() + o0) * ohw,
                               x + (gi * d.icg() + c0) * ohw, d.oc * ohw, d.ic * ohw, ohw, s,
                               acc_.data() + t * per_tile);
      }
    }
#pragma omp barrier
#pragma omp for schedule(static)
    for (int64_t t = 0; t < ntiles; ++t) {
      int64_t gi, o0, c0;
      coords(t, &gi, &o0, &c0);
      for (int64_t i = 0; i < kMO && o0 + i < d.ocg(); ++i)
        for (int64_t j = 0; j < kMC && c0 + j < d.icg(); ++j) {
          const float* a = acc_.data() + t * per_tile + (i * kMC + j) * kLanes;
          float sum = 0.0f;
          for (int l = 0; l < kLanes; ++l) sum += a[l];
          diff_wei.data()[((gi * d.ocg() + o0 + i) * d.icg() + c0 + j)] = sum;
        }
    }
  }
}

}  // namespace pb::direct
