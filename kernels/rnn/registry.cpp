// The RNN registry: one line per implementation. Tests, benchmarks and the CLI iterate it.
#include "kernels/availability.h"
#include "kernels/rnn/rnn.h"

namespace pb {

const Registry<RnnDesc>& rnn_registry() {
  static const Registry<RnnDesc> r = {
      {"cpu/blas", make_rnn_cpu_blas},
      {"ocl/blas", PB_OPENCL_FACTORY(make_rnn_ocl_blas), opencl_unavailable},
      {"onednn/auto", PB_ONEDNN_FACTORY(make_rnn_onednn), onednn_unavailable},
  };
  return r;
}

}  // namespace pb
