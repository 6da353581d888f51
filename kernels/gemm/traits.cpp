// GEMM traits: integer-valued seeded inputs and the fp64 reference hook-up.
#include "kernels/gemm/traits.h"

#include <algorithm>
#include <cmath>

#include "kernels/core/fill.h"
#include "kernels/core/quant.h"
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
  const int range = typed_int_range(static_cast<double>(d.k) + 16.0, dt);
  for (size_t i = 0; i < v.size(); ++i) fill_int(v[i].tensor, mix_seed(seed, i), range);
  if (dt.integer()) {
    shift_to_u8(v[1].tensor, range);
    // Per row of C (output channel) weight scales, the source's scale and zero point, C's
    // scale (quant.h). C (read when beta != 0) holds s8 values already: integers in [-r, r].
    QuantInputs q = make_quant_inputs(d.m, static_cast<double>(d.k), range, dt.out);
    v.push_back({"a_scale", std::move(q.wei_scale)});
    v.push_back({"b_scale", std::move(q.src_scale)});
    v.push_back({"b_zero", std::move(q.src_zero)});
    v.push_back({"c_scale", std::move(q.dst_scale)});
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
