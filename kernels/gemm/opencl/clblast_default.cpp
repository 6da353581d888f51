// ocl/clblast_default: CLBlast's SGEMM on the parameters of its own database for the device, as an
// untuned install runs it (ocl/clblast is the same GEMM tuned for the device; see clblast.cpp).
#include "kernels/gemm/opencl/clblast_tuning.h"

namespace pb {

std::unique_ptr<GemmImpl> make_gemm_clblast_default() {
  return clblast_tuning::make_gemm(false);
}

}  // namespace pb
