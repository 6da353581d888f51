// cpu/packed's u8s8 GEMM for CPUs without AVX512_VNNI (AVX2 and FMA): both operands widened to
// int16 while packing (the source's zero point subtracted there), pairs of products summed by
// vpmaddwd into int32, exact over the whole sum (packed_lowp_avx2.cpp). Internal to
// gemm_packed_lowp, which chooses it (packed_lowp.h). LowpGemm::a_packed (op(A) = A only), when
// given, holds A in this kernel's slivers (LowpPackedA calls pack_a_whole on this route): an
// RNN's recurrent weights, packed once instead of every step.
#pragma once

#include <cstdint>

#include "kernels/gemm/cpu/packed_lowp.h"

namespace pb::lowp_avx2 {

void gemm_u8s8(const LowpGemm& g);
// A (m x k, column-major, lda) into the slivers gemm_u8s8 reads: packed_a_elems(m, k) int16 at
// out (64-byte aligned).
int64_t packed_a_elems(int64_t m, int64_t k);
void pack_a_whole(int64_t m, int64_t k, const int8_t* a, int64_t lda, int16_t* out);

}  // namespace pb::lowp_avx2
