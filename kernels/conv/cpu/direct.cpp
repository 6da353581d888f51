// cpu/direct: our direct convolution. SIMD over 16 or 32 output channels (weights repacked in
// prepare to [g][oc-block][icg][kh][kw][16V]), register tiles of J output columns x 16V output
// channels, OpenMP over (image, group, oc-block, output row), a contiguous range of rows per
// thread. run() first copies the input (timed) to [n][ih][ic][padded row], each row split into
// stride phases: the inner loop then reads unit-stride rows with no edge tests, and a tile's
// channels lie close together in memory (as in a blocked layout). Rows outside the image are
// skipped. bwd_d and bwd_w are dispatched to direct_bwd_data.cpp and direct_bwd_weights.cpp, the
// reduced types' forward to direct_lowp.cpp.
#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "kernels/conv/cpu/direct_common.h"
#include "kernels/conv/cpu/host_conv.h"
#include "kernels/conv/cpu/im2col_cols.h"  // copy_strided

namespace pb {

namespace {

using direct::Plan;
using direct::store_tile;
using direct::tap;
using direct::vf;

// J output columns (from ox0) x 16V output channels of output row oy, summed over the group's
// icg input channels and the kernel window. `in` is the group's first input channel plane, `w`
// the oc-block's repacked weights; the tile is written to out[J][16V].
template <int J, int V>
void tile(const Plan& p, const float* in, const float* w, int64_t oy, int64_t ox0, float* out) {
  constexpr int NV = V * direct::kVec16;
  vf acc[J][NV];
  for (int j = 0; j < J; ++j)
    for (int v = 0; v < NV; ++v) acc[j][v] = vf{};
  const int64_t* koff = p.koff.data();
  const int64_t wstep = 16 * V;
  for (int64_t c = 0; c < p.icg; ++c) {
    const float* plane = in + c * p.cstride;
    for (int64_t ky = 0; ky < p.kh; ++ky) {
      const int64_t iy = oy * p.sh - p.ph + ky * p.dh1;
      if (iy < 0 || iy >= p.ih) continue;
      const float* row = plane + iy * p.row_stride + ox0;
      const float* wk = w + (c * p.kh + ky) * p.kw * wstep;
      for (int64_t kx = 0; kx < p.kw; ++kx) {
        const float* x = row + koff[kx];
        tap(acc, x, wk + kx * wstep);
      }
    }
  }
  store_tile(out, wstep, acc);
}

using direct::kMaxJ;
using TileFn = void (*)(const Plan&, const float*, const float*, int64_t, int64_t, float*);

template <int V, size_t... I>
constexpr std::array<TileFn, sizeof...(I)> tiles(std::index_sequence<I...>) {
  return {&tile<static_cast<int>(I) + 1, V>...};
}
const std::array<TileFn, kMaxJ> kTiles1 = tiles<1>(std::make_index_sequence<kMaxJ>());
const std::array<TileFn, kMaxJ> kTiles2 = tiles<2>(std::make_index_sequence<kMaxJ>());

class DirectConv : public HostConv {
 public:
  std::string name() const override { return "cpu/direct"; }
  size_t workspace_bytes() const override {
    return (wp_.size() + in_.size()) * sizeof(float) + bwd_d_.workspace_bytes() +
           bwd_w_.workspace_bytes() + lowp_.workspace_bytes() + wei_typed_.size();
  }

 protected:
  Support supports_fwd(const ConvDesc& d) const override {
    if (d.kh > 11 || d.kw > 11) return Support::no("cpu/direct handles kernels up to 11x11");
    return Support::yes();
  }
  Support supports_bwd_d(const ConvDesc& d) const override { return supports_fwd(d); }
  Support supports_bwd_w(const ConvDesc& d) const override { return supports_fwd(d); }
  std::string dt_unsupported(const ConvDesc& d, Dir dir) const override {
    const std::string why = direct::LowpFwd::unsupported(d);
    if (!why.empty()) return why;
    if (dir != Dir::fwd) return "cpu/direct runs dt=" + d.dt.str() + " fwd only";
    return "";
  }

  void prepare_more() override {
    post_ = nullptr;
    lowp_.set_post_ops(nullptr);
    const ConvDesc& d = d_;
    if (typed()) return lowp_.prepare(d, q_);
    if (dir_ == Dir::bwd_d) return bwd_d_.plan(d);  // weights() repacks the weights into it
    if (dir_ == Dir::bwd_w) return bwd_w_.prepare(d);
    // 32 channels per tile unless 16 divides the group's channels and 32 does not.
    v_ = direct::pick_v_f32(d.ocg());
    nb_ = (d.ocg() + 16 * v_ - 1) / (16 * v_);
    j_ = direct::pick_j_f32(d.ow, v_, direct::max_j(v_));
    plan_ = direct::make_plan(d, 1);
    in_ = Tensor({d.mb * d.ih * plan_.row_stride});  // zeroed: the padding stays 0
    // Zeroed: the channels past the group's in the last block stay 0 (weights() fills the rest).
    wp_ = Tensor({d.g * nb_ * d.icg() * d.kh * d.kw * 16 * v_});
  }

