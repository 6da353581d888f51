// Every primitive compiled into primbench, in the order `primbench list` shows them.
#include "kernels/allreduce/allreduce.h"
#include "kernels/core/problem.h"
#include "kernels/gemm/gemm.h"

namespace pb {

const std::vector<PrimitiveInfo>& primitives() {
  static const std::vector<PrimitiveInfo> all = {
      gemm_primitive(),
      allreduce_primitive(),
  };
  return all;
}

}  // namespace pb
