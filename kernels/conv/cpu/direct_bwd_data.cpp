// cpu/direct backward data: diff_src(n, c, iy, ix) = sum over (o, ky, kx) of
// diff_dst(n, o, oy, ox) * w(o, c, ky, kx) where oy*sh = iy + ph - ky*(dh+1) (likewise x): the
// transposed convolution. Columns ix are split by stride phase rx = (ix + pw) % sw; within one
// phase, ix = sw*q + rx - pw and only taps with kx*(dw+1) = rx (mod sw) contribute, each at
// ox = q - m(kx): a unit-stride correlation over q. SIMD over 16V input channels (weights
// repacked to [g][c-block][ocg][kh][kw][16V]), register tiles of J columns q, diff_dst copied to
// [n][oh][oc][lpad + ow + right pad] with zero padding so the inner loop has no edge tests.
#include <array>
#include <utility>

#include "kernels/conv/cpu/direct_common.h"

namespace pb::direct {

namespace {

// Rows of diff_dst that feed one diff_src row, and the taps of one column phase.
struct Rows {
  int n = 0;
  int64_t off[16], wk[16];  // row offset in the copy, weight offset (ky * kw)
};
struct Taps {
  int n = 0;
  int64_t xoff[16], wk[16];  // column offset (lpad - m) in a row, kx
};

// J columns (from q0) x 16V input channels of one diff_src row: sums over the group's ocg
// output channels, the contributing rows and the phase's taps. `in` is the group's first
// diff_dst channel (row 0), `w` the c-block's weights; the tile goes to out[J][16V].
template <int J, int V>
void tile(const float* in, int64_t cstride, int64_t ocg, int64_t kk, const Rows& r, const Taps& t,
          const float* w, int64_t q0, float* out) {
  constexpr int NV = V * kVec16;
  vf acc[J][NV];
  for (int j = 0; j < J; ++j)
    for (int v = 0; v < NV; ++v) acc[j][v] = vf{};
  const int64_t wstep = 16 * V;
  for (int64_t o = 0; o < ocg; ++o) {
    const float* plane = in + o * cstride + q0;
    const float* wo = w + o * kk * wstep;
    for (int ri = 0; ri < r.n; ++ri) {
      const float* row = plane + r.off[ri];
      const float* wr = wo + r.wk[ri] * wstep;
      for (int ti = 0; ti < t.n; ++ti) {
        const float* x = row + t.xoff[ti];
        tap(acc, x, wr + t.wk[ti] * wstep);
      }
    }
  }
  store_tile(out, wstep, acc);
}

using TileFn = void (*)(const float*, int64_t, int64_t, int64_t, const Rows&, const Taps&,
                        const float*, int64_t, float*);
template <int V, size_t... I>
constexpr std::array<TileFn, sizeof...(I)> tiles(std::index_sequence<I...>) {
  return {&tile<static_cast<int>(I) + 1, V>...};
}
const std::array<TileFn, kMaxJ> kTiles1 = tiles<1>(std::make_index_sequence<kMaxJ>());
const std::array<TileFn, kMaxJ> kTiles2 = tiles<2>(std::make_index_sequence<kMaxJ>());

// Columns q of phase rx: ix = sw*q + rx - pw in [0, iw) <=> q in [lo, hi).
void phase_range(const ConvDesc& d, int64_t rx, int64_t* lo, int64_t* hi) {
  *lo = (d.pw - rx + d.sw - 1) / d.sw;  // pw - rx > -sw, so this is ceil and >= 0
  *hi = std::max(*lo, (d.iw - 1 + d.pw - rx) / d.sw + 1);
}

}  // namespace

void BwdData::plan(const ConvDesc& d) {
  d_ = d;
  v_ = pick_v_f32(d.icg());
  const int64_t w16 = 16 * v_, kk = d.kh * d.kw;
  nb_ = (d.icg() + w16 - 1) / w16;
  // Tile width from the shortest non-empty phase; the largest column read sets the row length.
  int64_t min_nq = d.iw, max_hi = 0;
  for (int64_t rx = 0; rx < d.sw; ++rx) {
    int64_t lo, hi;
    phase_range(d, rx, &lo, &hi);
    if (hi > lo) min_nq = std::min(min_nq, hi - lo);
    max_hi = std::max(max_hi, hi);
  }
  // At most 6 columns with AVX2: 7 (14 accumulators) spills more here than in the forward,
  // whose loop keeps fewer pointers live. Zen 3, ResNet-50 res5 3x3 (7 columns), min of 3
  // alternating runs, J = 5/6/7: 32.6/35.8/35.2 ms (the forward: 32.6/35.4/26.0); res4 3x3 (14
  // columns): 23.3/26.1/35.6.
  j_ = pick_j_f32(min_nq, v_, kLanes == 16 ? max_j(v_) : std::min(6, max_j(v_)));
  lpad_ = (d.kw - 1) * (d.dw + 1) / d.sw;  // the largest m
  row_len_ = lpad_ + std::max(d.ow, max_hi);
  wp_ = Tensor({d.g * nb_ * d.ocg() * kk * w16});  // zeroed: channels past the group's stay 0
  dd_ = Tensor({d.mb * d.oh * d.oc * row_len_});   // zeroed: the padding stays 0
}

void BwdData::repack(const Tensor& wei) {
  repack_blocked(d_, wei.data(), false, 16 * v_, nb_, wp_.data());
}

void BwdData::run(const Tensor& diff_dst, Tensor& diff_src) {
  const ConvDesc& d = d_;
  const int64_t rows = d.mb * d.oc * d.oh, cstride = row_len_, row_stride = d.oc * row_len_;
  {
    const float* s = diff_dst.data();
    float* o = dd_.data();
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {  // r = (n * oc + c) * oh + oy
      const int64_t oy = r % d.oh, c = (r / d.oh) % d.oc, n = r / (d.oh * d.oc);
      std::memcpy(o + (n * d.oh + oy) * row_stride + c * cstride + lpad_, s + r * d.ow,
                  d.ow * sizeof(float));
    }
  }
  const TileFn fn = (v_ == 2 ? kTiles2 : kTiles1)[j_ - 1];
  const int64_t w16 = 16 * v_, kk = d.kh * d.kw, wblock = d.ocg() * kk * w16;
  const int64_t ntasks = d.mb * d.g * nb_ * d.ih, ihw = d.ih * d.iw;
#pragma omp parallel
  {
    alignas(64) float buf[kMaxJ * 32];
    // Contiguous rows per thread, as in the forward (for_tiles): the rows of diff_dst it reads
    // were mostly copied by its own core above. 2 threads, Zen 5 family 26, alternating
    // processes (medians of 3), ms dynamic -> static: ResNet-50 res2 3x3 12.3 -> 10.5, 1x1
    // stride 2 512 -> 256 5.96 -> 3.87, AlexNet conv2 (5x5, 2 groups) 24.4 -> 24.1.
#pragma omp for schedule(static)
    for (int64_t task = 0; task < ntasks; ++task) {
      const int64_t iy = task % d.ih, b = (task / d.ih) % nb_, gi = (task / d.ih / nb_) % d.g,
                    n = task / d.ih / nb_ / d.g;
      const int64_t c0 = b * w16, nc = std::min<int64_t>(w16, d.icg() - c0);
      float* out = diff_src.data() + (n * d.ic + gi * d.icg() + c0) * ihw + iy * d.iw;
      Rows r;
      for (int64_t ky = 0; ky < d.kh; ++ky) {
        const int64_t t = iy + d.ph - ky * (d.dh + 1);
        if (t < 0 || t % d.sh || t / d.sh >= d.oh) continue;
        r.off[r.n] = (n * d.oh + t / d.sh) * row_stride;
        r.wk[r.n++] = ky * d.kw;
      }
      const float* plane = dd_.data() + gi * d.ocg() * cstride;
      const float* w = wp_.data() + (gi * nb_ + b) * wblock;
      for (int64_t rx = 0; rx < d.sw; ++rx) {
        int64_t lo, hi;
        phase_range(d, rx, &lo, &hi);
        if (hi <= lo) continue;
        Taps tp;
        for (int64_t kx = 0; kx < d.kw; ++kx) {
          const int64_t x = kx * (d.dw + 1) - rx;
          if (x % d.sw) continue;
          tp.xoff[tp.n] = lpad_ - x / d.sw;
          tp.wk[tp.n++] = kx;
        }
        const int64_t x0 = d.sw * lo + rx - d.pw;  // first diff_src column of the phase
        if (r.n == 0 || tp.n == 0) {               // nothing reaches these columns
          for (int64_t c = 0; c < nc; ++c)
            for (int64_t q = lo; q < hi; ++q) out[c * ihw + x0 + (q - lo) * d.sw] = 0.0f;
          continue;
        }
        const int64_t nq = hi - lo, j = std::min<int64_t>(j_, nq);
        const TileFn f = j == j_ ? fn : (v_ == 2 ? kTiles2 : kTiles1)[j - 1];
        for (int64_t q = lo; q < hi; q += j) {
          const int64_t q0 = std::min(q, hi - j);
          f(plane, cstride, d.ocg(), kk, r, tp, w, q0, buf);
          float* oc = out + x0 + (q0 - lo) * d.sw;
          for (int64_t c = 0; c < nc; ++c)
            for (int64_t jj = 0; jj < j; ++jj) oc[c * ihw + jj * d.sw] = buf[jj * w16 + c];
        }
      }
    }
  }
}

}  // namespace pb::direct
