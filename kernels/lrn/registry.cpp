// The LRN registry: one line per implementation. Tests, benchmarks and the CLI iterate it.
#include "kernels/availability.h"
#include "kernels/lrn/lrn.h"

namespace pb {

const Registry<LrnDesc>& lrn_registry() {
  static const Registry<LrnDesc> r = {
      {"cpu/native", make_lrn_cpu_native},
      {"ocl/native", PB_OPENCL_FACTORY(make_lrn_ocl_native), opencl_unavailable},
      {"onednn/auto", PB_ONEDNN_FACTORY(make_lrn_onednn), onednn_unavailable},
  };
  return r;
}

}  // namespace pb
