// Pooling: the implementation interface, the registry and the factories of every implementation.
// Inputs and outputs, NCHW fp32:
//   fwd: inputs {src (mb x ic x ih x iw)}; outputs {dst (mb x ic x oh x ow)}.
//   bwd: inputs {src, diff_dst}; outputs {diff_src}. Max pooling: forward_state() runs the
//        forward (untimed) to record the argmax workspace from src, and run() only scatters
//        diff_dst through it. Ties: the first maximum in the window's row-major scan order wins.
#pragma once

#include <memory>

#include "kernels/core/impl.h"
#include "kernels/core/problem.h"
#include "kernels/pool/desc.h"

namespace pb {

using PoolImpl = Impl<PoolDesc>;

const Registry<PoolDesc>& pool_registry();
PrimitiveInfo pool_primitive();

std::unique_ptr<PoolImpl> make_pool_cpu_native();
std::unique_ptr<PoolImpl> make_pool_ocl_native();
std::unique_ptr<PoolImpl> make_pool_onednn();

}  // namespace pb
