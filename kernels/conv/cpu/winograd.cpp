// cpu/winograd_f2 and cpu/winograd_f4: one Winograd F(m x m, 3 x 3) engine (Lavin & Gray 2015),
// 16 channels per vector; bwd_d on flipped filters, bwd_w in winograd_bwd_weights.cpp. Per thread,
// chunks of tile rows: source rows -> interleaved -> input transform -> alpha^2 GEMMs -> output.
// bf16 (fwd, bwd_d): the source rows are widened to fp32 as they are interleaved and the filters
// (rounded to bf16) transformed in fp64; the output transform is fp32, and a bf16 output is
// rounded as it is written. F(2x2,3x3) rounds both transformed operands to bf16 and runs the
// per-position GEMMs on bf16 dot products (vdpbf16ps) with fp32 sums, at twice the fp32 multiply
// rate: its transforms (0, +-1, +-1/2) keep integer data exact in bf16; on reals the rounding
// adds about twice the error that rounding fp32 data and weights to bf16 makes (tolerance row
// conv:bf16 cpu/winograd_f2; VGG-16 bf16 against fp32: logit error 0.0080 -> 0.0105, top-1
// agreement 15/16 -> 13/16 on logits that nearly tie; ResNet-50: 0.103 -> 0.108, 14/16 both).
// F(4x4,3x3) keeps fp32 GEMMs on the fp32 transforms: in bf16 its transformed operands (B^T
// entries up to 5, G's 1/6, 1/12, 1/24) were off by 1.3-1.7% normwise on integer data, single
// outputs by 10 at 80, and ResNet-50's logit error against fp32 rose from 0.103 to 0.157 (top-1
// agreement 14/16 -> 13/16), for 1.5-1.9x on its 3x3 layers; F(2x2) in bf16 is at least as fast
// as F(4x4) in fp32 from 256 channels on. Where the CPU has no AVX512_BF16 (or PRIMBENCH_SIMD
// holds it to AVX2), F(2x2) too runs the fp32 GEMMs.
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
#include "kernels/gemm/cpu/packed_lowp.h"

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
    post_ = nullptr;
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
    dot_ = M == 2 && typed() && gemm_packed_lowp_avx512_unsupported(d.dt).empty();
    icp_ = (d.icg() + 1) / 2;
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
    u_ = dot_ ? Tensor() : Tensor({d.g * F * op_ * d.icg() * kCols});
    ub_.assign(dot_ ? static_cast<size_t>(d.g * F * op_ * icp_ * 2 * kCols) : 0, 0);
    s_.clear();
    v_.clear();
    m_.clear();
    y_.clear();
    for (int t = 0; t < nthreads_; ++t) {
      s_.emplace_back(Dims{rc_ * cb_ * A * wp_ * kLanes});
      y_.emplace_back(Dims{d.ocg() * M * d.ow});
      v_.emplace_back(Dims{F * tc_ * vs_});
      m_.emplace_back(Dims{F * tc_ * ms_});
      // Rows past the last tile are multiplied, never stored (bf16: V's first half, as uint16_t).
      v_.back().fill(0);
    }
  }

  // The transformed weights (the workspaces and bwd_w's buffers depend on the shape only); a
  // reduced type's are rounded to it first.
  void weights() override {
    if (dir_ == Dir::bwd_w) return;  // no weights (bwd_w_ needs none)
    const Tensor* w = wei_;
    if (typed()) {
      typed_weights(&wei_typed_);
      if (wei_round_.size() != wei_->size()) wei_round_ = Tensor(wei_->dims());
      const uint16_t* h = reinterpret_cast<const uint16_t*>(wei_typed_.data());
      float* r = wei_round_.data();
      const int64_t n = wei_round_.size();
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < n; ++i) r[i] = from_bf16(h[i]);
      w = &wei_round_;
    }
    const float* wd = w->data();
    if (dir_ == Dir::fwd) {
      const int64_t icg = d_.icg(), ocg = d_.ocg();
      transform_filters([=](int64_t g, int64_t o, int64_t c, float* f) {
        std::memcpy(f, wd + ((g * ocg + o) * icg + c) * 9, 9 * sizeof(float));
      });
    }
    if (dir_ == Dir::bwd_d)
      transform_filters([&](int64_t g, int64_t o, int64_t c, float* f) {
        bwd_as_fwd::flipped_filter(d_, wd, g, o, c, f);
      });
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

  void typed_source_moved() override {
    if (dir_ == Dir::fwd) in_ = src_typed();
  }
  // In fp32, applied to each output span as it leaves the tile buffer.
  bool takes_post_ops() const override {
    return !typed();
  }
  void use_post_ops(const PostOps* p) override {
    post_ = p;
  }

  // bf16: 1 where the GEMMs ran on bf16 dot products, 0 where on fp32 (see the top).
  std::vector<std::pair<std::string, double>> extra_counters() const override {
    if (!typed() || dir_ == Dir::bwd_w) return {};
    return {{"bf16_dot_products", dot_ ? 1.0 : 0.0}};
  }

  size_t workspace_bytes() const override {
    if (dir_ == Dir::bwd_w) return bwd_w_.workspace_bytes();
    size_t b = u_.bytes() + ub_.size() * sizeof(uint16_t);
    for (const auto* w : {&s_, &v_, &m_, &y_})
      for (const auto& t : *w) b += t.bytes();
    return b;
  }

 private:
  // U per (group, position, panel of kCols output channels): fp32 [icg][kCols], or bf16
  // [icp_][kCols][2] (channel pairs; an odd count's last pair ends in a zero). filter(g, o, c, f)
  // writes e_'s 3x3 filter of output channel o, input channel c (group g) to f. In parallel over
  // the panels, each written in runs of its channels; the entries past the last output channel
  // (and an odd count's last input channel) stay as planned, zero. On one thread, scattering
  // every transformed value on its own and zeroing U first, this cost a training step 16 ms on
  // AlexNet conv3's forward and 24 on its bwd_d (rebuilding the flipped filter as a new tensor
  // too) against 6.5 for the forward itself (Zen 5 family 26, 2 threads).
  template <class Filter>
  void transform_filters(Filter&& filter) {
    const int64_t icg = e_.icg(), ocg = e_.ocg(), groups = e_.g, panels = op_;
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t ob = 0; ob < panels; ++ob) {
        const int64_t o0 = ob * kCols, n = std::min<int64_t>(kCols, ocg - o0);
        // The panel's filters of input channel c, tap-major (w[k][i]; past n: zero).
        float w[9][kCols] = {}, u[F][kCols], f[9];
        for (int64_t c = 0; c < icg; ++c) {
          for (int64_t i = 0; i < n; ++i) {
            filter(g, o0 + i, c, f);
            for (int k = 0; k < 9; ++k) w[k][i] = f[k];
          }
          wino::filter_transform_batch<M, kCols>(w[0], u[0]);
          for (int p = 0; p < F; ++p) {
            const int64_t panel = (g * F + p) * op_ + ob;
            if (dot_) {
              uint16_t* t = ub_.data() + ((panel * icp_ + c / 2) * kCols) * 2 + c % 2;
              for (int64_t i = 0; i < n; ++i) t[2 * i] = to_bf16(u[p][i]);
            } else {
              float* t = u_.data() + (panel * icg + c) * kCols;
              for (int64_t i = 0; i < n; ++i) t[i] = u[p][i];
            }
          }
        }
      }
  }

  // C rows b * kRows.. of position p, panel ob, of the chunk (V at v, C at mb); the last block of
  // a group fetches the next panel in memory order (usually the next one used).
  void gemm(int64_t g, int64_t p, int64_t ob, int64_t b, bool last, const float* v,
            float* mb) const {
    float* c = mb + (p * tc_ + b * kRows) * ms_ + ob * kCols;
#if defined(__x86_64__)
    if (dot_) {
      const int64_t panel = icp_ * 2 * kCols;
      const uint16_t* u = ub_.data() + ((g * F + p) * op_ + ob) * panel;
      const uint16_t* vb = reinterpret_cast<const uint16_t*>(v) + (p * tc_ + b * kRows) * vs_;
      if (last) return wino::gemm_block_bf16<true>(vb, vs_, u, c, ms_, icp_, u + panel);
      return wino::gemm_block_bf16(vb, vs_, u, c, ms_, icp_);
    }
#endif
    const int64_t icg = e_.icg();
    const float* u = u_.data() + ((g * F + p) * op_ + ob) * icg * kCols;
    const float* vf = v + (p * tc_ + b * kRows) * vs_;
    if (last) return wino::gemm_block<true>(vf, vs_, u, c, ms_, icg, u + icg * kCols);
    wino::gemm_block(vf, vs_, u, c, ms_, icg);
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
    const int64_t rows = cb_ * A * wp_ * kLanes;
    for (int64_t k = 0; k < nr; ++k) {
      float* sk = s + k * rows;
      const int64_t ty = (r0 + k) % th_;
      copy_rows((r0 + k) / th_, g, ty, k > 0 && ty > 0 ? sk - rows : nullptr, sk);
      for (int64_t x = 0; x < tw_; ++x)
        for (int64_t cb = 0; cb < cb_; ++cb) {
          const float* d = sk + cb * A * wp_ * kLanes + x * M * kLanes;
          const int64_t at = (k * tw_ + x) * vs_ + cb * kLanes;
          if (dot_)
            wino::input_transform<M>(d, wp_ * kLanes, kLanes, reinterpret_cast<uint16_t*>(v) + at,
                                     tc_ * vs_);
          else
            wino::input_transform<M>(d, wp_ * kLanes, kLanes, v + at, tc_ * vs_);
        }
    }
    // Per position: groups of tiles whose V rows stay in L2 while every filter panel passes.
    const int64_t blocks = (nt + kRows - 1) / kRows;
    const int64_t group = std::max<int64_t>(1, (256 << 10) / (vs_ * 4 * kRows));
    for (int64_t p = 0; p < F; ++p)
      for (int64_t b0 = 0; b0 < blocks; b0 += group)
        for (int64_t ob = 0; ob < op_; ++ob) {
          const int64_t b1 = std::min(blocks, b0 + group);
          for (int64_t b = b0; b < b1; ++b) gemm(g, p, ob, b, b == b1 - 1, v, mb);
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
        else if (post_)  // post-ops as the span goes out (stored, not streamed: it reads r)
          apply_post_ops(post_->at(g * ocg + o, at, ow), ny * ow, 1, y + o * M * ow, ny * ow,
                         out_tensor().data() + at, ny * ow);
        else
          wino::stream_copy(out_tensor().data() + at, y + o * M * ow, ny * ow);
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
  bool dot_ = false;  // F(2x2) in bf16: V and U in bf16 (ub_), channel pairs icp_
  int64_t icp_ = 0;
  Tensor u_;
  std::vector<uint16_t> ub_;
  // Per thread: source rows, transformed inputs, GEMM products, one tile row of output.
  std::vector<Tensor> s_, v_, m_, y_;
  wino::BwdWeights<M> bwd_w_;
  const PostOps* post_ = nullptr;  // set_post_ops
};

}  // namespace

std::unique_ptr<ConvImpl> make_conv_winograd_f2() {
  return std::make_unique<WinogradConv<2>>();
}
std::unique_ptr<ConvImpl> make_conv_winograd_f4() {
  return std::make_unique<WinogradConv<4>>();
}

}  // namespace pb
