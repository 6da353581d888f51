// ocl/direct: direct convolution on OpenCL (direct.cl), register-blocked over 16 output channels
// x one explicit float8/float16 vector of output columns per work-item. Any shape.
// Measured on PoCL 3.1 (2-core Zen 4): relying on PoCL's implicit vectorisation across
// work-items (one output pixel per work-item) ran at ~4 GFLOP/s; explicit vectors ~29.
#include <cstring>
#include <sstream>

#include "kernels/conv/opencl/ocl_conv.h"

namespace pb {
namespace {

// Tunables of direct.cl.
struct DirectParams {
  int ocb = 16, vw = 16, wx = 1, wy = 4;
  // The vector width (8 or 16 output columns) that wastes fewer lanes on rows of `ow`.
  static int pick_vw(int64_t ow) { return (ow + 15) / 16 * 16 <= (ow + 7) / 8 * 8 ? 16 : 8; }
  std::string options() const {
    std::ostringstream o;
    o << "-cl-mad-enable -DOCB=" << ocb << " -DVW=" << vw << " -DWX=" << wx << " -DWY=" << wy;
    return o.str();
  }
};

class ConvOclDirect : public OclConv {
 public:
  std::string name() const override { return "ocl/direct"; }

 protected:
  void prepare_fwd(const Tensor& wei) override {
    const ConvDesc& d = d_;
    const int64_t ocgp = ocl_round_up(d.ocg(), p_.ocb), ksz = d.icg() * d.kh * d.kw;
    // Weights padded to ocgp channels per group with zeros.
    std::vector<float> w(static_cast<size_t>(d.g * ocgp * ksz), 0.0f);
    for (int64_t gi = 0; gi < d.g; ++gi)
      std::memcpy(&w[gi * ocgp * ksz], wei.data() + gi * d.ocg() * ksz,
                  sizeof(float) * d.ocg() * ksz);
    wei_ = ocl::Buffer(w.size() * sizeof(float), CL_MEM_READ_ONLY);
    wei_.upload(w.data(), wei_.bytes());
    p_.vw = DirectParams::pick_vw(d.ow);
    cl_program prog = program("conv/direct.cl", p_.options());
    size_t global[3] = {static_cast<size_t>((d.ow + p_.vw - 1) / p_.vw), static_cast<size_t>(d.oh),
                        static_cast<size_t>(d.mb * d.g * ocgp / p_.ocb)};
    size_t local[3] = {static_cast<size_t>(p_.wx), static_cast<size_t>(p_.wy), 1};
    ocl::Kernel& k = add_step(prog, "conv_direct", 3, global, local);
    auto i = [](int64_t v) { return static_cast<cl_int>(v); };
    k.set_args(src_, wei_, dst_, i(d.g), i(d.icg()), i(d.ocg()), i(ocgp), i(d.ih), i(d.iw), i(d.oh),
               i(d.ow), i(d.kh), i(d.kw), i(d.sh), i(d.sw), i(d.ph), i(d.pw), i(d.dh + 1),
               i(d.dw + 1));
  }

 private:
  DirectParams p_;
};

}  // namespace

std::unique_ptr<ConvImpl> make_conv_ocl_direct() {
  return std::make_unique<ConvOclDirect>();
}

}  // namespace pb
