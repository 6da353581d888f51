// The pooling registry: one line per implementation. Tests, benchmarks and the CLI iterate it.
#include "kernels/availability.h"
#include "kernels/pool/pool.h"

namespace pb {

const Registry<PoolDesc>& pool_registry() {
  static const Registry<PoolDesc> r = {
      {"cpu/native", make_pool_cpu_native},
      {"ocl/native", PB_OPENCL_FACTORY(make_pool_ocl_native), opencl_unavailable},
      {"onednn/auto", PB_ONEDNN_FACTORY(make_pool_onednn), onednn_unavailable},
  };
  return r;
}

}  // namespace pb
