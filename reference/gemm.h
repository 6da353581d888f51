// Naive GEMM reference: fp64 accumulation, no BLAS, column-major BLAS semantics, every data type
// of desc.h (the inputs hold values exact in their type; the output conversion is applied).
#pragma once

#include <vector>

#include "kernels/core/tensor.h"
#include "kernels/gemm/desc.h"

namespace pb::ref {

// `in`: A, B, C and, for dt u8s8, a_scale (m), b_scale, b_zero, c_scale (one value each), as
// GemmTraits::make_inputs orders them. The whole C (ldc x n, padding rows copied from the input
// C) in fp64.
Tensor64 gemm(const GemmDesc& d, const std::vector<const Tensor*>& in);
// One element C(i, j).
double gemm_at(const GemmDesc& d, const std::vector<const Tensor*>& in, int64_t i, int64_t j);

}  // namespace pb::ref
