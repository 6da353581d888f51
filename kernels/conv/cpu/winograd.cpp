// cpu/winograd_f2 and cpu/winograd_f4: one Winograd F(m x m, 3 x 3) engine (Lavin & Gray 2015)
// with two transform tables, vectorised across 16 channels. Per chunk of tiles: input transform
// -> alpha^2 GEMMs -> output transform, the chunk sized to stay in cache.
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "kernels/conv/cpu/host_conv.h"
#include "kernels/conv/cpu/winograd_gemm.h"
#include "kernels/conv/cpu/winograd_layout.h"
#include "kernels/conv/cpu/winograd_transforms.h"
#include "kernels/core/error.h"

namespace pb {

namespace {

using wino::kCols;
using wino::kLanes;
using wino::kRows;

int64_t round_up(int64_t a, int64_t b) {
  return (a + b - 1) / b * b;
}

// [begin, end) of part `i` of `n` equal parts of [0, count).
struct Range {
  int64_t begin, end;
};
Range split(int64_t count, int i, int n) {
  return {count * i / n, count * (i + 1) / n};
}

int64_t env_or(const char* name, int64_t fallback) {
  const char* s = std::getenv(name);
  return s && *s ? std::atoll(s) : fallback;
}

template <int M>
class WinogradConv final : public HostConv {
  static constexpr int A = wino::Tables<M>::alpha;
  static constexpr int F = A * A;  // transform positions

 public:
  std::string name() const override { return M == 2 ? "cpu/winograd_f2" : "cpu/winograd_f4"; }

  Support supports_fwd(const ConvDesc& d) const override {
    if (d.kh != 3 || d.kw != 3)
      return Support::no("winograd needs a 3x3 kernel, got " + std::to_string(d.kh) + "x" +
                         std::to_string(d.kw));
    if (d.sh != 1 || d.sw != 1)
      return Support::no("winograd needs stride 1, got " + std::to_string(d.sh) + "x" +
                         std::to_string(d.sw));
    if (d.dh != 0 || d.dw != 0) return Support::no("winograd needs dilation 0 (dense)");
    return Support::yes();
  }

  void prepare_more() override {
    const ConvDesc& d = d_;
    th_ = (d.oh + M - 1) / M;
    tw_ = (d.ow + M - 1) / M;
    hp_ = th_ * M + 2;
    wp_ = tw_ * M + 2;
    tiles_ = d.mb * th_ * tw_;
    cb_ = (d.icg() + kLanes - 1) / kLanes;
    op_ = (d.ocg() + kCols - 1) / kCols;
    // Row strides of V and M: one cache line more than the channels, against 4 KiB aliasing.
    vs_ = cb_ * kLanes + kLanes;
    ms_ = op_ * kCols + kLanes;
    nthreads_ = omp_get_max_threads();
    choose_chunks();
    s_ = Tensor({d.mb * d.g * cb_ * hp_ * wp_ * kLanes});
    s_.fill(0);  // borders and padding channels stay zero; run() rewrites the interior only
    u_ = Tensor({d.g * F * op_ * d.icg() * kCols});
    transform_filters(*wei_);
    v_.clear();
    m_.clear();
    for (int t = 0; t < (team_ ? 1 : nthreads_); ++t) {
      v_.emplace_back(Dims{F * tc_ * vs_});
      m_.emplace_back(Dims{F * tc_ * ms_});
      v_.back().fill(0);  // rows past the last tile are multiplied, never stored
    }
  }

  void run() override {
    const int64_t chunks = (tiles_ + tc_ - 1) / tc_, items = d_.g * chunks;
#pragma omp parallel num_threads(nthreads_)
    {
      const int tid = omp_get_thread_num(), nth = omp_get_num_threads();
      copy_in(tid, nth);
#pragma omp barrier
      if (team_) {
        for (int64_t it = 0; it < items; ++it)
          chunk(it / chunks, it % chunks, v_[0].data(), m_[0].data(), tid, nth);
      } else {
#pragma omp for schedule(dynamic, 1)
        for (int64_t it = 0; it < items; ++it)
          chunk(it / chunks, it % chunks, v_[tid].data(), m_[tid].data(), 0, 1);
      }
    }
  }

