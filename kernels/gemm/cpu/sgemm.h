// The one SGEMM that every GEMM-based CPU algorithm calls (cpu/im2col forward and backward, its
// 1x1 paths, cpu/transpose_nn, cpu/blas RNN): the library is chosen at run time with
// PRIMBENCH_SGEMM=packed|openblas|blis (default packed, primbench's own, kernels/gemm/cpu/
// packed_sgemm.h) and recorded in every result's context ("primbench_sgemm"). The GEMM
// primitive's cpu/openblas, cpu/packed and cpu/blis always run their own library.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/core/post_ops.h"

namespace pb {

// "packed", "openblas" or "blis". Throws InputError naming PRIMBENCH_SGEMM for another value,
// and Unsupported when blis is asked for and BLIS is not installed.
const std::string& sgemm_library();

// Column-major, BLAS semantics: C (m x n) = alpha op(A) op(B) + beta C. Inside an OpenMP
// parallel region it runs on the calling thread alone (each library).
void sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
// The same, then `post` on C with column j as channel j (post_ops.h; nullptr: none): cpu/packed
// applies it to each tile as its sum completes, the other libraries in a pass over C after it.
void sgemm_post(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
                const PostOps* post);

// Row-major C (m x n, ldc) = alpha op(A) op(B) + beta C: the column-major call on the
// transposes (C^T = op(B)^T op(A)^T); `post` with row i of C as channel i.
inline void sgemm_rowmajor(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                           const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                           float* c, int64_t ldc, const PostOps* post = nullptr) {
  // Row i of the row-major C is column i of the column-major one: `post`'s channel i, its
  // residual element (i, j) at res[j + i * ldr].
  sgemm_post(tb, ta, n, m, k, alpha, b, ldb, a, lda, beta, c, ldc, post);
}

// Each library directly (column-major). sgemm_blis throws Unsupported when BLIS is absent.
void sgemm_openblas(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                    int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
void sgemm_blis(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
// "" when BLIS loaded, else why not (for the registry's availability and for reports).
std::string blis_unavailable();
// BLIS's version ("0.9.0") and the kernel set it dispatched to on this CPU ("zen3", "skx", or
// "generic": its reference C kernels), or "" when absent.
std::string blis_version();
std::string blis_arch();

}  // namespace pb
