// The exact result of cpu/packed's u8s8 epilogue for one element of C, for the tests of its
// AVX2 and AMX kernels: fp32(sum) times the row's scale (alpha * a_scale[i] * b_scale, divided by
// c_scale for an s8 output), then + beta * C in one rounding; an s8 output saturated and rounded
// to nearest even (MXCSR's default). `old` is C's element before the call, in C's type.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

namespace pb::lowp_test {

inline float u8s8_f32_expected(int64_t sum, double scale, float beta, float c_scale, float old) {
  const double y = static_cast<double>(static_cast<float>(sum)) * scale;
  return static_cast<float>(y + static_cast<double>(beta) * c_scale * old);
}

inline int u8s8_s8_expected(int64_t sum, double scale, float beta, int old) {
  const double y = static_cast<double>(static_cast<float>(sum)) * scale;
  const double v = y + static_cast<double>(beta) * old;
  return static_cast<int>(std::nearbyint(
      std::fmin(127.0, std::fmax(-128.0, static_cast<double>(static_cast<float>(v))))));
}

// One element of C (f32 or s8, as `s8` says; got and old: after and before the call) against
// the two above.
inline ::testing::AssertionResult u8s8_element(bool s8, int64_t sum, double scale, float beta,
                                               float c_scale, float got32, float old32, int got8,
                                               int old8) {
  if (s8) {
    const int want = u8s8_s8_expected(sum, scale, beta, old8);
    if (got8 == want) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "s8 " << got8 << ", want " << want;
  }
  const float want = u8s8_f32_expected(sum, scale, beta, c_scale, old32);
  if (got32 == want) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "f32 " << got32 << ", want " << want;
}

}  // namespace pb::lowp_test
