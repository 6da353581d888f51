// ocl/im2col: im2col.cl unrolls a chunk of images, then one batched launch of our gemm/tiled.cl
// (over images x groups) multiplies by the weights; a 1x1 stride-1 unpadded convolution
// multiplies the source directly. CLBlast is not used: on PoCL our tiled SGEMM is ~10x faster.
#include <algorithm>

#include "kernels/conv/opencl/ocl_conv.h"

namespace pb {
namespace {

class ConvOclIm2col : public OclConv {
 public:
  std::string name() const override { return "ocl/im2col"; }

 protected:
  void prepare_fwd(const Tensor& wei) override {
    const ConvDesc& d = d_;
    wei_ = ocl::Buffer(static_cast<size_t>(d.wei_size()) * sizeof(float), CL_MEM_READ_ONLY);
    wei_.upload(wei.data(), wei_.bytes());
    const int64_t P = d.oh * d.ow, K = d.icg() * d.kh * d.kw;
    GemmArgs g{P, d.ocg(),     K,   &src_, 0, P, K * P,       &wei_,     0,
               K, d.ocg() * K, d.g, &dst_, 0, P, d.ocg() * P, d.mb * d.g};
    const bool direct = d.kh == 1 && d.kw == 1 && d.sh == 1 && d.sw == 1 && d.ph == 0 &&
                        d.pw == 0 && d.pad_b() == 0 && d.pad_r() == 0;
    if (direct) {  // src is already the column matrix: (icg x P) per image and group
      add_gemm(g);
      return;
    }
    const size_t per_image = static_cast<size_t>(d.g * K * P) * sizeof(float);
    const int64_t nb = std::clamp<int64_t>(kOclConvWorkspaceCap / per_image, 1, d.mb);
    col_ = workspace(per_image * nb);
    cl_program prog = program("conv/im2col.cl", "-DWX=16 -DWY=4");
    auto i = [](int64_t v) { return static_cast<cl_int>(v); };
    for (int64_t n0 = 0; n0 < d.mb; n0 += nb) {
      const int64_t cnt = std::min(nb, d.mb - n0);
      size_t global[3] = {static_cast<size_t>(d.ow), static_cast<size_t>(d.oh),
                          static_cast<size_t>(cnt * d.ic)};
      size_t local[3] = {16, 4, 1};
      ocl::Kernel& k = add_step(prog, "im2col", 3, global, local);
      k.set_args(src_, static_cast<cl_long>(n0 * d.ic * d.ih * d.iw), col_, i(d.ih), i(d.iw),
                 i(d.oh), i(d.ow), i(d.kh), i(d.kw), i(d.sh), i(d.sw), i(d.ph), i(d.pw),
                 i(d.dh + 1), i(d.dw + 1));
      g.a = &col_;
      g.c_off = n0 * d.oc * P;
      g.batch = cnt * d.g;
      add_gemm(g);
    }
  }

 private:
  ocl::Buffer col_;
};

}  // namespace

std::unique_ptr<ConvImpl> make_conv_ocl_im2col() {
  return std::make_unique<ConvOclIm2col>();
}

}  // namespace pb
