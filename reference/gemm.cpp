// Naive GEMM reference.
#include "reference/gemm.h"

namespace pb::ref {

double gemm_at(const GemmDesc& d, const std::vector<const Tensor*>& in, int64_t i, int64_t j) {
  const Tensor &a = *in[0], &b = *in[1], &c = *in[2];
  if (i >= d.m) return c[j * d.ldc + i];  // padding rows are left untouched
  const bool quant = d.dt.in == DataType::u8s8;
  const double b_zero = quant ? (*in[5])[0] : 0.0;
  double acc = 0;
  for (int64_t p = 0; p < d.k; ++p) {
    double av = d.ta ? a[i * d.lda + p] : a[p * d.lda + i];
    double bv = d.tb ? b[p * d.ldb + j] : b[j * d.ldb + p];
    acc += av * (bv - b_zero);
  }
  if (quant) acc *= static_cast<double>((*in[3])[i]) * (*in[4])[0];
  const double c_scale = quant ? (*in[6])[0] : 1.0;
  double v = d.alpha * acc + (d.beta != 0 ? d.beta * c_scale * c[j * d.ldc + i] : 0.0);
  if (d.dt.out == DataType::out_s8) v /= c_scale;
  return d.dt.out == DataType::out_f32 ? v : convert_output(v, d.dt.out);
}

Tensor64 gemm(const GemmDesc& d, const std::vector<const Tensor*>& in) {
  Tensor64 out({d.n, d.ldc});
#pragma omp parallel for schedule(dynamic)
  for (int64_t j = 0; j < d.n; ++j)
    for (int64_t i = 0; i < d.ldc; ++i) out[j * d.ldc + i] = gemm_at(d, in, i, j);
  return out;
}

}  // namespace pb::ref
