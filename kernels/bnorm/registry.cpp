// The batch-norm registry: one line per implementation.
#include "kernels/availability.h"
#include "kernels/bnorm/bnorm.h"

namespace pb {

const Registry<BnormDesc>& bnorm_registry() {
  static const Registry<BnormDesc> r = {
      {"cpu/native", make_bnorm_cpu_native},
      {"ocl/native", PB_OPENCL_FACTORY(make_bnorm_ocl_native), opencl_unavailable},
      {"onednn/auto", PB_ONEDNN_FACTORY(make_bnorm_onednn), onednn_unavailable},
  };
  return r;
}

}  // namespace pb
