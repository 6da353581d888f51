// The pooling reference backward against finite differences of the reference forward: for
// L = sum(diff_dst * pool(src)), dL/dsrc must equal pool_bwd(src, diff_dst). Inputs are distinct
// dyadic values spaced far more than the step, so no argmax changes under the perturbation.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/core/fill.h"
#include "reference/pool.h"

namespace pb {
namespace {

double loss(const PoolDesc& d, const Tensor& src, const Tensor& dy) {
  Tensor64 y = ref::pool_fwd(d, src);
  double s = 0;
  for (int64_t i = 0; i < y.size(); ++i) s += y[i] * dy[i];
  return s;
}

void expect_pool_fd_matches(const std::string& text) {
  PoolDesc d = PoolDesc::parse(text);
  Tensor src({d.mb, d.ic, d.ih, d.iw}), dy({d.mb, d.ic, d.oh, d.ow});
  // A permutation of 0..n-1, halved: distinct, exactly representable, no ties.
  const int64_t n = src.size();
  for (int64_t i = 0; i < n; ++i) src[i] = static_cast<float>((i * 7919) % n) * 0.5f;
  fill_uniform(dy, 7, -1, 1);
  Tensor64 g = ref::pool_bwd(d, src, dy);
  const float h = 1.0f / 64;
  for (int64_t i = 0; i < n; ++i) {
    const float x0 = src[i];
    src[i] = x0 + h;
    const double up = loss(d, src, dy);
    src[i] = x0 - h;
    const double down = loss(d, src, dy);
    src[i] = x0;
    EXPECT_NEAR((up - down) / (2 * h), g[i], 1e-9) << text << " element " << i;
  }
}

TEST(PoolReferenceSmoke, BackwardMatchesFiniteDifferences) {
  for (const char* s :
       {"mb1ic2ih7kh3sh2ph1_max", "mb1ic2ih7kh3sh2ph1_avgp", "mb1ic2ih7kh3sh2ph1_avgnp",
        "mb1ic1ih6iw5kh2kw3sh1sw2_avgnp", "mb1ic2ih5kh5_max", "mb1ic1ih8oh5kh3sh2ph1_avgp"})
    expect_pool_fd_matches(s);
}

}  // namespace
}  // namespace pb
