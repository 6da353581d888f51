// ocl/im2col: im2col.cl unrolls a chunk of images, then one batched launch of our gemm/tiled.cl
// (over images x groups) multiplies by the weights; a 1x1 stride-1 unpadded convolution
// multiplies the source directly. bwd_d: GEMM with the transposed weights, then col2im; bwd_w:
// transposed im2col + GEMM per chunk of images (im2col_bwd.cl). CLBlast is not used: on PoCL
// our tiled SGEMM is ~10x faster.
#include <algorithm>
#include <vector>

#include "kernels/conv/opencl/ocl_conv.h"

namespace pb {
namespace {

// 1x1, stride 1, no padding: an image is its own column matrix.
bool pointwise(const ConvDesc& d) {
  return d.kh == 1 && d.kw == 1 && d.sh == 1 && d.sw == 1 && d.ph == 0 && d.pw == 0 &&
         d.pad_b() == 0 && d.pad_r() == 0;
}

// The geometry arguments shared by the copy kernels (ih .. dw, dilation as a step).
template <class... A>
void set_geometry(ocl::Kernel& k, const ConvDesc& d, const A&... before) {
  auto i = [](int64_t v) { return static_cast<cl_int>(v); };
  k.set_args(before..., i(d.ih), i(d.iw), i(d.oh), i(d.ow), i(d.kh), i(d.kw), i(d.sh), i(d.sw),
             i(d.ph), i(d.pw), i(d.dh + 1), i(d.dw + 1));
}

class ConvOclIm2col : public OclConv {
 public:
  std::string name() const override { return "ocl/im2col"; }

 protected:
  Support supports_bwd_d(const ConvDesc&) const override { return Support::yes(); }
  Support supports_bwd_w(const ConvDesc&) const override { return Support::yes(); }

  void prepare_fwd() override {
    const ConvDesc& d = d_;
    wei_ = ocl::Buffer::shared(wraw_.get());  // the GEMM reads goihw as it is
    const int64_t P = d.oh * d.ow, K = d.icg() * d.kh * d.kw;
    GemmArgs g{P, d.ocg(),     K,   &src_, 0, P, K * P,       &wei_,     0,
               K, d.ocg() * K, d.g, &dst_, 0, P, d.ocg() * P, d.mb * d.g};
    if (pointwise(d)) {  // src is already the column matrix: (icg x P) per image and group
      add_gemm(g);
      return;
    }
    const size_t per_image = static_cast<size_t>(d.g * K * P) * sizeof(float);
    const int64_t nb = std::clamp<int64_t>(kOclConvWorkspaceCap / per_image, 1, d.mb);
    col_ = workspace(per_image * nb);
    cl_program prog = program("conv/im2col.cl", "-DWX=16 -DWY=4");
    for (int64_t n0 = 0; n0 < d.mb; n0 += nb) {
      const int64_t cnt = std::min(nb, d.mb - n0);
      size_t global[3] = {static_cast<size_t>(d.ow), static_cast<size_t>(d.oh),
                          static_cast<size_t>(cnt * d.ic)};
      size_t local[3] = {16, 4, 1};
      set_geometry(add_step(prog, "im2col", 3, global, local), d, src_,
                   static_cast<cl_long>(n0 * d.ic * d.ih * d.iw), col_);
      g.a = &col_;
      g.c_off = n0 * d.oc * P;
      g.batch = cnt * d.g;
      add_gemm(g);
    }
  }

  // Per chunk of images: col (P x K per image and group) = diff_dst (P x ocg) x W_g^T, the
  // weights transposed on the device to ocg x K; then col2im. Pointwise: the GEMM writes
  // diff_src.
  void prepare_bwd_d() override {
    const ConvDesc& d = d_;
    const int64_t P = d.oh * d.ow, kk = d.kh * d.kw, K = d.icg() * kk, ocg = d.ocg();
    wei_ = ocl::Buffer(static_cast<size_t>(d.wei_size()) * sizeof(float));
    FilterMap m = copy_map(ocg);  // W_g^T[(c kk + t) ocg + o] = w[o][c][t]
    m.sg = K * ocg;
    m.dense = true;  // a transpose
    for (int64_t o = 0; o < ocg; ++o) m.ooff.push_back(o);
    for (int64_t c = 0; c < d.icg(); ++c) m.coff.push_back(c * kk * ocg);
    add_filter_map(m, wei_);
    GemmArgs g{P,   K,       ocg, &diff_dst_, 0, P, ocg * P, &wei_,     0,
               ocg, ocg * K, d.g, &diff_src_, 0, P, K * P,   d.mb * d.g};
    if (pointwise(d)) return add_gemm(g);
    const size_t per_image = static_cast<size_t>(d.g * K * P) * sizeof(float);
    const int64_t nb = std::clamp<int64_t>(kOclConvWorkspaceCap / per_image, 1, d.mb);
    col_ = workspace(per_image * nb);
    cl_program prog = program("conv/im2col_bwd.cl", "-DWX=16 -DWY=4");
    for (int64_t n0 = 0; n0 < d.mb; n0 += nb) {
      const int64_t cnt = std::min(nb, d.mb - n0);
      g.a_off = n0 * d.oc * P;
      g.c = &col_;
      g.batch = cnt * d.g;
      add_gemm(g);
      size_t global[3] = {static_cast<size_t>(d.iw), static_cast<size_t>(d.ih),
                          static_cast<size_t>(cnt * d.ic)};
      size_t local[3] = {16, 4, 1};
      set_geometry(add_step(prog, "col2im", 3, global, local), d, col_, diff_src_,
                   static_cast<cl_long>(n0 * d.ic * d.ih * d.iw));
    }
  }

