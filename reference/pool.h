// Naive pooling reference: fp64 accumulation, every algorithm, forward and backward.
// Max pooling takes the first maximum in the window's row-major scan order (ties included),
// padding never wins; avgp divides by kh*kw, avgnp by the number of image elements in the window.
#pragma once

#include "kernels/core/tensor.h"
#include "kernels/pool/desc.h"

namespace pb::ref {

// dst (mb x ic x oh x ow).
Tensor64 pool_fwd(const PoolDesc& d, const Tensor& src);
double pool_fwd_at(const PoolDesc& d, const Tensor& src, int64_t dst_index);
// diff_src (mb x ic x ih x iw) from diff_dst; max pooling re-derives the argmax from src.
Tensor64 pool_bwd(const PoolDesc& d, const Tensor& src, const Tensor& diff_dst);
double pool_bwd_at(const PoolDesc& d, const Tensor& src, const Tensor& diff_dst, int64_t src_index);
// Flat index within the (n, c) plane (r * iw + c) of the window's first maximum.
int64_t pool_argmax(const PoolDesc& d, const float* plane, int64_t oh, int64_t ow);

}  // namespace pb::ref
