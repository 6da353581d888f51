// kernels/core/vmath: SLEEF-backed element-wise math on every tail length of every vector width,
// against libm in double. ctest runs this on each SIMD path (PRIMBENCH_SIMD=avx2, scalar).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/core/tensor.h"
#include "kernels/core/vmath.h"

namespace pb {
namespace {

// Distance in units in the last place between float a and the exact value e.
double ulps(float a, double e) {
  if (std::isnan(a) || std::isnan(e)) return std::isnan(a) && std::isnan(e) ? 0 : 1e9;
  const float ef = static_cast<float>(e);
  if (a == ef) return 0;
  const double ulp = std::fabs(std::nextafter(ef, INFINITY) - ef);
  return std::fabs(a - e) / (ulp > 0 ? ulp : 1e-45);
}

std::vector<float> inputs(int64_t n, float lo, float hi) {
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; ++i)
    x[i] = lo + (hi - lo) * static_cast<float>(i * 7919 % (n + 1)) / (n + 1);
  return x;
}

// tanh's bound in ULP: the piecewise polynomial on AVX-512 (1.39 at most over every third float
// of [0, 30]), elsewhere SLEEF's u35 tanhf (3.5).
double tanh_ulp_bound() {
  return std::string(vmath::isa()) == "avx512" ? 1.4 : 3.5;
}

// Every length around the vector widths (1, 8, 16) and a few blocks: the loop and the tail.
const int64_t kLengths[] = {0, 1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 100, 1000};

TEST(VmathSmoke, PathIsNamed) {
  const std::string isa = vmath::isa();
  EXPECT_TRUE(isa == "avx512" || isa == "avx2" || isa == "scalar") << isa;
}

TEST(VmathSmoke, ExpSigmoidTanhWithinTheirUlpBounds) {
  for (int64_t n : kLengths) {
    SCOPED_TRACE("n = " + std::to_string(n) + ", path " + vmath::isa());
    const std::vector<float> x = inputs(n, -20.0f, 20.0f), dy = inputs(n, -1.0f, 1.0f);
    std::vector<float> y(n + 1, 42.0f), dx(n + 1, 42.0f);  // one guard element past the end
    double worst_exp = 0, worst_sig = 0, worst_tanh = 0, worst_tb = 0, worst_sb = 0;
    vmath::exp(x.data(), y.data(), n);
    for (int64_t i = 0; i < n; ++i)
      worst_exp = std::max(worst_exp, ulps(y[i], std::exp(double(x[i]))));
    EXPECT_EQ(y[n], 42.0f) << "wrote past the end";
    vmath::sigmoid(x.data(), y.data(), n);
    for (int64_t i = 0; i < n; ++i)
      worst_sig = std::max(worst_sig, ulps(y[i], 1.0 / (1.0 + std::exp(-double(x[i])))));
    vmath::tanh(x.data(), y.data(), n);
    for (int64_t i = 0; i < n; ++i)
      worst_tanh = std::max(worst_tanh, ulps(y[i], std::tanh(double(x[i]))));
    vmath::tanh_bwd(x.data(), dy.data(), dx.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const double t = std::tanh(double(x[i]));
      // The product's rounding: compare in absolute terms against |dy| (dx is small near 0).
      worst_tb =
          std::max(worst_tb, std::fabs(dx[i] - dy[i] * (1 - t * t)) / (std::fabs(dy[i]) + 1e-30));
    }
    vmath::sigmoid_bwd(x.data(), dy.data(), dx.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const double s = 1.0 / (1.0 + std::exp(-double(x[i])));
      worst_sb =
          std::max(worst_sb, std::fabs(dx[i] - dy[i] * s * (1 - s)) / (std::fabs(dy[i]) + 1e-30));
    }
    EXPECT_EQ(dx[n], 42.0f) << "wrote past the end";
    EXPECT_LE(worst_exp, 1.0);  // SLEEF's u10: 1.0 ULP
    EXPECT_LE(worst_sig, 3.0);  // exp, an add and a division
    EXPECT_LE(worst_tanh, tanh_ulp_bound());
    EXPECT_LE(worst_tb, 1e-6);
    EXPECT_LE(worst_sb, 1e-6);
  }
}

// tanh over every 1021st float of [-30, 30] (about 1.1M, both signs), and one float either side
// of each of the piecewise polynomial's interval edges and its clamp (1/8, 3/16, ..., 6, 8, 9).
TEST(VmathSmoke, TanhWithinItsUlpBoundAcrossItsRange) {
  std::vector<float> x;
  const float top = 30.0f;
  uint32_t top_bits;
  std::memcpy(&top_bits, &top, sizeof top);
  for (uint32_t b = 0; b <= top_bits; b += 1021) {
    float v;
    std::memcpy(&v, &b, sizeof v);
    x.push_back(v);
    x.push_back(-v);
  }
  for (float edge = 0.125f; edge <= 8.0f; edge *= 2.0f)
    for (float e : {edge, 1.5f * edge, 9.0f})
      for (float v : {std::nextafter(e, 0.0f), e, std::nextafter(e, INFINITY)}) x.push_back(v);
  std::vector<float> y(x.size());
  vmath::tanh(x.data(), y.data(), static_cast<int64_t>(x.size()));
  double worst = 0;
  float at = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double u = ulps(y[i], std::tanh(double(x[i])));
    if (u > worst) worst = u, at = x[i];
  }
  EXPECT_LE(worst, tanh_ulp_bound()) << "at x = " << at << ", path " << vmath::isa();
}

