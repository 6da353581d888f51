// How cpu/fft cuts a convolution into FFTs: the transform size (whole image, or overlap-save tiles
// of the padded image) and the number of tiles per block, chosen by a simple cost model.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/conv/desc.h"

namespace pb {
namespace fft {

struct Geometry {
  int64_t nh = 0, nw = 0;                              // FFT size
  int64_t th = 0, tw = 0;                              // output rows/cols per tile: n - k + 1
  int64_t tiles_h = 0, tiles_w = 0;                    // tiles per image
  int64_t freqs() const { return nh * (nw / 2 + 1); }  // r2c half spectrum
  int64_t tiles(const ConvDesc& d) const { return d.mb * tiles_h * tiles_w; }
};

// 2^a 3^b 5^c 7^d: sizes FFTW handles with its fast codelets.
inline bool smooth(int64_t n) {
  for (int64_t p : {2, 3, 5, 7})
    while (n % p == 0) n /= p;
  return n == 1;
}

// Candidate FFT sizes for one dimension: smooth sizes from k up to the one covering the whole
// padded extent (out + k - 1), capped at 256.
inline std::vector<int64_t> candidates(int64_t out, int64_t k) {
  std::vector<int64_t> v;
  const int64_t whole = out + k - 1;
  for (int64_t n = std::max<int64_t>(k, 4); n <= 256; ++n) {
    if (!smooth(n)) continue;
    v.push_back(n);
    if (n >= whole) break;
  }
  return v;
}

// Spectrum bytes of the transformed filters: g * ocg * icg * freqs complex floats.
inline double filter_bytes(const ConvDesc& d, const Geometry& geo) {
  return 8.0 * d.g * d.ocg() * d.icg() * geo.freqs();
}

// Minimises pointwise complex MACs (8 flops each) plus FFT work (~2.5 n log2 n each way, weighted
// 2x for its lower efficiency) over all tiles, within a budget for the filter spectra.
inline Geometry choose_geometry(const ConvDesc& d, double max_filter_bytes = 512.0 * (1 << 20)) {
  Geometry best;
  double best_cost = 0;
  for (int64_t nh : candidates(d.oh, d.kh))
    for (int64_t nw : candidates(d.ow, d.kw)) {
      Geometry g;
      g.nh = nh, g.nw = nw, g.th = nh - d.kh + 1, g.tw = nw - d.kw + 1;
      g.tiles_h = (d.oh + g.th - 1) / g.th, g.tiles_w = (d.ow + g.tw - 1) / g.tw;
      const double n = double(nh) * nw, tiles = double(g.tiles_h) * g.tiles_w;
      const double mac = 8.0 * g.freqs() * d.icg() * d.ocg();
      const double fft = 2 * 2.5 * n * std::log2(n) * (d.icg() + d.ocg());
      const double cost = tiles * (mac + fft);
      const bool fits = filter_bytes(d, g) <= max_filter_bytes;
      const bool best_fits = best.nh && filter_bytes(d, best) <= max_filter_bytes;
      if (!best.nh || (fits && !best_fits) || (fits == best_fits && cost < best_cost))
        best = g, best_cost = cost;
    }
  return best;
}

// Tiles per block: the per-thread buffers (real patches and spectra, in and out) within ~4 MiB,
// and at least `threads` blocks when there are that many tiles.
inline int64_t block_tiles(const ConvDesc& d, const Geometry& geo, int threads) {
  const double per_tile = (d.icg() + d.ocg()) * (4.0 * geo.nh * geo.nw + 8.0 * geo.freqs());
  int64_t t = std::max<int64_t>(1, static_cast<int64_t>(4.0 * (1 << 20) / per_tile));
  const int64_t tiles = geo.tiles(d);
  t = std::min(t, (tiles + threads - 1) / threads);
  return std::max<int64_t>(1, t);
}

}  // namespace fft
}  // namespace pb
