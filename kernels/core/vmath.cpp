// SLEEF-backed element-wise math (the sigmoid and the softmax on AVX2 and tanh on AVX-512 on
// our own exp and polynomial, below): one generic loop per function over a vector "lane type"
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

#ifdef __AVX512F__
// tanh on the AVX-512 path: a degree-7 polynomial per interval of |x|, its coefficients picked by
// a 16-lane permute. Intervals: [0, 1/8), then each binade from 1/8 to 8 in halves ([1/8, 3/16),
// [3/16, 1/4), ... , [6, 8)), then [8, 9]; |x| is clamped at 9, where tanh rounds to 1 in fp32.
// The interval is the top 9 bits of |x| (exponent and first mantissa bit) less 247, at least 0.
// Per interval, the polynomial in t = |x| - centre interpolates tanh at the 8 Chebyshev nodes
// (fp64, then rounded to fp32); on [0, 1/8) it is t times such a fit of tanh(t)/t, so that the
// constant term is 0 and tiny |x| give x exactly. tools/fit_tanh.py writes these tables.
// Measured on every third float of [0, 30] against fp64 tanh: 1.39 ULP at most (SLEEF's u35
// tanhf: 3.5), 12-13 cycles a vector against SLEEF's 21-22 (one core, in L1, Xeon family 6
// model 207).
namespace tanh_pw {
constexpr float kCtr[16] = {0.0f,  0.15625f, 0.21875f, 0.3125f, 0.4375f, 0.625f, 0.875f, 1.25f,
                            1.75f, 2.5f,     3.5f,     5.0f,    7.0f,    8.5f,   8.5f,   8.5f};
constexpr float kC[8][16] = {
    {0.0f, 0.15499073266983032f, 0.21532633900642395f, 0.3027097284793854f, 0.4115700423717499f,
     0.5545997023582458f, 0.7039055824279785f, 0.8482836484909058f, 0.9413755536079407f,
     0.9866142868995667f, 0.9981778860092163f, 0.9999092221260071f, 0.9999983310699463f,
     0.9999999403953552f, 0.9999999403953552f, 0.9999999403953552f},
    {1.0f, 0.975977897644043f, 0.9536345601081848f, 0.9083667993545532f, 0.8306100964546204f,
     0.692419171333313f, 0.5045168995857239f, 0.280414879322052f, 0.11381209641695023f,
     0.026592228561639786f, 0.003640884766355157f, 0.00018158218881580979f, 3.326089654365205e-06f,
     1.6559749838052085e-07f, 1.6559749838052085e-07f, 1.6559749838052085e-07f},
    {-4.256855423712125e-10f, -0.15126752853393555f, -0.205342635512352f, -0.27497148513793945f,
     -0.3418542444705963f, -0.3840154707431793f, -0.3551322817802429f, -0.23787140846252441f,
     -0.10713987052440643f, -0.026236096397042274f, -0.0036342856474220753f,
     -0.00018172165437135845f, -3.3289836665062467e-06f, -1.6559958737616398e-07f,
     -1.6559958737616398e-07f, -1.6559958737616398e-07f},
    {-0.333333283662796f, -0.3018808960914612f, -0.2736625075340271f, -0.2195523977279663f,
     -0.1361730545759201f, -0.01783151924610138f, 0.08180730044841766f, 0.10831084847450256f,
     0.06292152404785156f, 0.017020875588059425f, 0.002414005808532238f, 0.000121055927593261f,
     2.2180249743541935e-06f, 1.1039875857932202e-07f, 1.1039875857932202e-07f,
     1.1039875857932202e-07f},
    {-2.50089351538918e-06f, 0.09721121937036514f, 0.12737426161766052f, 0.15811726450920105f,
     0.16999587416648865f, 0.1378958821296692f, 0.060795869678258896f, -0.01258306484669447f,
     -0.023523712530732155f, -0.008051206357777119f, -0.0011974850203841925f,
     -5.9720154240494594e-05f, -1.0943963388854172e-06f, -5.515721213100733e-08f,
     -5.515721213100733e-08f, -5.515721213100733e-08f},
    {0.13338741660118103f, 0.1072484701871872f, 0.08498558402061462f, 0.045506399124860764f,
     -0.006116050761193037f, -0.05514277517795563f, -0.058850619941949844f, -0.019202494993805885f,
     0.0036969224456697702f, 0.0028598576318472624f, 0.0004721356090158224f,
     2.4011977075133473e-05f, 4.403401590025169e-07f, 2.207038285462204e-08f,
     2.207038285462204e-08f, 2.207038285462204e-08f},
    {-0.0005687630618922412f, -0.05233757942914963f, -0.06526260077953339f, -0.07237096130847931f,
     -0.06162182241678238f, -0.024057308211922646f, 0.012955037876963615f, 0.015073806047439575f,
     0.002087871078401804f, -0.0006980542093515396f, -0.00015722689568065107f,
     -9.256554221792612e-06f, -1.702697858263491e-07f, -7.626819176209665e-09f,
     -7.626819176209665e-09f, -7.626819176209665e-09f},
    {-0.051465705037117004f, -0.03635969012975693f, -0.022307591512799263f, -4.99339985253755e-05f,
     0.022560523822903633f, 0.029521862044930458f, 0.011089721694588661f, -0.004461708944290876f,
     -0.0019624249543994665f, 6.316752842394635e-05f, 4.1689654608489946e-05f,
     2.554783122832305e-06f, 4.7164270711164136e-08f, 2.1619448453691348e-09f,
     2.1619448453691348e-09f, 2.1619448453691348e-09f}};
}  // namespace tanh_pw

