// The batch-norm reference backward against finite differences of the reference forward, in
// training (through the batch statistics) and inference mode, with and without the fused ReLU:
// for L = sum(diff_dst * bnorm(src)), dL/dsrc, dL/dscale and dL/dshift.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/core/fill.h"
#include "reference/bnorm.h"

namespace pb {
namespace {

struct Inputs {
  Tensor src, dy, scale, shift, mean, var;
};

double loss(const BnormDesc& d, Inputs& in) {
  Tensor64 y = std::move(ref::bnorm_fwd(d, in.src, in.scale, in.shift, in.mean, in.var)[0]);
  double s = 0;
  for (int64_t i = 0; i < y.size(); ++i) s += y[i] * in.dy[i];
  return s;
}

// Central difference of the loss in element i of t, step h (exact in fp32: dyadic values).
double fd(const BnormDesc& d, Inputs& in, Tensor& t, int64_t i) {
  const float h = 1.0f / 1024, x0 = t[i];
  t[i] = x0 + h;
  const double up = loss(d, in);
  t[i] = x0 - h;
  const double down = loss(d, in);
  t[i] = x0;
  return (up - down) / (2 * h);
}

void expect_bnorm_fd_matches(const std::string& text) {
  BnormDesc d = BnormDesc::parse(text);
  Inputs in{Tensor({d.mb, d.ic, d.ih, d.iw}),
            Tensor({d.mb, d.ic, d.ih, d.iw}),
            Tensor({d.ic}),
            Tensor({d.ic}),
            Tensor({d.ic}),
            Tensor({d.ic})};
  // Multiples of 1/64: x +- h stays exact. ReLU kinks are avoided by the generic values.
  fill_int(in.src, 3, 64);
  for (int64_t i = 0; i < in.src.size(); ++i) in.src[i] /= 32;
  fill_uniform(in.dy, 4, -1, 1);
  fill_uniform(in.scale, 5, 0.5f, 1.5f);
  fill_uniform(in.shift, 6, -0.5f, 0.5f);
  std::vector<double> m, v;
  ref::bnorm_stats(d, in.src, &m, &v);
  for (int64_t c = 0; c < d.ic; ++c) in.mean[c] = float(m[c]), in.var[c] = float(v[c]);
  auto g = ref::bnorm_bwd(d, in.src, in.dy, in.scale, in.shift, in.mean, in.var);
  // Inference keeps mean/var fixed: the loss's derivative is exactly the inference backward.
  // Training recomputes the statistics inside bnorm_fwd (the inputs are then running stats).
  const double tol = 2e-4;
  for (int64_t i = 0; i < in.src.size(); ++i)
    EXPECT_NEAR(fd(d, in, in.src, i), g[0][i], tol * (1 + std::fabs(g[0][i])))
        << text << " dsrc " << i;
  size_t o = 1;
  if (d.scale) {
    for (int64_t c = 0; c < d.ic; ++c)
      EXPECT_NEAR(fd(d, in, in.scale, c), g[o][c], tol * (1 + std::fabs(g[o][c])))
          << text << " dscale " << c;
    ++o;
  }
  if (d.shift) {
    for (int64_t c = 0; c < d.ic; ++c)
      EXPECT_NEAR(fd(d, in, in.shift, c), g[o][c], tol * (1 + std::fabs(g[o][c])))
          << text << " dshift " << c;
  }
}

TEST(BnormReferenceSmoke, BackwardMatchesFiniteDifferences) {
  for (const char* s :
       {"mb2ic3ih3_scale_shift", "mb3ic2ih2iw3_scale_shift_relu", "mb2ic3ih3_inf_scale_shift",
        "mb2ic2ih3_inf_scale_shift_relu", "mb1ic2ih4", "mb4ic2ih1_shift"})
    expect_bnorm_fd_matches(s);
}

}  // namespace
}  // namespace pb
