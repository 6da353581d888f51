// The activation registry: one line per implementation.
#include "kernels/act/act.h"
#include "kernels/availability.h"

namespace pb {

const Registry<ActDesc>& act_registry() {
  static const Registry<ActDesc> r = {
      {"cpu/native", make_act_cpu_native},
      {"ocl/native", PB_OPENCL_FACTORY(make_act_ocl_native), opencl_unavailable},
      {"onednn/auto", PB_ONEDNN_FACTORY(make_act_onednn), onednn_unavailable},
  };
  return r;
}

}  // namespace pb
