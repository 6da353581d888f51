// Naive GEMM reference: fp64 accumulation, no BLAS, column-major BLAS semantics.
#pragma once

#include "kernels/core/tensor.h"
#include "kernels/gemm/desc.h"

namespace pb::ref {

// The whole C (ldc x n, padding rows copied from the input C) in fp64.
Tensor64 gemm(const GemmDesc& d, const Tensor& a, const Tensor& b, const Tensor& c);
// One element C(i, j).
double gemm_at(const GemmDesc& d, const Tensor& a, const Tensor& b, const Tensor& c, int64_t i,
               int64_t j);

}  // namespace pb::ref