#pragma GCC diagnostic push
// GCC 12 warns inside the _mm512 intrinsics (their _mm512_undefined pass-through operands):
// -Wmaybe-uninitialized at -O2, -Wuninitialized at the sanitizer builds' -O1.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
__m512 tanh512(__m512 x) {
  // min(9, NaN) is the NaN (the second operand), which the polynomial keeps.
  const __m512 ax = _mm512_min_ps(_mm512_set1_ps(9.0f), _mm512_abs_ps(x));
  const __m512i i = _mm512_max_epi32(
      _mm512_sub_epi32(_mm512_srli_epi32(_mm512_castps_si512(ax), 22), _mm512_set1_epi32(247)),
      _mm512_setzero_si512());
  const __m512 t = _mm512_sub_ps(ax, _mm512_permutexvar_ps(i, _mm512_loadu_ps(tanh_pw::kCtr)));
  __m512 p = _mm512_permutexvar_ps(i, _mm512_loadu_ps(tanh_pw::kC[7]));
  for (int j = 6; j >= 0; --j)
    p = _mm512_fmadd_ps(p, t, _mm512_permutexvar_ps(i, _mm512_loadu_ps(tanh_pw::kC[j])));
  const __m512i sign = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(INT32_MIN));
  return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(p), sign));
}
#pragma GCC diagnostic pop
#endif

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
  static T own_exp(T v) { return exp(v); }  // the sigmoid's and softmax's: SLEEF's here
  static T tanh(T v) { return tanh512(v); }
};
#endif
#ifdef __AVX2__
// e^x for the sigmoid and the softmax on the AVX2 path: x = k ln2 + r (ln2 in two parts, FMA), |r|
// <= ln2/2, e^r = 1 + r + r^2 P(r) with Cephes' degree-5 minimax P, times 2^k built as two powers
// of two (so that k from -150 to 128 gives denormals and infinity as they fall). NaN stays NaN: the
// clamp's max and min return their second operand, x, where it is NaN.
// Measured on every third float of |x| < 100 against fp64: 1.01 ULP at most (SLEEF's u10: 1.0),
// and the sigmoid on it 2.48 ULP (tests/test_vmath.cpp pins 3). SLEEF's expf is a call of some
// 20 instructions: on its own, the sigmoid ran AlexNet's sigmoid1 (4.6M elements) at 0.79x
// oneDNN's forward, bound by the arithmetic (Zen 3, 2 threads, 1.89 against 1.49 ms), and it
// took 56% of the softmax's time on 16 x 10000.
inline __m256 exp_avx2(__m256 x0) {
  const __m256 x = _mm256_min_ps(_mm256_set1_ps(89.0f), _mm256_max_ps(_mm256_set1_ps(-104.0f), x0));
  const __m256 k = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(k, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  const __m256 y = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
  const __m256i ki = _mm256_cvtps_epi32(k), bias = _mm256_set1_epi32(127);
  const __m256i k1 = _mm256_srai_epi32(ki, 1), k2 = _mm256_sub_epi32(ki, k1);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k1, bias), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k2, bias), 23));
  return _mm256_mul_ps(_mm256_mul_ps(y, s1), s2);
}

