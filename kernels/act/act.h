// Activations: the implementation interface, the registry and the factories. NCHW fp32.
//   relu, sigmoid, tanh:  fwd {src} -> {dst};  bwd {src, diff_dst} -> {diff_src}.
//   softmax (over ic):    fwd {src} -> {dst};  bwd {dst, diff_dst} -> {diff_src}
//                         (diff_src = dst * (diff_dst - sum_c diff_dst * dst)).
//   xent (softmax + cross-entropy, labels are class indices stored as floats, mb x ih x iw):
//                         fwd {src, labels} -> {dst (probabilities), loss (-log p[label] per
//                         position)};  bwd {src, labels} -> {diff_src = softmax(src) -
//                         onehot(label)}, the gradient of the summed loss.
// Softmax is computed as exp(x - max) / sum exp(x - max): stable for large logits.
#pragma once

#include <memory>
#include <string>

#include "kernels/act/desc.h"
#include "kernels/core/impl.h"
#include "kernels/core/problem.h"

namespace pb {

using ActImpl = Impl<ActDesc>;

const Registry<ActDesc>& act_registry();
PrimitiveInfo act_primitive();
// Benchmark-name prefix: relu_fwd, sigmoid_bwd, softmax_fwd, softmax_xent_bwd, ...
std::string act_bench_prefix(const ActDesc& d, Dir dir);

std::unique_ptr<ActImpl> make_act_cpu_native();
std::unique_ptr<ActImpl> make_act_ocl_native();
std::unique_ptr<ActImpl> make_act_onednn();

}  // namespace pb
