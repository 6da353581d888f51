// Vectorised element-wise math over arrays, on SLEEF's vector expf (1.0 ULP, the "u10" variant):
// the AVX-512 or AVX2 path this build compiled and this CPU runs, else SLEEF's scalar expf.
// tanh: a piecewise polynomial on the AVX-512 path (1.4 ULP, vmath.cpp), elsewhere SLEEF's
// tanhf in its 3.5-ULP variant (u35).
// Serial: callers split the arrays across threads.
#pragma once

#include <cstdint>

namespace pb::vmath {

// The path in use: "avx512", "avx2" or "scalar". The widest the CPU and the build both have,
// unless PRIMBENCH_SIMD=avx2|scalar asks for a narrower one (to measure the other paths; a wider
// one than the CPU runs is an InputError naming PRIMBENCH_SIMD).
const char* isa();

void exp(const float* x, float* y, int64_t n);  // y = exp(x)
// The largest of x[0..n) (-inf for n = 0; NaNs are passed over, as std::max(max, x) does).
float max(const float* x, int64_t n);
// The sum of a[i] * b[i], each product in fp32, accumulated in fp64.
double dot(const float* a, const float* b, int64_t n);
// y = exp(x - shift); returns the sum of y, accumulated in fp64 (a softmax denominator).
double exp_shifted_sum(const float* x, float* y, int64_t n, float shift);
// The element-wise activations. nt: non-temporal stores, for outputs larger than the last-level
// cache (they skip reading each destination line in before writing it); aligned outputs only,
// else plain stores.
void relu(const float* x, float* y, int64_t n, bool nt = false);  // max(x, 0)
void relu_bwd(const float* x, const float* dy, float* dx, int64_t n,
              bool nt = false);                                      // x > 0 ? dy : 0
void sigmoid(const float* x, float* y, int64_t n, bool nt = false);  // 1 / (1 + exp(-x))
void tanh(const float* x, float* y, int64_t n, bool nt = false);
void sigmoid_bwd(const float* x, const float* dy, float* dx, int64_t n,
                 bool nt = false);  // dy s (1 - s)
void tanh_bwd(const float* x, const float* dy, float* dx, int64_t n,
              bool nt = false);  // dy (1 - t^2)

}  // namespace pb::vmath
