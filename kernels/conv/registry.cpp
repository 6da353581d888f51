// The convolution registry: one line per implementation. Tests, benchmarks and the CLI iterate it.
#include "kernels/availability.h"
#include "kernels/conv/conv.h"

namespace pb {

const Registry<ConvDesc>& conv_registry() {
  static const Registry<ConvDesc> r = {
      {"cpu/direct", make_conv_direct},
      {"cpu/im2col", make_conv_im2col},
      {"cpu/winograd_f2", make_conv_winograd_f2},
      {"cpu/winograd_f4", make_conv_winograd_f4},
      {"cpu/fft", make_conv_fft},
      {"onednn/auto", PB_ONEDNN_FACTORY(make_conv_onednn_auto), onednn_unavailable},
      {"onednn/winograd", PB_ONEDNN_FACTORY(make_conv_onednn_winograd), onednn_unavailable},
  };
  return r;
}

}  // namespace pb
