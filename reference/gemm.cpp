// Naive GEMM reference.
#include "reference/gemm.h"

namespace pb::ref {

double gemm_at(const GemmDesc& d, const Tensor& a, const Tensor& b, const Tensor& c, int64_t i,
               int64_t j) {
  if (i >= d.m) return c[j * d.ldc + i];  // padding rows are left untouched
  double acc = 0;
  for (int64_t p = 0; p < d.k; ++p) {
    double av = d.ta ? a[i * d.lda + p] : a[p * d.lda + i];
    double bv = d.tb ? b[p * d.ldb + j] : b[j * d.ldb + p];
    acc += av * bv;
  }
  double cv = c[j * d.ldc + i];
  return d.alpha * acc + (d.beta != 0 ? d.beta * cv : 0.0);
}

Tensor64 gemm(const GemmDesc& d, const Tensor& a, const Tensor& b, const Tensor& c) {
  Tensor64 out({d.n, d.ldc});
#pragma omp parallel for schedule(dynamic)
  for (int64_t j = 0; j < d.n; ++j)
    for (int64_t i = 0; i < d.ldc; ++i) out[j * d.ldc + i] = gemm_at(d, a, b, c, i, j);
  return out;
}

}  // namespace pb::ref
