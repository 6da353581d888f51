// GEMM problem descriptor:
// m<M>n<N>k<K>[_nn|_nt|_tn|_tt][alpha<a>][beta<b>][lda..ldb..ldc..][dt=<type>]n"name".
// Column-major, BLAS semantics: C(MxN) = alpha * op(A) * op(B) + beta * C.
// dt (kernels/core/dtype.h): f32 (default); bf16, f16 (fp32 accumulation; output f32 or, with
// :bf16 / :f16, the input type); u8s8: A holds the s8 weights with one scale per row of C
// (output channel), B the u8 source with a per-tensor scale and zero point; int32 accumulation,
// C = alpha * a_scale[i] * b_scale * sum(A * (B - b_zero)) + beta * C, in f32 or, with :s8,
// as s8 in units of c_scale (rounded to nearest even, saturated).
#pragma once

#include <cstdint>
#include <string>

#include "kernels/core/dtype.h"
#include "kernels/core/impl.h"

namespace pb {

struct GemmDesc {
  int64_t m = 0, n = 0, k = 0;
  bool ta = false, tb = false;        // op(A) = A^T, op(B) = B^T
  double alpha = 1, beta = 1;         // DeepBench's defaults: no work is elided
  int64_t lda = 0, ldb = 0, ldc = 0;  // 0 in the text means minimal; parse() fills them in
  DataType dt;
  std::string name;

  static GemmDesc parse(const std::string& text);  // throws InputError naming the token/field
  std::string str() const;                         // parse(str()) == *this
  void validate() const;                           // throws InputError naming the field
  bool operator==(const GemmDesc& o) const;

  // Stored shapes (column-major): A is a_rows x a_cols with leading dimension lda, etc.
  int64_t a_rows() const { return ta ? k : m; }
  int64_t a_cols() const { return ta ? m : k; }
  int64_t b_rows() const { return tb ? n : k; }
  int64_t b_cols() const { return tb ? k : n; }
  int64_t min_lda() const { return a_rows(); }
  int64_t min_ldb() const { return b_rows(); }
  int64_t min_ldc() const { return m; }
  int64_t a_size() const { return lda * a_cols(); }
  int64_t b_size() const { return ldb * b_cols(); }
  int64_t c_size() const { return ldc * n; }
  std::string trans_str() const { return std::string(ta ? "t" : "n") + (tb ? "t" : "n"); }

  double flops(Dir = Dir::fwd) const { return 2.0 * m * n * k; }
  // A and B read once in their type, C read (beta != 0) and written in the output type.
  double bytes(Dir = Dir::fwd) const {
    return dt.in_bytes() * (m * k + k * n) + dt.out_bytes() * (beta != 0 ? 2.0 : 1.0) * m * n;
  }
};

}  // namespace pb
