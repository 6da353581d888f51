// SLEEF-backed element-wise math: one generic loop per function over a vector "lane type"
// (AVX-512, AVX2 or scalar), full vectors in the loop and the tail through a padded buffer.
#include "kernels/core/vmath.h"

#include <immintrin.h>
#include <sleef.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "kernels/core/error.h"

namespace pb::vmath {
namespace {

// Each lane type: T (a GCC vector type, so + - * / < and ?: work), its width W, unaligned
// load/store, set1, and SLEEF's expf at 1.0 ULP.
#ifdef __AVX512F__
struct Avx512 {
  using T = __m512;
  static constexpr int W = 16;
  static T load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, T v) { _mm512_storeu_ps(p, v); }
  static void stream(float* p, T v) { _mm512_stream_ps(p, v); }  // p 64-byte aligned
  static T set1(float x) { return _mm512_set1_ps(x); }
  static T exp(T v) { return Sleef_expf16_u10avx512f(v); }
  static T tanh(T v) { return Sleef_tanhf16_u35avx512f(v); }
};
#endif
#ifdef __AVX2__
struct Avx2 {
  using T = __m256;
  static constexpr int W = 8;
  static T load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, T v) { _mm256_storeu_ps(p, v); }
  static void stream(float* p, T v) { _mm256_stream_ps(p, v); }  // p 32-byte aligned
  static T set1(float x) { return _mm256_set1_ps(x); }
  static T exp(T v) { return Sleef_expf8_u10avx2(v); }
  static T tanh(T v) { return Sleef_tanhf8_u35avx2(v); }
};
#endif
struct Scalar {
  using T = float;
  static constexpr int W = 1;
  static T load(const float* p) { return *p; }
  static void store(float* p, T v) { *p = v; }
  static void stream(float* p, T v) { *p = v; }
  static T set1(float x) { return x; }
  static T exp(T v) { return Sleef_expf_u10(v); }
  static T tanh(T v) { return Sleef_tanhf_u35(v); }
};

// out[i] = f(a[i], b[i]) for full vectors, then the tail through zero-padded buffers. `b` may
// be null (unary functions get a zero vector). nt: non-temporal stores (out must then be aligned
// to the vector; else plain stores), for outputs larger than the caches: they skip reading the
// destination lines in first, a third of the traffic of a unary function.
template <class L, class F>
void map2(const float* a, const float* b, float* out, int64_t n, F f, bool nt = false) {
  int64_t i = 0;
  const typename L::T zero = L::set1(0.0f);
  if (nt && reinterpret_cast<uintptr_t>(out) % (L::W * sizeof(float)) == 0) {
    for (; i + L::W <= n; i += L::W)
      L::stream(out + i, f(L::load(a + i), b ? L::load(b + i) : zero));
#ifdef __SSE2__
    _mm_sfence();  // the streamed lines are visible before the caller goes on
#endif
  }
  for (; i + L::W <= n; i += L::W) L::store(out + i, f(L::load(a + i), b ? L::load(b + i) : zero));
  if (i == n) return;
  float ta[L::W] = {}, tb[L::W] = {}, to[L::W];
  std::memcpy(ta, a + i, (n - i) * sizeof(float));
  if (b) std::memcpy(tb, b + i, (n - i) * sizeof(float));
  L::store(to, f(L::load(ta), L::load(tb)));
  std::memcpy(out + i, to, (n - i) * sizeof(float));
}

template <class L>
struct Funcs {
  using T = typename L::T;
  static void exp(const float* x, float* y, int64_t n) {
    map2<L>(x, nullptr, y, n, [](T v, T) { return L::exp(v); });
  }
  static float max(const float* x, int64_t n) {
    T m = L::set1(-INFINITY);
    int64_t i = 0;
    for (; i + L::W <= n; i += L::W) {
      const T v = L::load(x + i);
      m = v > m ? v : m;
    }
    float lanes[L::W];
    L::store(lanes, m);
    float r = lanes[0];
    for (int l = 1; l < L::W; ++l) r = lanes[l] > r ? lanes[l] : r;
    for (; i < n; ++i) r = x[i] > r ? x[i] : r;
    return r;
  }
  static double exp_shifted_sum(const float* x, float* y, int64_t n, float shift) {
    const T s = L::set1(shift);
    map2<L>(x, nullptr, y, n, [s](T v, T) { return L::exp(v - s); });
    double sum = 0;  // fp64: 1e4 similar fp32 terms in 16 lanes drift by about 1e-5
#pragma omp simd reduction(+ : sum)
    for (int64_t i = 0; i < n; ++i) sum += y[i];
    return sum;
  }
  static void relu(const float* x, float* y, int64_t n, bool nt) {
    const T zero = L::set1(0.0f);
    map2<L>(
        x, nullptr, y, n, [zero](T v, T) { return v > zero ? v : zero; }, nt);
  }
  static void relu_bwd(const float* x, const float* dy, float* dx, int64_t n, bool nt) {
    const T zero = L::set1(0.0f);
    map2<L>(
        x, dy, dx, n, [zero](T v, T g) { return v > zero ? g : zero; }, nt);
  }
  static void sigmoid(const float* x, float* y, int64_t n, bool nt) {
    const T one = L::set1(1.0f);
    map2<L>(
        x, nullptr, y, n, [one](T v, T) { return one / (one + L::exp(-v)); }, nt);
  }
  // tanh is SLEEF's 3.5-ULP tanhf: 30 cycles a 16-lane vector here, where Cephes' form on
  // SLEEF's 1.0-ULP expf (an odd polynomial below |x| = 0.625, else 1 - 2 / (exp(2|x|) + 1))
  // took 38 and SLEEF's 1.0-ULP tanhf 90; Cephes' form gave 0.58x oneDNN's forward on AlexNet's
  // 4.6M-element tanh1.
  static T tanh_of(T v) {
    return L::tanh(v);
  }
  static void tanh(const float* x, float* y, int64_t n, bool nt) {
    map2<L>(
        x, nullptr, y, n, [](T v, T) { return tanh_of(v); }, nt);
  }
  static void sigmoid_bwd(const float* x, const float* dy, float* dx, int64_t n, bool nt) {
    const T one = L::set1(1.0f);
    map2<L>(
        x, dy, dx, n,
        [one](T v, T g) {
          const T s = one / (one + L::exp(-v));
          return g * s * (one - s);
        },
        nt);
  }
  static void tanh_bwd(const float* x, const float* dy, float* dx, int64_t n, bool nt) {
    const T one = L::set1(1.0f);
    map2<L>(
        x, dy, dx, n,
        [one](T v, T g) {
          const T t = tanh_of(v);
          return g * (one - t * t);
        },
        nt);
  }
};

