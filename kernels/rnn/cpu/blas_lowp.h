// cpu/blas in a reduced data type (bf16, u8s8; forward inference), on cpu/packed's
// reduced-precision GEMM: what cpu/blas (blas.cpp) hands a descriptor with dt != f32.
#pragma once

#include <memory>
#include <string>

#include "kernels/rnn/rnn.h"

namespace pb {

// Why cpu/blas does not run d (dt != f32) in direction dir on this CPU, or "" when it does.
std::string rnn_blas_lowp_unsupported(const RnnDesc& d, Dir dir);
// The implementation for d's reduced type (throws Unsupported for one it has none of).
std::unique_ptr<RnnImpl> make_rnn_blas_lowp(const RnnDesc& d);

}  // namespace pb
