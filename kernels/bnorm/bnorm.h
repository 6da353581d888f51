// Batch-norm: the implementation interface, the registry and the factories.
// Tensors NCHW fp32; per-channel vectors have ic elements.
//   fwd, training (no inf flag): inputs {src, scale, shift, running_mean, running_var};
//        outputs {dst, mean, var (biased batch variance), running_mean, running_var (updated)}.
//   fwd, inference (inf):        inputs {src, scale, shift, mean, var}; outputs {dst}.
//   bwd:  inputs {src, diff_dst, scale, shift, mean, var}; outputs {diff_src, then diff_scale if
//         the scale flag, then diff_shift if the shift flag}. Training: the gradient through
//         the batch statistics (mean, var are the batch's); inf: through given constants.
//         The fused-ReLU mask is recomputed from src (y > 0).
// scale/shift inputs are always present; without the flag they are ignored (gamma 1, beta 0).
#pragma once

#include <memory>
#include <string>

#include "kernels/bnorm/desc.h"
#include "kernels/core/impl.h"
#include "kernels/core/problem.h"

namespace pb {

using BnormImpl = Impl<BnormDesc>;

const Registry<BnormDesc>& bnorm_registry();
PrimitiveInfo bnorm_primitive();
// Benchmark-name prefix: bnorm_fwd_training, bnorm_fwd_inference, bnorm_bwd; "" (not
// benchmarked) for bwd of an inference descriptor.
std::string bnorm_bench_prefix(const BnormDesc& d, Dir dir);

std::unique_ptr<BnormImpl> make_bnorm_cpu_native();
std::unique_ptr<BnormImpl> make_bnorm_ocl_native();
std::unique_ptr<BnormImpl> make_bnorm_onednn();

}  // namespace pb
