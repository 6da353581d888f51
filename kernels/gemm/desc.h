// GEMM problem descriptor:
// m<M>n<N>k<K>[_nn|_nt|_tn|_tt][alpha<a>][beta<b>][lda..ldb..ldc..]n"name". Column-major, BLAS
// semantics: C(MxN) = alpha * op(A) * op(B) + beta * C.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/core/impl.h"

namespace pb {

struct GemmDesc {
  int64_t m = 0, n = 0, k = 0;
  bool ta = false, tb = false;        // op(A) = A^T, op(B) = B^T
  double alpha = 1, beta = 1;         // DeepBench's defaults: no work is elided
  int64_t lda = 0, ldb = 0, ldc = 0;  // 0 in the text means minimal; parse() fills them in
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
  // A and B read once, C read (beta != 0) and written.
  double bytes(Dir = Dir::fwd) const {
    return 4.0 * (m * k + k * n + (beta != 0 ? 2.0 : 1.0) * m * n);
  }
};

}  // namespace pb
