// The convolution registry: one line per implementation (tests, benchmarks and the CLI iterate
// it), and the data types' shared direction limit.
#include "kernels/availability.h"
#include "kernels/conv/conv.h"

namespace pb {

Support dt_direction(const ConvDesc& d, Dir dir) {
  if (d.dt.integer() && dir != Dir::fwd)
    return Support::no("dt " + d.dt.str() + " is inference: conv runs it fwd only");
  return Support::yes();
}

const Registry<ConvDesc>& conv_registry() {
  static const Registry<ConvDesc> r = {
      {"cpu/direct", make_conv_direct},
      {"cpu/im2col", make_conv_im2col},
      {"cpu/winograd_f2", make_conv_winograd_f2},
      {"cpu/winograd_f4", make_conv_winograd_f4},
      {"cpu/fft", make_conv_fft},
      {"ocl/direct", PB_OPENCL_FACTORY(make_conv_ocl_direct), opencl_unavailable},
      {"ocl/im2col", PB_OPENCL_FACTORY(make_conv_ocl_im2col), opencl_unavailable},
      {"ocl/implicit_gemm", PB_OPENCL_FACTORY(make_conv_ocl_implicit_gemm), opencl_unavailable},
      {"ocl/fft", PB_OPENCL_FACTORY(make_conv_ocl_fft), opencl_unavailable},
      {"ocl/winograd_f2", PB_OPENCL_FACTORY(make_conv_ocl_winograd_f2), opencl_unavailable},
      {"ocl/winograd_f4", PB_OPENCL_FACTORY(make_conv_ocl_winograd_f4), opencl_unavailable},
      {"onednn/auto", PB_ONEDNN_FACTORY(make_conv_onednn_auto), onednn_unavailable},
      {"onednn/winograd", PB_ONEDNN_FACTORY(make_conv_onednn_winograd), onednn_unavailable},
  };
  return r;
}

}  // namespace pb
