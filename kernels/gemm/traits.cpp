// GEMM traits: integer-valued seeded inputs and the fp64 reference hook-up.
#include "kernels/gemm/traits.h"

#include <algorithm>
#include <cmath>

#include "kernels/core/fill.h"
#include "kernels/core/typed_problem.h"
#include "reference/gemm.h"

namespace pb {

namespace {
// A scalar is "dyadic" when multiplying an integer by it is exact in fp32 (e.g. 0.5, -1.5, 2).
bool dyadic(double v) {
  return std::ldexp(v, 8) == std::round(std::ldexp(v, 8)) && std::fabs(v) <= 16;
}
}  // namespace

std::vector<NamedTensor> GemmTraits::make_inputs(const GemmDesc& d, Dir, uint64_t seed) {
  // Column-major matrices are stored as (cols, ld) arrays: element (i, j) at j*ld + i.
  std::vector<NamedTensor> v;
  v.push_back({"A", Tensor({d.a_cols(), d.lda})});
  v.push_back({"B", Tensor({d.b_cols(), d.ldb})});
  v.push_back({"C", Tensor({d.n, d.ldc})});
  // Integers exact in the input type whose sums stay exact in fp32 (f32, bf16, f16: at most 4;
  // u8s8: up to 127, the weights in [-r, r], the source in [0, 2r] around its zero point r).
  const DataType dt = d.dt;
  const int cap = dt.integer() ? 127 : 4;
  int range = exact_int_range(static_cast<double>(d.k) + 16.0, cap);
  // An f16 output holds magnitudes up to 65504: keep k * r^2 below 2^15.
  while (dt.out == DataType::out_f16 && range > 1 && d.k * double(range) * range >= 32768) --range;
  for (size_t i = 0; i < v.size(); ++i) fill_int(v[i].tensor, mix_seed(seed, i), range);
  if (dt.integer()) {
    Tensor& b = v[1].tensor;
    for (int64_t i = 0; i < b.size(); ++i) b[i] += static_cast<float>(range);  // u8 in [0, 2r]
    // Scales are powers of two, so scaled integer sums stay exact in fp32 (integer types compare
    // exactly); the per-row weight scales differ so that a kernel applying the wrong row's
    // scale fails.
    Tensor a_scale({d.m}), b_scale({1}), b_zero({1}), c_scale({1});
    for (int64_t i = 0; i < d.m; ++i) a_scale[i] = std::ldexp(1.0f, -static_cast<int>(i % 3));
    b_scale[0] = 0.5f;
    b_zero[0] = static_cast<float>(range);
    // s8 output: C in units of c_scale, about sqrt(k) * r^2 / 8 per unit, so that typical sums
    // land inside [-128, 127] and the tails saturate.
    c_scale[0] = 1.0f;
    if (dt.out == DataType::out_s8) {
      const double typical = std::sqrt(static_cast<double>(d.k)) * range * range / 8.0;
      c_scale[0] =
          std::ldexp(1.0f, std::max(0, static_cast<int>(std::ceil(std::log2(typical))) - 5));
      // C (read when beta != 0) holds s8 values already: integers in [-r, r], r <= 127.
    }
    v.push_back({"a_scale", std::move(a_scale)});
    v.push_back({"b_scale", std::move(b_scale)});
    v.push_back({"b_zero", std::move(b_zero)});
    v.push_back({"c_scale", std::move(c_scale)});
  }
  return v;
}

bool GemmTraits::exact_data(const GemmDesc& d, Dir) {
  // Integer inputs are exact while |alpha * sum + beta * c| < 2^24: exact_int_range keeps
  // k * r^2 below 2^23 and dyadic scalars up to 16 keep the scaled values exact.
  return dyadic(d.alpha) && dyadic(d.beta) && std::fabs(d.alpha) <= 1 && std::fabs(d.beta) <= 1;
}

std::string GemmTraits::layout(const GemmDesc& d, Dir) {
  return "column-major (BLAS): each matrix is saved as an array of shape (cols, ld); element "
         "(i, j) is arr[j, i]. C = alpha*op(A)*op(B) + beta*C with op = " +
         d.trans_str() + ", alpha=" + std::to_string(d.alpha) + ", beta=" + std::to_string(d.beta);
}

std::vector<Tensor64> GemmTraits::reference(const GemmDesc& d, Dir,
                                            const std::vector<const Tensor*>& in) {
  std::vector<Tensor64> out;
  out.push_back(ref::gemm(d, in));
  return out;
}

double GemmTraits::reference_at(const GemmDesc& d, Dir, const std::vector<const Tensor*>& in,
                                size_t, int64_t index) {
  return ref::gemm_at(d, in, index % d.ldc, index / d.ldc);
}

namespace {
// Halves the largest of m, n, k (k first on ties) until 2mnk <= max_flops; leading dimensions
// shrink with their matrices (keeping any padding beyond the minimum).
std::string gemm_shrink(const std::string& text, double max_flops, std::string* tag) {
  GemmDesc d = GemmDesc::parse(text);
  const int64_t pa = d.lda - d.min_lda(), pb = d.ldb - d.min_ldb(), pc = d.ldc - d.min_ldc();
  std::string scaled;
  while (d.flops() > max_flops) {
    int64_t* big = d.k >= d.m && d.k >= d.n ? &d.k : d.m >= d.n ? &d.m : &d.n;
    std::string which = big == &d.k ? "k" : big == &d.m ? "m" : "n";
    if (*big <= 1) break;
    *big = (*big + 1) / 2;
    if (scaled.find(which) == std::string::npos) scaled += which;
  }
  d.lda = d.min_lda() + pa;
  d.ldb = d.min_ldb() + pb;
  d.ldc = d.min_ldc() + pc;
  *tag = scaled.empty() ? "" : "scaled_" + scaled;
  return d.str();
}
}  // namespace

PrimitiveInfo gemm_primitive() {
  PrimitiveInfo info =
      make_primitive_info<GemmTraits>({Dir::fwd},
                                      "m<M>n<N>k<K>[_nn|_nt|_tn|_tt][alpha<a>][beta<b>][lda<>ldb<>"
                                      "ldc<>][dt=f32|bf16[:bf16]|f16[:f16]|"
                                      "u8s8[:s8]][n\"name\"]");
  info.shrink = gemm_shrink;
  return info;
}

}  // namespace pb
