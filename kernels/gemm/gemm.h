// GEMM: the implementation interface, the registry and the factories of every implementation.
#pragma once

#include <memory>

#include "kernels/core/impl.h"
#include "kernels/core/problem.h"
#include "kernels/gemm/desc.h"

namespace pb {

// Inputs, in this order: A, B, C (C is read when beta != 0). Output: C.
using GemmImpl = Impl<GemmDesc>;

const Registry<GemmDesc>& gemm_registry();
PrimitiveInfo gemm_primitive();

std::unique_ptr<GemmImpl> make_gemm_openblas();
std::unique_ptr<GemmImpl> make_gemm_packed();
std::unique_ptr<GemmImpl> make_gemm_blis();
std::unique_ptr<GemmImpl> make_gemm_transpose_nn();
std::unique_ptr<GemmImpl> make_gemm_clblast();
std::unique_ptr<GemmImpl> make_gemm_clblast_default();
std::unique_ptr<GemmImpl> make_gemm_ocl_tiled();
std::unique_ptr<GemmImpl> make_gemm_onednn_matmul();
std::unique_ptr<GemmImpl> make_gemm_onednn_sgemm();

}  // namespace pb