  // The weights repacked (the plan and the padded input depend on the shape only).
  void weights() override {
    if (typed()) {
      typed_weights(&wei_typed_);
      return lowp_.repack(wei_typed_.data());
    }
    if (dir_ == Dir::fwd) direct::repack_blocked(d_, wei_->data(), true, 16 * v_, nb_, wp_.data());
    if (dir_ == Dir::bwd_d) bwd_d_.repack(*wei_);
  }

  void run_dir() override {
    if (typed()) return lowp_.run(out_data());
    if (dir_ == Dir::bwd_d) return bwd_d_.run(*diff_dst_, dst_);
    if (dir_ == Dir::bwd_w) return bwd_w_.run(*src_, *diff_dst_, dst_);
    const ConvDesc& d = d_;
    const float* in = in_.data();  // reorder_in() made the padded, phase-split copy
    const TileFn fn = (v_ == 2 ? kTiles2 : kTiles1)[j_ - 1];
    const int64_t wblock = d.icg() * d.kh * d.kw * 16 * v_;
    direct::for_tiles(
        d, nb_, j_, [&](int64_t n, int64_t gi, int64_t b, int64_t oy, int64_t ox0, float* buf) {
          const float* plane = in + n * d.ih * plan_.row_stride + gi * d.icg() * plan_.cstride;
          fn(plan_, plane, wp_.data() + (gi * nb_ + b) * wblock, oy, ox0, buf);
          const int64_t oc0 = b * 16 * v_, noc = std::min<int64_t>(16 * v_, d.ocg() - oc0);
          const int64_t at = ((n * d.oc + gi * d.ocg() + oc0) * d.oh + oy) * d.ow + ox0;
          if (post_)
            direct::scatter_tile_post(buf, 16 * v_, noc, j_,
                                      post_->at(gi * d.ocg() + oc0, at, d.oh * d.ow),
                                      out_tensor().data() + at, d.oh * d.ow);
          else
            direct::scatter_tile(buf, 16 * v_, noc, j_, out_tensor().data() + at, d.oh * d.ow);
        });
  }

  // Applied to each tile as it is scattered from the tile buffer, in fp32 and in a reduced type
  // (direct_lowp.cpp's tiles, scattered the same way).
  bool takes_post_ops() const override { return true; }
  void use_post_ops(const PostOps* p) override {
    if (typed())
      lowp_.set_post_ops(p);
    else
      post_ = p;
  }

 private:
  // The forward's own input layout: a padded, phase-split copy of every row to [n][ih][ic][row]
  // (padding stays zero), timed by the layer contract, not by the kernel contract.
  void reorder_in() override {
    if (typed()) return lowp_.copy_input(src_typed());
    if (dir_ == Dir::fwd) copy_input();
  }
  void copy_input() {
    const ConvDesc& d = d_;
    const int64_t rows = d.mb * d.ic * d.ih, sw = d.sw, pl = plan_.phase_len;
    const float* s = src_->data();
    float* o = in_.data();
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {  // r = (n * ic + c) * ih + iy
      const int64_t iy = r % d.ih, c = (r / d.ih) % d.ic, n = r / (d.ih * d.ic);
      const float* sr = s + r * d.iw;
      float* orow = o + (n * d.ih + iy) * plan_.row_stride + c * plan_.cstride;
      if (sw == 1) {
        std::memcpy(orow + d.pw, sr, d.iw * sizeof(float));
      } else {
        // Phase ph holds the padded columns xp = q * sw + ph, source column xp - pw: a strided
        // copy each (element by element, with a division each, this took 3.5 of AlexNet conv1's
        // 15 ms).
        for (int64_t ph = 0; ph < sw; ++ph) {
          const int64_t q0 = d.pw > ph ? (d.pw - ph + sw - 1) / sw : 0;
          const int64_t q1 = std::min(pl, (d.iw + d.pw - ph + sw - 1) / sw);
          if (q1 > q0)
            im2col::copy_strided(orow + ph * pl + q0, sr + q0 * sw + ph - d.pw, q1 - q0, sw);
        }
      }
    }
  }

  Plan plan_;
  int v_ = 1, j_ = 1;
  int64_t nb_ = 1;
  // 64-byte aligned (a std::vector's 16: a weight vector then straddled two cache lines).
  Tensor wp_, in_;
  direct::BwdData bwd_d_;
  direct::BwdWeights bwd_w_;
  direct::LowpFwd lowp_;
  std::vector<uint8_t> wei_typed_;
  const PostOps* post_ = nullptr;  // set_post_ops
};

}  // namespace

std::unique_ptr<ConvImpl> make_conv_direct() {
  return std::make_unique<DirectConv>();
}

}  // namespace pb
