// ocl/winograd_f2 and ocl/winograd_f4: Winograd F(2x2,3x3) / F(4x4,3x3) on OpenCL. Filters are
// transformed on the device (filter_map.cl, fp64 where the device has it); per chunk of images,
// winograd.cl transforms the input tiles, one gemm_tiled_batched launch multiplies over all (group,
// tile position) pairs, and winograd.cl transforms the products back. bwd_d is the same forward
// pass over diff_dst with the filters flipped 180 degrees and input/output channels swapped per
// group.
#include <algorithm>
#include <string>
#include <vector>

#include "kernels/conv/cpu/winograd_transforms.h"
#include "kernels/conv/opencl/ocl_conv.h"

namespace pb {
namespace {

template <int M>
class ConvOclWinograd : public OclConv {
  static constexpr int kA = M + 2, kA2 = kA * kA;
  static constexpr int kWT = 64;  // WT in winograd.cl

 public:
  std::string name() const override { return "ocl/winograd_f" + std::to_string(M); }

 protected:
  Support supports_bwd_d(const ConvDesc& d) const override { return supports_fwd(d); }
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

  void prepare_fwd() override { build(d_, filter_transform(false), src_, dst_); }

  // diff_src = the forward convolution of diff_dst (oc channels, oh x ow) padded by 2 - ph,
  // 2 - pw at the start (the end pads follow from the sizes), stride 1, with the filters
  // w'(gi, c, o, r, t) = w(gi, o, c, 2 - r, 2 - t).
  void prepare_bwd_d() override {
    const ConvDesc& d = d_;
    ConvDesc t = d;
    t.ic = d.oc, t.oc = d.ic, t.ih = d.oh, t.iw = d.ow, t.oh = d.ih, t.ow = d.iw;
    t.ph = d.kh - 1 - d.ph, t.pw = d.kw - 1 - d.pw;
    build(t, filter_transform(true), diff_dst_, diff_src_);
  }

  // U[gi][pos][k][c] = (G w G^T)[pos] of filter (k, c) of group gi, as a filter map of the
  // given weights; `swapped`: of the bwd_d filters w'(gi, c, o) = w(gi, o, c) flipped 180 degrees.
  FilterMap filter_transform(bool swapped) const {
    const ConvDesc& d = d_;
    const int64_t icg = d.icg(), ocg = d.ocg();
    const auto& G = wino::Tables<M>::g;
    FilterMap m;
    m.a = kA2;
    m.sg = kA2 * ocg * icg;
    m.dense = true;  // kA2 positions of ocg x icg filters
    for (int i = 0; i < kA; ++i)
      for (int j = 0; j < kA; ++j) {
        for (int t = 0; t < 9; ++t) {
          const int tap = swapped ? 8 - t : t;  // (G w' G^T) reads w' at t = w at 8 - t
          m.coef.push_back(static_cast<float>(G[i][tap / 3] * G[j][tap % 3]));
        }
        m.aoff.push_back((i * kA + j) * ocg * icg);
      }
    for (int64_t o = 0; o < ocg; ++o) m.ooff.push_back(swapped ? o : o * icg);
    for (int64_t c = 0; c < icg; ++c) m.coff.push_back(swapped ? c * ocg : c);
    return m;
  }

  // The forward pass of `d` from `in` to `out`, its filters transformed by `map`.
  void build(const ConvDesc& d, const FilterMap& map, const ocl::Buffer& in,
             const ocl::Buffer& out) {
    const int64_t icg = d.icg(), ocg = d.ocg();
    wei_ = ocl::Buffer(static_cast<size_t>(d.g * kA2 * ocg * icg) * sizeof(float));
    add_filter_map(map, wei_);

    const int64_t th = (d.oh + M - 1) / M, tw = (d.ow + M - 1) / M, tiles = th * tw;
    const size_t per_image = static_cast<size_t>(kA2 * tiles * std::max(d.ic, d.oc)) * 4;
    const int64_t nb = std::clamp<int64_t>(kOclConvWorkspaceCap / per_image, 1, d.mb);
    v_ = workspace(static_cast<size_t>(kA2 * tiles * d.ic * nb) * 4);
    m_ = workspace(static_cast<size_t>(kA2 * tiles * d.oc * nb) * 4);
    cl_program prog =
        program("conv/winograd.cl", "-DWM=" + std::to_string(M) + " -DWT=" + std::to_string(kWT));
    auto i = [](int64_t v) { return static_cast<cl_int>(v); };
    for (int64_t n0 = 0; n0 < d.mb; n0 += nb) {
      const int64_t T = std::min(nb, d.mb - n0) * tiles;
      size_t local[3] = {kWT, 1, 1};
      size_t gin[3] = {static_cast<size_t>(T), static_cast<size_t>(icg), static_cast<size_t>(d.g)};
      add_step(prog, "wino_input", 3, gin, local)
          .set_args(in, static_cast<cl_long>(n0 * d.ic * d.ih * d.iw), v_, i(T), i(th), i(tw),
                    i(d.ic), i(icg), i(d.ih), i(d.iw), i(d.ph), i(d.pw));
      add_gemm({T, ocg, icg, &v_, 0, T, icg * T, &wei_, 0, icg, ocg * icg, d.g * kA2, &m_, 0, T,
                ocg * T, d.g * kA2});
      size_t gout[3] = {static_cast<size_t>(T), static_cast<size_t>(ocg), static_cast<size_t>(d.g)};
      add_step(prog, "wino_output", 3, gout, local)
          .set_args(m_, out, static_cast<cl_long>(n0 * d.oc * d.oh * d.ow), i(T), i(th), i(tw),
                    i(d.oc), i(ocg), i(d.oh), i(d.ow));
    }
  }

 private:
  ocl::Buffer v_, m_;
};

}  // namespace

std::unique_ptr<ConvImpl> make_conv_ocl_winograd_f2() {
  return std::make_unique<ConvOclWinograd<2>>();
}
std::unique_ptr<ConvImpl> make_conv_ocl_winograd_f4() {
  return std::make_unique<ConvOclWinograd<4>>();
}

}  // namespace pb