TEST(VmathSmoke, SaturatesAndKeepsSpecialValues) {
  const float x[] = {-200.0f, -88.0f, 0.0f, -0.0f, 1e-8f, 88.0f, 200.0f, INFINITY, -INFINITY, NAN};
  const int64_t n = sizeof x / sizeof x[0];
  std::vector<float> s(n), t(n), e(n);
  vmath::sigmoid(x, s.data(), n);
  vmath::tanh(x, t.data(), n);
  vmath::exp(x, e.data(), n);
  EXPECT_EQ(s[0], 0.0f);
  EXPECT_EQ(s[6], 1.0f);
  EXPECT_EQ(s[2], 0.5f);
  EXPECT_EQ(s[7], 1.0f);
  EXPECT_EQ(s[8], 0.0f);
  // A denormal result, 1 / (1 + e^88): exp's scale in two factors reaches it.
  EXPECT_NEAR(s[1] / (1.0 / (1.0 + std::exp(88.0))), 1.0, 1e-5);
  EXPECT_EQ(t[0], -1.0f);
  EXPECT_EQ(t[6], 1.0f);
  EXPECT_EQ(t[7], 1.0f);
  EXPECT_EQ(t[8], -1.0f);
  EXPECT_EQ(t[2], 0.0f);
  EXPECT_TRUE(std::signbit(t[3])) << "tanh(-0) is -0";
  EXPECT_EQ(t[4], 1e-8f) << "tanh(x) = x for tiny x, no cancellation";
  EXPECT_EQ(e[7], INFINITY);
  EXPECT_EQ(e[8], 0.0f);
  EXPECT_TRUE(std::isnan(s[9]) && std::isnan(t[9]) && std::isnan(e[9]));
}

TEST(VmathSmoke, ShiftedSumIsTheSoftmaxDenominator) {
  for (int64_t n : kLengths) {
    const std::vector<float> x = inputs(n, -30.0f, 5.0f);
    std::vector<float> y(n);
    const double sum = vmath::exp_shifted_sum(x.data(), y.data(), n, 5.0f);
    double want = 0, worst = 0;
    for (int64_t i = 0; i < n; ++i) {
      want += std::exp(double(x[i]) - 5.0);
      // Each exponential of the fp32 difference: SLEEF's expf (1.0 ULP), or on AVX2 our own
      // (1.01 ULP over |x| < 100).
      worst = std::max(worst, ulps(y[i], std::exp(double(x[i] - 5.0f))));
    }
    EXPECT_NEAR(sum, want, 1e-6 * want + 1e-30) << "n = " << n;
    EXPECT_LE(worst, 1.01) << "n = " << n;
  }
}

// The softmax's max and the backward's dot product: the largest element wherever it lies (in
// the vector loop, a lane other than the first, or the tail), -inf on no elements; the dot
// product against fp64 over every tail length.
TEST(VmathSmoke, MaxAndDotOnEveryTail) {
  for (int64_t n : kLengths) {
    SCOPED_TRACE("n = " + std::to_string(n));
    EXPECT_EQ(vmath::max(inputs(n, -30.0f, -5.0f).data(), 0), -INFINITY);
    for (int64_t at = 0; at < n; ++at) {
      std::vector<float> x = inputs(n, -30.0f, -5.0f);
      x[at] = 1.5f;
      ASSERT_EQ(vmath::max(x.data(), n), 1.5f) << "largest at " << at;
    }
    const std::vector<float> a = inputs(n, -2.0f, 3.0f), b = inputs(n, -1.0f, 0.5f);
    double want = 0, mag = 0;
    for (int64_t i = 0; i < n; ++i) {
      want += double(a[i]) * b[i];
      mag += std::fabs(double(a[i]) * b[i]);
    }
    EXPECT_NEAR(vmath::dot(a.data(), b.data(), n), want, 1e-6 * mag + 1e-30);
  }
}

// Non-temporal stores (for outputs past the last-level cache) give the same results as plain
// ones, on aligned and misaligned outputs and every tail length; relu keeps its exact values.
TEST(VmathSmoke, StreamingStoresMatchPlainOnes) {
  for (int64_t n : kLengths) {
    for (int64_t offset : {0, 1}) {
      SCOPED_TRACE("n = " + std::to_string(n) + ", offset " + std::to_string(offset));
      const std::vector<float> x = inputs(n, -9.0f, 9.0f), dy = inputs(n, -1.0f, 1.0f);
      Tensor plain({n + 16}), streamed({n + 16});  // 64-byte aligned storage
      float* p = plain.data() + offset;
      float* q = streamed.data() + offset;
      auto same = [&](const char* what) {
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(p[i], q[i]) << what << " at " << i;
      };
      vmath::relu(x.data(), p, n, false);
      vmath::relu(x.data(), q, n, true);
      same("relu");
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(q[i], x[i] > 0 ? x[i] : 0.0f);
      vmath::relu_bwd(x.data(), dy.data(), p, n, false);
      vmath::relu_bwd(x.data(), dy.data(), q, n, true);
      same("relu_bwd");
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(q[i], x[i] > 0 ? dy[i] : 0.0f);
      vmath::sigmoid(x.data(), p, n, false);
      vmath::sigmoid(x.data(), q, n, true);
      same("sigmoid");
      vmath::tanh_bwd(x.data(), dy.data(), p, n, false);
      vmath::tanh_bwd(x.data(), dy.data(), q, n, true);
      same("tanh_bwd");
    }
  }
}

}  // namespace
}  // namespace pb
