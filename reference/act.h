// Naive activation reference in fp64: every function, forward and backward (see act.h).
#pragma once

#include <vector>

#include "kernels/act/desc.h"
#include "kernels/core/tensor.h"

namespace pb::ref {

// Outputs of act.h for `in` (the inputs in act.h's order).
std::vector<Tensor64> act_fwd(const ActDesc& d, const std::vector<const Tensor*>& in);
std::vector<Tensor64> act_bwd(const ActDesc& d, const std::vector<const Tensor*>& in);
// Softmax over the channels of position (n, i) of src, written to p[c] (length ic).
void softmax_at(const ActDesc& d, const Tensor& src, int64_t n, int64_t i, double* p);

}  // namespace pb::ref