  size_t workspace_bytes() const override {
    size_t b = s_.bytes() + u_.bytes();
    for (const auto& t : v_) b += t.bytes();
    for (const auto& t : m_) b += t.bytes();
    return b;
  }

 private:
  // Team mode: all threads share one chunk (split by tiles, then by GEMM position), so that a
  // large transformed filter is read once per chunk. Otherwise each thread takes whole chunks.
  void choose_chunks() {
    const int64_t per_tile = F * 4 * (vs_ + ms_), u_bytes = F * d_.icg() * op_ * kCols * 4;
    team_ = env_or("PB_WINO_TEAM", u_bytes > (int64_t(2) << 20)) && nthreads_ > 1;
    const int64_t budget = env_or("PB_WINO_KB", team_ ? 16384 : 768) << 10;
    tc_ = std::max<int64_t>(kRows, budget / per_tile / kRows * kRows);
    tc_ = std::min(tc_, round_up(tiles_, kRows));
  }

  void transform_filters(const Tensor& wei) {
    u_.fill(0);
    const int64_t icg = d_.icg(), ocg = d_.ocg();
    float u[F];
    for (int64_t g = 0; g < d_.g; ++g)
      for (int64_t o = 0; o < ocg; ++o)
        for (int64_t c = 0; c < icg; ++c) {
          wino::filter_transform<M>(wei.data() + ((g * ocg + o) * icg + c) * 9, u);
          for (int p = 0; p < F; ++p)
            u_[(((g * F + p) * op_ + o / kCols) * icg + c) * kCols + o % kCols] = u[p];
        }
  }

  // src (NCHW) -> s_[n][g][cb][Y][X][16 channels], zero-bordered: padded row Y holds source row
  // Y - ph, padded column X source column X - pw.
  void copy_in(int tid, int nth) {
    const int64_t ih = d_.ih, iw = d_.iw, icg = d_.icg();
    const int64_t y0 = std::max<int64_t>(0, d_.ph), x0 = std::max<int64_t>(0, d_.pw);
    const int64_t rows = std::min(ih - (y0 - d_.ph), hp_ - y0);
    const int64_t cols = std::min(iw - (x0 - d_.pw), wp_ - x0);
    if (rows <= 0 || cols <= 0) return;
    const Range r = split(d_.mb * d_.g * cb_ * rows, tid, nth);
    for (int64_t it = r.begin; it < r.end; ++it) {
      const int64_t plane = it / rows, y = it % rows, cb = plane % cb_, ng = plane / cb_;
      const int64_t n = ng / d_.g, g = ng % d_.g;
      const float* s = src_->data() +
                       ((n * d_.ic + g * icg + cb * kLanes) * ih + y0 - d_.ph + y) * iw +
                       (x0 - d_.pw);
      float* p = s_.data() + ((plane * hp_ + y0 + y) * wp_ + x0) * kLanes;
      const int nc = int(std::min<int64_t>(kLanes, icg - cb * kLanes));
      for (int64_t x = 0; x < cols; x += 16)
        wino::interleave16(s + x, ih * iw, nc, int(std::min<int64_t>(16, cols - x)),
                           p + x * kLanes);
    }
  }

