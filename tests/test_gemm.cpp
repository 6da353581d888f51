// GEMM-specific checks beyond the conformance sweep: BLAS beta = 0 semantics (C is not read),
// the test-shrinking hook, and sampled checks of large shapes.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/core/fill.h"
#include "kernels/core/problem.h"
#include "kernels/gemm/gemm.h"

namespace pb {
namespace {

TEST(GemmSmoke, BetaZeroDoesNotReadC) {
  GemmDesc d = GemmDesc::parse("m37n29k17_tn_beta0ldc40");
  Tensor a({d.a_cols(), d.lda}), b({d.b_cols(), d.ldb}), c({d.n, d.ldc});
  fill_int(a, 1, 3);
  fill_int(b, 2, 3);
  c.fill(NAN);
  for (const auto& e : gemm_registry()) {
    if (!e.unavailable().empty()) continue;
    auto impl = e.make();
    plan_phases(*impl, d, Dir::fwd, {&a, &b, &c});
    run_phases(*impl);
    Tensor out = std::move(impl->result().at(0));
    for (int64_t j = 0; j < d.n; ++j)
      for (int64_t i = 0; i < d.m; ++i)
        ASSERT_FALSE(std::isnan(out[j * d.ldc + i])) << e.name << " (" << i << "," << j << ")";
    // Rows beyond m (ldc padding) are not part of C: they must be left as they were.
    for (int64_t j = 0; j < d.n; ++j)
      for (int64_t i = d.m; i < d.ldc; ++i) ASSERT_TRUE(std::isnan(out[j * d.ldc + i])) << e.name;
  }
}

TEST(GemmSmoke, ShrinkScalesTheLargestDimensionAndSaysSo) {
  const PrimitiveInfo& p = find_primitive("gemm");
  std::string tag;
  GemmDesc d = GemmDesc::parse(p.shrink("m512n8k500000_tn_n\"x\"", 3e7, &tag));
  EXPECT_EQ(tag, "scaled_k");
  EXPECT_EQ(d.m, 512);
  EXPECT_EQ(d.n, 8);
  EXPECT_LE(d.flops(), 3e7);
  EXPECT_TRUE(d.ta);
  EXPECT_EQ(p.shrink("m8n8k8", 3e7, &tag), "m8n8k8");
  EXPECT_EQ(tag, "");
  GemmDesc ld = GemmDesc::parse(p.shrink("m4096n4096k4096lda5000", 3e7, &tag));
  EXPECT_EQ(ld.lda - ld.m, 5000 - 4096);  // padding kept
}

TEST(GemmSmoke, LargeShapeIsCheckedOnASample) {
  auto p = find_primitive("gemm").make("m300n300k3000", Dir::fwd, 3);
  std::string why;
  auto r = p->runner("cpu/openblas", &why);
  ASSERT_NE(r, nullptr) << why;
  Measured m = measure(*p, *r, 1, true, 1e6);  // budget below 2mnk forces sampling
  EXPECT_TRUE(m.check.sampled);
  EXPECT_TRUE(m.check.pass) << m.check.summary();
  EXPECT_GE(m.check.checked, 64);
  EXPECT_LT(m.check.checked, 300 * 300);
}

}  // namespace
}  // namespace pb