enum class Path { avx512, avx2, scalar };

Path choose() {
  Path best = Path::scalar;
#ifdef __AVX2__
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) best = Path::avx2;
#endif
#ifdef __AVX512F__
  if (__builtin_cpu_supports("avx512f")) best = Path::avx512;
#endif
  const char* env = std::getenv("PRIMBENCH_SIMD");
  const std::string want = env ? env : "";
  if (want.empty()) return best;
  Path p;
  if (want == "avx512")
    p = Path::avx512;
  else if (want == "avx2")
    p = Path::avx2;
  else if (want == "scalar")
    p = Path::scalar;
  else
    throw InputError("PRIMBENCH_SIMD", "'" + want + "' is not avx512, avx2 or scalar");
  if (static_cast<int>(p) < static_cast<int>(best))
    throw InputError("PRIMBENCH_SIMD", "'" + want + "' is wider than this CPU or build runs");
  return p;
}

Path path() {
  static const Path p = choose();
  return p;
}

}  // namespace

const char* isa() {
  switch (path()) {
    case Path::avx512:
      return "avx512";
    case Path::avx2:
      return "avx2";
    default:
      return "scalar";
  }
}

// Each entry point dispatches once per call (a switch on a cached value).
#if defined(__AVX512F__)
#define PB_VMATH_AVX512(f, ...) \
  case Path::avx512:            \
    return Funcs<Avx512>::f(__VA_ARGS__);
#else
#define PB_VMATH_AVX512(f, ...)
#endif
#if defined(__AVX2__)
#define PB_VMATH_AVX2(f, ...) \
  case Path::avx2:            \
    return Funcs<Avx2>::f(__VA_ARGS__);
#else
#define PB_VMATH_AVX2(f, ...)
#endif
#define PB_VMATH_DISPATCH(f, ...)           \
  switch (path()) {                         \
    PB_VMATH_AVX512(f, __VA_ARGS__)         \
    PB_VMATH_AVX2(f, __VA_ARGS__)           \
    default:                                \
      return Funcs<Scalar>::f(__VA_ARGS__); \
  }

void exp(const float* x, float* y, int64_t n) {
  PB_VMATH_DISPATCH(exp, x, y, n)
}
float max(const float* x, int64_t n) {
  PB_VMATH_DISPATCH(max, x, n)
}
double dot(const float* a, const float* b, int64_t n) {
  double sum = 0;  // the products in fp32, their sum in fp64 (as exp_shifted_sum)
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}
double exp_shifted_sum(const float* x, float* y, int64_t n, float shift) {
  PB_VMATH_DISPATCH(exp_shifted_sum, x, y, n, shift)
}
void relu(const float* x, float* y, int64_t n, bool nt) {
  PB_VMATH_DISPATCH(relu, x, y, n, nt)
}
void relu_bwd(const float* x, const float* dy, float* dx, int64_t n, bool nt) {
  PB_VMATH_DISPATCH(relu_bwd, x, dy, dx, n, nt)
}
void sigmoid(const float* x, float* y, int64_t n, bool nt) {
  PB_VMATH_DISPATCH(sigmoid, x, y, n, nt)
}
void tanh(const float* x, float* y, int64_t n, bool nt) {
  PB_VMATH_DISPATCH(tanh, x, y, n, nt)
}
void sigmoid_bwd(const float* x, const float* dy, float* dx, int64_t n, bool nt) {
  PB_VMATH_DISPATCH(sigmoid_bwd, x, dy, dx, n, nt)
}
void tanh_bwd(const float* x, const float* dy, float* dx, int64_t n, bool nt) {
  PB_VMATH_DISPATCH(tanh_bwd, x, dy, dx, n, nt)
}

}  // namespace pb::vmath