  // One chunk of tiles of group g, on the team's buffers v (V[p][t][ic]) and mb (M[p][t][oc]);
  // thread tid of nth (nth = 1: one thread alone, no barriers).
  void chunk(int64_t g, int64_t c, float* v, float* mb, int tid, int nth) {
    const int64_t t0 = c * tc_, nt = std::min(tc_, tiles_ - t0), icg = d_.icg();
    Range r = split(nt, tid, nth);
    for (int64_t t = r.begin; t < r.end; ++t) input_tile(g, t0 + t, v + t * vs_);
    if (nth > 1) {
#pragma omp barrier
    }
    const int64_t blocks = (nt + kRows - 1) / kRows;
    r = split(F * op_, tid, nth);
    for (int64_t it = r.begin; it < r.end; ++it) {
      const int64_t p = it / op_, ob = it % op_;
      const float* u = u_.data() + ((g * F + p) * op_ + ob) * icg * kCols;
      for (int64_t b = 0; b < blocks; ++b)
        wino::gemm_block(v + (p * tc_ + b * kRows) * vs_, vs_, u,
                         mb + (p * tc_ + b * kRows) * ms_ + ob * kCols, ms_, icg);
    }
    if (nth > 1) {
#pragma omp barrier
    }
    r = split(nt, tid, nth);
    for (int64_t t = r.begin; t < r.end; ++t) output_tile(g, t0 + t, mb + t * ms_);
    if (nth > 1) {
#pragma omp barrier
    }
  }

  // V[p][tile][c] = (B^T d B)[p] of tile `gt` for the group's channels c.
  void input_tile(int64_t g, int64_t gt, float* v) const {
    const int64_t n = gt / (th_ * tw_), r = gt % (th_ * tw_), ty = r / tw_, tx = r % tw_;
    const int64_t plane = hp_ * wp_ * kLanes;
    const float* s = s_.data() + (n * d_.g + g) * cb_ * plane + (ty * M * wp_ + tx * M) * kLanes;
    for (int64_t cb = 0; cb < cb_; ++cb)
      wino::input_transform<M>(s + cb * plane, wp_ * kLanes, kLanes, v + cb * kLanes, tc_ * vs_);
  }

  // dst tile `gt` = A^T M A for the group's output channels, 16 at a time, clipped at the edges.
  void output_tile(int64_t g, int64_t gt, const float* m) {
    const int64_t n = gt / (th_ * tw_), r = gt % (th_ * tw_), y0 = r / tw_ * M, x0 = r % tw_ * M;
    const int64_t ocg = d_.ocg(), oh = d_.oh, ow = d_.ow;
    const int ny = int(std::min<int64_t>(M, oh - y0)), nx = int(std::min<int64_t>(M, ow - x0));
    alignas(64) float y[16][kLanes] = {}, tr[kLanes][16];
    for (int64_t o0 = 0; o0 < ocg; o0 += kLanes) {
      wino::output_transform<M>(m + o0, y[0], tc_ * ms_);
      wino::transpose16(y[0], kLanes, tr[0], 16);  // tr[o][i * M + j]
      const int64_t no = std::min<int64_t>(kLanes, ocg - o0);
      float* dst = dst_.data() + ((n * d_.oc + g * ocg + o0) * oh + y0) * ow + x0;
      for (int64_t o = 0; o < no; ++o)
        for (int i = 0; i < ny; ++i) {
          float* q = dst + (o * oh + i) * ow;
          if (nx == M)
            std::memcpy(q, tr[o] + i * M, M * sizeof(float));
          else
            std::memcpy(q, tr[o] + i * M, nx * sizeof(float));
        }
    }
  }

  int64_t th_ = 0, tw_ = 0, hp_ = 0, wp_ = 0, tiles_ = 0, cb_ = 0, op_ = 0, vs_ = 0, ms_ = 0;
  int64_t tc_ = 0;  // tiles per chunk, a multiple of kRows
  bool team_ = false;
  int nthreads_ = 1;
  Tensor s_, u_;
  std::vector<Tensor> v_, m_;  // per team: transformed inputs, GEMM products
};

}  // namespace

std::unique_ptr<ConvImpl> make_conv_winograd_f2() {
  return std::make_unique<WinogradConv<2>>();
}
std::unique_ptr<ConvImpl> make_conv_winograd_f4() {
  return std::make_unique<WinogradConv<4>>();
}

}  // namespace pb
