// Every primitive compiled into primbench, in the order `primbench list` shows them.
#include "kernels/act/act.h"
#include "kernels/allreduce/allreduce.h"
#include "kernels/bnorm/bnorm.h"
#include "kernels/conv/conv.h"
#include "kernels/core/problem.h"
#include "kernels/gemm/gemm.h"
#include "kernels/lrn/lrn.h"
#include "kernels/pool/pool.h"
#include "kernels/rnn/rnn.h"

namespace pb {

const std::vector<PrimitiveInfo>& primitives() {
  static const std::vector<PrimitiveInfo> all = {
      gemm_primitive(), pool_primitive(),      bnorm_primitive(), act_primitive(),
      conv_primitive(), allreduce_primitive(), rnn_primitive(),   lrn_primitive(),
  };
  return all;
}

}  // namespace pb
