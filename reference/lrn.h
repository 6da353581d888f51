// Naive LRN reference across channels, fp64, forward and backward (see kernels/lrn/desc.h).
//   scale[c] = k + alpha/ls * sum over the window W(c) of src[c']^2,  dst[c] = src[c] *
//   scale[c]^-beta diff_src[c] = diff_dst[c] * scale[c]^-beta
//               - 2 alpha beta / ls * src[c] * sum over the c' whose window holds c of
//                 diff_dst[c'] * src[c'] * scale[c']^(-beta-1)
#pragma once

#include "kernels/core/tensor.h"
#include "kernels/lrn/desc.h"

namespace pb::ref {

Tensor64 lrn_fwd(const LrnDesc& d, const Tensor& src);
double lrn_fwd_at(const LrnDesc& d, const Tensor& src, int64_t index);
Tensor64 lrn_bwd(const LrnDesc& d, const Tensor& src, const Tensor& diff_dst);
double lrn_bwd_at(const LrnDesc& d, const Tensor& src, const Tensor& diff_dst, int64_t index);

}  // namespace pb::ref
