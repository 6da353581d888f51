// cpu/winograd_f2 and cpu/winograd_f4: one Winograd F(m x m, 3 x 3) engine (Lavin & Gray 2015),
// 16 channels per vector; bwd_d on flipped filters, bwd_w in winograd_bwd_weights.cpp. Per thread,
// chunks of tile rows: source rows -> interleaved -> input transform -> alpha^2 GEMMs -> output.
// bf16 (fwd, bwd_d): the source rows are widened to fp32 as they are interleaved and the filters
// (rounded to bf16) transformed in fp32, so the engine runs the fp32 transforms and GEMMs on
// bf16 data, at half the bytes read; a bf16 output is rounded as it is written.
#include <omp.h>

#include <algorithm>
#include <cstring>

#include "kernels/conv/cpu/host_conv.h"
#include "kernels/conv/cpu/winograd_bwd_data.h"
#include "kernels/conv/cpu/winograd_bwd_weights.h"
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
  Support supports_bwd_d(const ConvDesc& d) const override {
    Support s = bwd_as_fwd::supports(d, name());
    return s ? supports_fwd(bwd_as_fwd::desc(d)) : s;
  }
  Support supports_bwd_w(const ConvDesc& d) const override {
    Support s = supports_fwd(d);
    return s ? wino::BwdWeights<M>::supports(d, name()) : s;
  }
  std::string dt_unsupported(const ConvDesc& d, Dir dir) const override {
    if (d.dt.in != DataType::bf16)
      return name() + " runs dt=f32 and bf16 only (its transforms are not integer-exact, so " +
             "u8s8 would need the transformed data requantised; f16 has no path)";
    if (dir == Dir::bwd_w) return name() + " runs dt=bf16 fwd and bwd_d only";
    return "";
  }

  void prepare_more() override {
    if (dir_ == Dir::bwd_w) {
      u_ = Tensor();
      s_.clear(), v_.clear(), m_.clear(), y_.clear();
      return bwd_w_.prepare(d_, omp_get_max_threads());
    }
    // bwd_d runs the forward engine on diff_dst with the flipped, transposed filter.
    const bool bwd = dir_ == Dir::bwd_d;
    e_ = bwd ? bwd_as_fwd::desc(d_) : d_;
    in_ = typed() ? (bwd ? diff_dst_typed() : src_typed())
                  : static_cast<const void*>(bwd ? diff_dst_->data() : src_->data());
    const ConvDesc& d = e_;
    th_ = (d.oh + M - 1) / M;
    tw_ = (d.ow + M - 1) / M;
    wp_ = tw_ * M + 2;
    cb_ = (d.icg() + kLanes - 1) / kLanes;
    op_ = (d.ocg() + kCols - 1) / kCols;
    // Row strides of V and M: one cache line more than the channels, against 4 KiB aliasing.
    vs_ = cb_ * kLanes + kLanes;
    ms_ = op_ * kCols + kLanes;
    nthreads_ = omp_get_max_threads();
    // Tile rows per chunk: V and M of a chunk within the budget. A transformed filter that fits
    // in L3 beside the chunks stays there, so chunks are L3-sized; a larger one is streamed once
    // per chunk, so chunks are made large (from memory) to serve many tiles per filter byte.
    // Measured: splitting the output channels so that filter parts stay in L3 (repeating the
    // input transform per part) was slower on VGG-16 conv4/conv5.
    const int64_t per_tile = F * 4 * (vs_ + ms_), rows = d.mb * th_;
    const int64_t u_bytes = F * d.icg() * op_ * kCols * 4;
    const int64_t budget = (u_bytes > (int64_t(3) << 20) ? 32 : 4) * (int64_t(1) << 20);
    rc_ = std::max<int64_t>(1, budget / (per_tile * tw_));
    // At least 3 chunks per thread, so that a thread slowed down by others is helped out.
    rc_ = std::min(rc_, std::max<int64_t>(1, rows / (3 * nthreads_)));
    tc_ = round_up(rc_ * tw_, kRows);
    u_ = Tensor({d.g * F * op_ * d.icg() * kCols});
    s_.clear();
    v_.clear();
    m_.clear();
    y_.clear();
    for (int t = 0; t < nthreads_; ++t) {
      s_.emplace_back(Dims{rc_ * cb_ * A * wp_ * kLanes});
      y_.emplace_back(Dims{d.ocg() * M * d.ow});
      v_.emplace_back(Dims{F * tc_ * vs_});
      m_.emplace_back(Dims{F * tc_ * ms_});
      v_.back().fill(0);  // rows past the last tile are multiplied, never stored
    }
  }

  // The transformed weights (the workspaces and bwd_w's buffers depend on the shape only); a
  // reduced type's are rounded to it first.
  void weights() override {
    const Tensor* w = wei_;
    if (typed() && dir_ != Dir::bwd_w) {
      typed_weights(&wei_typed_);
      wei_round_ = Tensor(wei_->dims());
      const uint16_t* h = reinterpret_cast<const uint16_t*>(wei_typed_.data());
      for (int64_t i = 0; i < wei_round_.size(); ++i) wei_round_[i] = from_bf16(h[i]);
      w = &wei_round_;
    }
    if (dir_ == Dir::fwd) transform_filters(*w);
    if (dir_ == Dir::bwd_d) transform_filters(bwd_as_fwd::filter(d_, *w));
  }

  void run_dir() override {
    if (dir_ == Dir::bwd_w) return bwd_w_.run(src_->data(), diff_dst_->data(), dst_.data());
    const int64_t chunks = (e_.mb * th_ + rc_ - 1) / rc_, items = e_.g * chunks;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nthreads_)
    for (int64_t it = 0; it < items; ++it) {
      const int t = omp_get_thread_num();
      chunk(it / chunks, it % chunks, s_[t].data(), v_[t].data(), m_[t].data(), y_[t].data());
    }
  }

  size_t workspace_bytes() const override {
    if (dir_ == Dir::bwd_w) return bwd_w_.workspace_bytes();
    size_t b = u_.bytes();
    for (const auto* w : {&s_, &v_, &m_, &y_})
      for (const auto& t : *w) b += t.bytes();
    return b;
  }

 private:
  void transform_filters(const Tensor& wei) {
    u_.fill(0);
    const int64_t icg = e_.icg(), ocg = e_.ocg();
    float u[F];
    for (int64_t g = 0; g < e_.g; ++g)
      for (int64_t o = 0; o < ocg; ++o)
        for (int64_t c = 0; c < icg; ++c) {
          wino::filter_transform<M>(wei.data() + ((g * ocg + o) * icg + c) * 9, u);
          for (int p = 0; p < F; ++p)
            u_[(((g * F + p) * op_ + o / kCols) * icg + c) * kCols + o % kCols] = u[p];
        }
  }

  // The alpha source rows under tile row ty of image n, group g -> s (see wino::copy_rows). prev:
  // the same for tile row ty - 1 (its last alpha - m rows are this one's first), or null.
  void copy_rows(int64_t n, int64_t g, int64_t ty, const float* prev, float* s) const {
    const wino::RowSpan r{e_.icg(), e_.ih, e_.iw, e_.pw, wp_, A, M};
    const int64_t at = (n * e_.ic + g * e_.icg()) * e_.ih * e_.iw;
    if (typed())
      wino::copy_rows(r, static_cast<const uint16_t*>(in_) + at, ty * M - e_.ph, prev, s);
    else
      wino::copy_rows(r, static_cast<const float*>(in_) + at, ty * M - e_.ph, prev, s);
  }

  // Chunk c (tile rows c * rc_ ...) of group g on one thread's buffers: s (source rows), v
  // (V[p][t][ic]), mb (M[p][t][oc]) and y (one tile row of output, [oc][M rows][ow]).
  void chunk(int64_t g, int64_t c, float* s, float* v, float* mb, float* y) {
    const int64_t r0 = c * rc_, nr = std::min(rc_, e_.mb * th_ - r0), nt = nr * tw_;
    const int64_t icg = e_.icg(), rows = cb_ * A * wp_ * kLanes;
    for (int64_t k = 0; k < nr; ++k) {
      float* sk = s + k * rows;
      const int64_t ty = (r0 + k) % th_;
      copy_rows((r0 + k) / th_, g, ty, k > 0 && ty > 0 ? sk - rows : nullptr, sk);
      for (int64_t x = 0; x < tw_; ++x)
        for (int64_t cb = 0; cb < cb_; ++cb)
          wino::input_transform<M>(sk + cb * A * wp_ * kLanes + x * M * kLanes, wp_ * kLanes,
                                   kLanes, v + (k * tw_ + x) * vs_ + cb * kLanes, tc_ * vs_);
    }
    // Per position: groups of tiles whose V rows stay in L2 while every filter panel passes.
    const int64_t blocks = (nt + kRows - 1) / kRows;
    const int64_t group = std::max<int64_t>(1, (256 << 10) / (vs_ * 4 * kRows));
    for (int64_t p = 0; p < F; ++p)
      for (int64_t b0 = 0; b0 < blocks; b0 += group)
        for (int64_t ob = 0; ob < op_; ++ob) {
          const float* u = u_.data() + ((g * F + p) * op_ + ob) * icg * kCols;
          const int64_t b1 = std::min(blocks, b0 + group);
          for (int64_t b = b0; b < b1 - 1; ++b)
            wino::gemm_block(v + (p * tc_ + b * kRows) * vs_, vs_, u,
                             mb + (p * tc_ + b * kRows) * ms_ + ob * kCols, ms_, icg);
          // The last block fetches the next panel in memory order (usually the next one used).
          wino::gemm_block<true>(v + (p * tc_ + (b1 - 1) * kRows) * vs_, vs_, u,
                                 mb + (p * tc_ + (b1 - 1) * kRows) * ms_ + ob * kCols, ms_, icg,
                                 u + icg * kCols);
        }
    const int64_t ocg = e_.ocg(), oh = e_.oh, ow = e_.ow;
    for (int64_t k = 0; k < nr; ++k) {
      for (int64_t x = 0; x < tw_; ++x) output_tile(x, mb + (k * tw_ + x) * ms_, y);
      // The tile row's M output rows of each channel are one contiguous span of dst.
      const int64_t n = (r0 + k) / th_, y0 = (r0 + k) % th_ * M, ny = std::min<int64_t>(M, oh - y0);
      for (int64_t o = 0; o < ocg; ++o) {
        const int64_t at = ((n * e_.oc + g * ocg + o) * oh + y0) * ow;
        if (typed_out())
          wino::round_copy(static_cast<uint16_t*>(out_data()) + at, y + o * M * ow, ny * ow);
        else
          wino::stream_copy(dst_.data() + at, y + o * M * ow, ny * ow);
      }
    }
    wino::stream_fence();
  }

  // Output tile x of a tile row = A^T M A for the group's output channels, 16 at a time, into
  // y[oc][M rows][ow], clipped at the right edge.
  void output_tile(int64_t x, const float* m, float* y) const {
    const int64_t ocg = e_.ocg(), ow = e_.ow, x0 = x * M;
    const int nx = int(std::min<int64_t>(M, ow - x0));
    alignas(64) float t[16][kLanes] = {}, tr[kLanes][16];
    for (int64_t o0 = 0; o0 < ocg; o0 += kLanes) {
      wino::output_transform<M>(m + o0, t[0], tc_ * ms_);
      const int64_t no = std::min<int64_t>(kLanes, ocg - o0);
      if (M == 4 && nx == M && no == kLanes) {
        wino::scatter4x4(t[0], y + o0 * M * ow + x0, ow);
        continue;
      }
      wino::transpose16(t[0], kLanes, tr[0], 16);  // tr[o][i * M + j]
      for (int64_t o = 0; o < no; ++o)
        for (int i = 0; i < M; ++i) {
          float* q = y + ((o0 + o) * M + i) * ow + x0;
          if (nx == M)
            std::memcpy(q, tr[o] + i * M, M * sizeof(float));
          else
            std::memcpy(q, tr[o] + i * M, nx * sizeof(float));
        }
    }
  }

  ConvDesc e_;                      // the forward problem run: d_, or bwd_d's (bwd_as_fwd::desc)
  const void* in_ = nullptr;        // its input: src or diff_dst (fp32, or bf16 for dt=bf16)
  std::vector<uint8_t> wei_typed_;  // bf16: the weights in the type, and as fp32 values
  Tensor wei_round_;
  int64_t th_ = 0, tw_ = 0, wp_ = 0, cb_ = 0, op_ = 0, vs_ = 0, ms_ = 0;
  int64_t rc_ = 0, tc_ = 0;  // tile rows per chunk; tiles per chunk, rounded up to kRows
  int nthreads_ = 1;
  Tensor u_;
  // Per thread: source rows, transformed inputs, GEMM products, one tile row of output.
  std::vector<Tensor> s_, v_, m_, y_;
  wino::BwdWeights<M> bwd_w_;
};

}  // namespace

std::unique_ptr<ConvImpl> make_conv_winograd_f2() {
  return std::make_unique<WinogradConv<2>>();
}
std::unique_ptr<ConvImpl> make_conv_winograd_f4() {
  return std::make_unique<WinogradConv<4>>();
}

}  // namespace pb