  // diff_wei_g (K x ocg) = colT (K x nb*P) x diff_dst (nb*P x ocg) per chunk of nb images and
  // group. A pass takes `slots` chunks at once, each into its own partial gradient (chunk j of
  // the batch adds into slot j % slots: beta 1 after the first pass), summed in order at the end;
  // with one slot the GEMMs accumulate into diff_wei directly.
  void prepare_bwd_w() override {
    const ConvDesc& d = d_;
    const int64_t P = d.oh * d.ow, K = d.icg() * d.kh * d.kw, ocg = d.ocg(), wsize = d.wei_size();
    constexpr int64_t kTargetK = 1024;  // GEMM depth per chunk worth the launch
    constexpr int64_t kMinGroups = 8;   // GEMM work-groups per pass that keep 2+ cores busy
    const int64_t chunks0 =
        (d.mb + std::max<int64_t>(1, kTargetK / P) - 1) / std::max<int64_t>(1, kTargetK / P);
    int64_t nb = (d.mb + chunks0 - 1) / chunks0;  // images per chunk, evenly spread
    const TiledParams tp = TiledParams::from_env();
    const int64_t groups =
        ocl::round_up(K, tp.tsm) / tp.tsm * (ocl::round_up(ocg, tp.tsn) / tp.tsn) * d.g;
    const int64_t chunks = (d.mb + nb - 1) / nb;
    int64_t slots = std::clamp<int64_t>((kMinGroups + groups - 1) / groups, 1, chunks);
    const bool gather = nb > 1;
    auto pass_bytes = [&](int64_t s) {
      return static_cast<size_t>(s * nb * P * (d.g * K + (gather ? d.oc : 0))) * sizeof(float);
    };
    while (slots > 1 && pass_bytes(slots) > kOclConvWorkspaceCap) --slots;
    colt_ = workspace(static_cast<size_t>(slots * nb * d.g * K * P) * sizeof(float));
    if (gather) ddg_ = workspace(static_cast<size_t>(slots * nb * d.oc * P) * sizeof(float));
    if (slots > 1) part_ = workspace(static_cast<size_t>(slots * wsize) * sizeof(float));
    const ocl::Buffer& out = slots > 1 ? part_ : diff_wei_;
    cl_program prog = program("conv/im2col_bwd.cl", "-DWX=16 -DWY=4");
    auto i = [](int64_t v) { return static_cast<cl_int>(v); };
    for (int64_t c0 = 0, pass = 0; c0 < chunks; c0 += slots, ++pass) {
      const int64_t n0 = c0 * nb, cnt = std::min(slots * nb, d.mb - n0);
      size_t global[3] = {static_cast<size_t>(d.ow), static_cast<size_t>(d.oh),
                          static_cast<size_t>(cnt * d.g)};
      size_t local[3] = {16, 4, 1};
      ocl::Kernel& k = add_step(prog, "im2col_t", 3, global, local);
      set_geometry(k, d, src_, i(n0), colt_, i(nb), i(d.g), i(d.icg()));
      if (gather) {
        size_t gg[3] = {static_cast<size_t>((P + 7) / 8), static_cast<size_t>(ocg),
                        static_cast<size_t>(cnt * d.g)};
        size_t gl[3] = {16, 1, 1};
        add_step(prog, "gather_dd", 3, gg, gl)
            .set_args(diff_dst_, i(n0), ddg_, i(nb), i(d.g), i(ocg), i(P));
      }
      // Whole chunks in one launch, a ragged last chunk in its own (another GEMM depth).
      const int64_t full = cnt / nb, rest = cnt % nb;
      const float beta = pass == 0 ? 0.0f : 1.0f;
      const int64_t bstride = gather ? ocg * nb * P : ocg * P;
      auto gemm = [&](int64_t first, int64_t nchunk, int64_t kdepth) {
        GemmArgs g{K,
                   ocg,
                   kdepth,
                   &colt_,
                   first * d.g * nb * P * K,
                   K,
                   nb * P * K,
                   gather ? &ddg_ : &diff_dst_,
                   first * d.g * bstride + (gather ? 0 : n0 * d.oc * P),
                   gather ? nb * P : P,
                   bstride,
                   nchunk * d.g,
                   &out,
                   first * wsize,
                   K,
                   ocg * K,
                   nchunk * d.g,
                   beta};
        add_gemm(g);
      };
      if (full > 0) gemm(0, full, nb * P);
      if (rest > 0) gemm(full, 1, rest * P);
    }
    if (slots > 1) add_sum_partials(part_, slots, wsize, diff_wei_);
  }

 private:
  ocl::Buffer col_, colt_, ddg_, part_;
};

}  // namespace

std::unique_ptr<ConvImpl> make_conv_ocl_im2col() {
  return std::make_unique<ConvOclIm2col>();
}

}  // namespace pb
