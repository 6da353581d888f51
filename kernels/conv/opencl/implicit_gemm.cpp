// ocl/implicit_gemm: convolution as a GEMM whose source tiles are gathered on the fly
// (implicit_gemm.cl): no im2col workspace, one launch over images x groups. Any shape.
#include <vector>

#include "kernels/conv/opencl/ocl_conv.h"

namespace pb {
namespace {

// Tunables of implicit_gemm.cl (its micro-kernel is gemm/tiled.cl's).
struct ImplicitParams {
  int tsm = 64, tsn = 64, tsk = 32, wptm = 32, wptn = 8, vw = 16;
  int rtsm() const { return tsm / wptm; }
  int rtsn() const { return tsn / wptn; }
  std::string options() const {
    return "-cl-mad-enable -DTSM=" + std::to_string(tsm) + " -DTSN=" + std::to_string(tsn) +
           " -DTSK=" + std::to_string(tsk) + " -DWPTM=" + std::to_string(wptm) +
           " -DWPTN=" + std::to_string(wptn) + " -DVW=" + std::to_string(vw);
  }
};

class ConvOclImplicitGemm : public OclConv {
 public:
  std::string name() const override { return "ocl/implicit_gemm"; }

 protected:
  void prepare_fwd() override {
    const ConvDesc& d = d_;
    wei_ = ocl::Buffer::shared(wraw_.get());  // read as goihw
    const int64_t K = d.icg() * d.kh * d.kw;
    std::vector<cl_int> tab(static_cast<size_t>(3 * K));
    for (int64_t c = 0; c < d.icg(); ++c)
      for (int64_t r = 0; r < d.kh; ++r)
        for (int64_t t = 0; t < d.kw; ++t) {
          const int64_t k = (c * d.kh + r) * d.kw + t, dy = r * (d.dh + 1), dx = t * (d.dw + 1);
          tab[3 * k] = static_cast<cl_int>(c * d.ih * d.iw + dy * d.iw + dx);
          tab[3 * k + 1] = static_cast<cl_int>(dy);
          tab[3 * k + 2] = static_cast<cl_int>(dx);
        }
    ktab_ = ocl::Buffer(tab.size() * sizeof(cl_int), CL_MEM_READ_ONLY);
    ktab_.upload(tab.data(), ktab_.bytes());
    cl_program prog = program("conv/implicit_gemm.cl", p_.options());
    const int64_t P = d.oh * d.ow;
    size_t global[3] = {ocl::round_up(P, p_.tsm) / p_.tsm * p_.rtsm(),
                        ocl::round_up(d.ocg(), p_.tsn) / p_.tsn * p_.rtsn(),
                        static_cast<size_t>(d.mb * d.g)};
    size_t local[3] = {static_cast<size_t>(p_.rtsm()), static_cast<size_t>(p_.rtsn()), 1};
    auto i = [](int64_t v) { return static_cast<cl_int>(v); };
    add_step(prog, "conv_implicit_gemm", 3, global, local)
        .set_args(src_, wei_, dst_, ktab_, i(K), i(d.g), i(d.icg()), i(d.ocg()), i(d.ih), i(d.iw),
                  i(d.oh), i(d.ow), i(d.sh), i(d.sw), i(d.ph), i(d.pw));
  }

 private:
  ImplicitParams p_;
  ocl::Buffer ktab_;
};

}  // namespace

std::unique_ptr<ConvImpl> make_conv_ocl_implicit_gemm() {
  return std::make_unique<ConvOclImplicitGemm>();
}

}  // namespace pb