struct Avx2 {
  using T = __m256;
  static constexpr int W = 8;
  static T load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, T v) { _mm256_storeu_ps(p, v); }
  static void stream(float* p, T v) { _mm256_stream_ps(p, v); }  // p 32-byte aligned
  static T set1(float x) { return _mm256_set1_ps(x); }
  static T exp(T v) { return Sleef_expf8_u10avx2(v); }
  static T own_exp(T v) { return exp_avx2(v); }
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
  static T own_exp(T v) { return exp(v); }
  static T tanh(T v) { return Sleef_tanhf_u35(v); }
};

// out[i] = f(a[i], b[i]) for full vectors, then the tail through buffers padded with `pad` (a)
// and zeros (b). `b` may be null (unary functions get a zero vector). nt: non-temporal stores (out
// must then be aligned to the vector; else plain stores), for outputs larger than the caches: they
// skip reading the destination lines in first, a third of the traffic of a unary function.
template <class L, class F>
void map2(const float* a, const float* b, float* out, int64_t n, F f, bool nt = false,
          float pad = 0.0f) {
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
  float ta[L::W], tb[L::W] = {}, to[L::W];
  std::fill(ta, ta + L::W, pad);
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
  // The sum as the exponentials are stored: each lane adds 32 of them in fp32, and the blocks'
  // lanes add in fp64 (1e4 similar fp32 terms in 16 lanes drift by about 1e-5). A second pass
  // over y for the sum, in fp64, held the softmax of 16 x 10000 at 0.73x oneDNN's forward.
  static double exp_shifted_sum(const float* x, float* y, int64_t n, float shift) {
    const T s = L::set1(shift);
    constexpr int64_t kBlock = 32 * L::W;
    double sum = 0;
    float lanes[L::W];
    for (int64_t b = 0; b < n; b += kBlock) {
      T acc = L::set1(0.0f);
      // (The tail padded with -inf: its exponentials are 0.)
      map2<L>(
          x + b, nullptr, y + b, std::min(kBlock, n - b),
          [s, &acc](T v, T) {
            const T e = L::own_exp(v - s);
            acc += e;
            return e;
          },
          false, -INFINITY);
      L::store(lanes, acc);
      for (int l = 0; l < L::W; ++l) sum += lanes[l];
    }
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
        x, nullptr, y, n, [one](T v, T) { return one / (one + L::own_exp(-v)); }, nt);
  }
  // tanh: the piecewise polynomial above on AVX-512, SLEEF's 3.5-ULP tanhf on the other paths.
  // SLEEF's took 30 cycles a 16-lane vector on AVX-512 in a first measurement (21-22 in
  // another), where Cephes' form on SLEEF's 1.0-ULP expf (an odd polynomial below |x| = 0.625,
  // else 1 - 2 / (exp(2|x|) + 1)) took 38 and SLEEF's 1.0-ULP tanhf 90; Cephes' form gave 0.58x
  // oneDNN's forward on AlexNet's 4.6M-element tanh1, SLEEF's u35 0.67-0.73. The same form with
  // its own degree-6 exp and a reciprocal estimate took 20 cycles (1.7 ULP).
  static T tanh_of(T v) { return L::tanh(v); }
  static void tanh(const float* x, float* y, int64_t n, bool nt) {
    map2<L>(
        x, nullptr, y, n, [](T v, T) { return tanh_of(v); }, nt);
  }
  static void sigmoid_bwd(const float* x, const float* dy, float* dx, int64_t n, bool nt) {
    const T one = L::set1(1.0f);
    map2<L>(
        x, dy, dx, n,
        [one](T v, T g) {
          const T s = one / (one + L::own_exp(-v));
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
