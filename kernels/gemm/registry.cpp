// The GEMM registry: one line per implementation. Tests, benchmarks and the CLI iterate it.
#include "kernels/availability.h"
#include "kernels/gemm/cpu/sgemm.h"
#include "kernels/gemm/gemm.h"

namespace pb {

const Registry<GemmDesc>& gemm_registry() {
  static const Registry<GemmDesc> r = {
      {"cpu/openblas", make_gemm_openblas},
      {"cpu/packed", make_gemm_packed},
      {"cpu/blis", make_gemm_blis, blis_unavailable},
      {"cpu/transpose_nn", make_gemm_transpose_nn},
      {"ocl/clblast", PB_OPENCL_FACTORY(make_gemm_clblast), opencl_unavailable},
      {"ocl/clblast_default", PB_OPENCL_FACTORY(make_gemm_clblast_default), opencl_unavailable},
      {"ocl/tiled", PB_OPENCL_FACTORY(make_gemm_ocl_tiled), opencl_unavailable},
      {"onednn/matmul", PB_ONEDNN_FACTORY(make_gemm_onednn_matmul), onednn_unavailable},
      {"onednn/sgemm", PB_ONEDNN_FACTORY(make_gemm_onednn_sgemm), onednn_unavailable},
  };
  return r;
}

}  // namespace pb
