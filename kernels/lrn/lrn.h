// Local response normalisation across channels: the implementation interface, the registry and
// the factories of every implementation. Inputs and outputs, NCHW fp32:
//   fwd: inputs {src}; outputs {dst}.
//   bwd: inputs {src, diff_dst}; outputs {diff_src}. oneDNN's backward reads the forward's
//        workspace, recorded by forward_state() (untimed); ours recompute the window sums.
#pragma once

#include <memory>

#include "kernels/core/impl.h"
#include "kernels/core/problem.h"
#include "kernels/lrn/desc.h"

namespace pb {

using LrnImpl = Impl<LrnDesc>;

const Registry<LrnDesc>& lrn_registry();
PrimitiveInfo lrn_primitive();

std::unique_ptr<LrnImpl> make_lrn_cpu_native();
std::unique_ptr<LrnImpl> make_lrn_ocl_native();
std::unique_ptr<LrnImpl> make_lrn_onednn();

}  // namespace pb
