// primbench's own single-precision GEMM, BLIS-style: op(A) and op(B) packed into panels sized
// for the caches this machine reports, a register-blocked micro-kernel (AVX-512 48x8 or
// AVX2+FMA 24x4, chosen at run time; a portable one otherwise), OpenMP over the macro-loops.
#pragma once

#include <cstdint>
#include <string>

namespace pb {

// Column-major, BLAS semantics: C (m x n, ldc) = alpha * op(A) * op(B) + beta * C, where op(A)
// is m x k (A stored k x m with lda when ta), op(B) is k x n. beta == 0: C is not read. Any
// sizes (0 included: then only beta scales C) and leading dimensions >= the stored rows.
void sgemm_packed(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                  int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// The micro-kernel's tile (mr x nr) and the cache blocks in use, and as one line, e.g.
// "avx512 48x8, kc 256 mc 480 nc 4096". The ISA follows PRIMBENCH_SIMD (kernels/core/vmath.h).
struct SgemmBlocking {
  std::string isa;
  int mr = 0, nr = 0;
  int64_t kc = 0, mc = 0, nc = 0;
};
SgemmBlocking sgemm_packed_blocking();
// The transposing copy both packs use, for any 4-byte elements (the reduced-precision GEMM moves
// bf16 pairs and byte quadruples as words): dst[p * ds + r] = src[r * ss + p], r < rows,
// p < cols, strides in elements.
void transpose_words(const void* src, int64_t ss, int rows, int64_t cols, void* dst, int64_t ds);
std::string sgemm_packed_config();
// The threads a GEMM of m x n x k runs on (cpu/packed, every type): 1 inside a parallel region
// (one level of threads) or when 2mnk is under 2^21 FLOP (about 10 us of one core here), where
// waking and joining the others costs more than they save (672 steps of a 32 x 1 x 32 RNN GEMM:
// 1.8 ms on 2 threads, 0.4 on 1); else every OpenMP thread.
int gemm_threads(int64_t m, int64_t n, int64_t k);

}  // namespace pb
