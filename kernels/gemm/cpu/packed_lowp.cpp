// Reduced-precision cpu/packed (packed_lowp.h). The loop nest is the packed SGEMM's, outermost
// first: jc (NC columns), pc (KC of the sum: pack op(B) into NR-column slivers, shared), ic (MC
// rows, one thread each, or all threads on one block when the rows are few: pack op(A) into
// MR-row slivers), jr, ir: the micro-kernel. What differs is the element: the sum runs in groups
// of G = 2 (bf16) or 4 (u8s8) consecutive k, which one vdpbf16ps / vpdpbusd lane multiplies and
// adds into one fp32 / int32 accumulator, so a packed sliver stores, per group of k, MR (or NR)
// words of G elements: (group * MR + row) * G + q. A k not divisible by G is padded with zeros
// (a zero weight adds nothing whatever the source).
//
// u8s8's source zero point: sum(A * (B - z)) = sum(A * B) - z * sum(A), the row sums of A taken
// from each packed sliver by vpdpbusd against ones (per KC block, so that every KC block's
// partial result is complete). The scales (alpha * a_scale[i] * b_scale, / c_scale for an s8
// output) apply per row in the epilogue.
//
// Partial sums across KC blocks: an f32 output accumulates in C (as the SGEMM does); a bf16 or
// s8 output must round once, so the partial results go to an fp32 panel (m x NC) and the last KC
// block adds it before the conversion.
#include "kernels/gemm/cpu/packed_lowp.h"

#include <omp.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#define PB_X86 1
#endif

#include "kernels/core/error.h"
#include "kernels/core/machine.h"
#include "kernels/core/vmath.h"
#include "kernels/gemm/cpu/packed_sgemm.h"

namespace pb {

std::string gemm_packed_lowp_unsupported(const DataType& dt) {
  if (dt.is_f32()) return "";
  if (dt.in == DataType::f16)
    return "dt f16: this CPU has no f16 dot-product instruction (AVX512_FP16) and cpu/packed has "
           "no f16 kernel";
#ifdef PB_X86
  if (std::string(vmath::isa()) != "avx512")
    return "dt " + dt.in_str() + ": cpu/packed's reduced-precision kernels need AVX-512 (SIMD " +
           "path in force: " + vmath::isa() + "); the AVX2 u8s8 route (vpmaddubsw) saturates " +
           "its int16 pair sums, so it is not offered";
  if (dt.in == DataType::bf16 && !__builtin_cpu_supports("avx512bf16"))
    return "dt bf16: this CPU has no AVX512_BF16 (vdpbf16ps)";
  if (dt.in == DataType::u8s8 &&
      !(__builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vbmi")))
    return "dt u8s8: this CPU has no AVX512_VNNI (vpdpbusd) or AVX512_VBMI (the packing's "
           "byte shuffle)";
  return "";
#else
  return "dt " + dt.in_str() + ": cpu/packed's reduced-precision kernels are x86 AVX-512 only";
#endif
}

#ifdef PB_X86
// GCC 12 reports its own intrinsics' undefined-start vectors (_mm512_undefined_*) as maybe
// uninitialized once they are inlined into target("avx512...") functions.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
namespace {

constexpr int kMr = 48, kNr = 8;

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// A 64-byte aligned area of `count` T in `v`, grown as needed.
template <class T>
T* scratch(std::vector<uint8_t>& v, size_t count) {
  if (v.size() < count * sizeof(T) + 64) v.resize(count * sizeof(T) + 64);
  const uintptr_t p = reinterpret_cast<uintptr_t>(v.data());
  return reinterpret_cast<T*>((p + 63) & ~uintptr_t(63));
}

struct Bf16 {
  using TA = uint16_t;
  using TB = uint16_t;
  static constexpr int G = 2;
  static constexpr int64_t kKc = 1024;  // a B sliver: 16 KB, in L1
};
struct U8s8 {
  using TA = int8_t;
  using TB = uint8_t;
  static constexpr int G = 4;
  static constexpr int64_t kKc = 2048;  // a B sliver: 16 KB
};

__mmask16 rows_mask(int rows) {
  return rows >= 16 ? __mmask16(0xFFFF) : rows <= 0 ? __mmask16(0) : __mmask16((1u << rows) - 1);
}

// What the micro-kernel does with its tile once the sum is done.
struct Epilogue {
  DataType::Out out;  // the type written at c (out_f32 also for the fp32 panel of partials)
  void* c;            // the tile's first element
  int64_t ldc;
  const float* scale;   // per row (u8s8), or nullptr: alpha for every row
  float alpha, beta;    // beta: on the old C (not read when 0)
  const int32_t* comp;  // u8s8: zero point * row sums of this KC block, or nullptr
  const float* panel;   // the fp32 partial sums of the earlier KC blocks, or nullptr
  int64_t ldp;
};

// acc: the tile's sums as fp32 (u8s8: compensated and converted); writes rows < mv of column j.
template <int V>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) inline void store_column(
    const __m512* acc, int j, int mv, const Epilogue& e) {
#pragma GCC unroll 3
  for (int v = 0; v < V; ++v) {
    const int r0 = 16 * v;
    const __mmask16 k = rows_mask(mv - r0);
    __m512 x = acc[v];
    x = e.scale ? _mm512_mul_ps(x, _mm512_maskz_loadu_ps(k, e.scale + r0))
                : _mm512_mul_ps(x, _mm512_set1_ps(e.alpha));
    if (e.panel) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(k, e.panel + j * e.ldp + r0));
    const __m512 vb = _mm512_set1_ps(e.beta);
    if (e.out == DataType::out_f32) {
      float* c = static_cast<float*>(e.c) + j * e.ldc + r0;
      if (e.beta != 0.0f) x = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(k, c), x);
      _mm512_mask_storeu_ps(c, k, x);
    } else if (e.out == DataType::out_bf16) {
      uint16_t* c = static_cast<uint16_t*>(e.c) + j * e.ldc + r0;
      if (e.beta != 0.0f) {
        const __m512i old = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(k, c));
        x = _mm512_fmadd_ps(vb, _mm512_castsi512_ps(_mm512_slli_epi32(old, 16)), x);
      }
      _mm256_mask_storeu_epi16(c, k, (__m256i)_mm512_cvtneps_pbh(x));
    } else {  // s8: round to nearest even (MXCSR's default), saturate
      int8_t* c = static_cast<int8_t*>(e.c) + j * e.ldc + r0;
      if (e.beta != 0.0f)
        x = _mm512_fmadd_ps(
            vb, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(k, c))), x);
      x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-128.0f)), _mm512_set1_ps(127.0f));
      _mm512_mask_cvtsepi32_storeu_epi8(c, k, _mm512_cvtps_epi32(x));
    }
  }
}

// ng groups of the sum: a sliver holds MR words per group, b NR words; NV columns, V vectors of
// 16 rows (rows >= mv masked at the store).
template <int V, int NV>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) void tile_bf16(
    int64_t ng, const uint16_t* a, const uint16_t* b, int mv, const Epilogue& e) {
  __m512 acc[NV][V];
#pragma GCC unroll 8
  for (int j = 0; j < NV; ++j)
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) acc[j][v] = _mm512_setzero_ps();
#pragma GCC unroll 2
  for (int64_t g = 0; g < ng; ++g) {
    const uint16_t* ag = a + g * kMr * 2;
    const uint16_t* bg = b + g * kNr * 2;
    __m512bh av[V];
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) av[v] = (__m512bh)_mm512_loadu_si512(ag + 32 * v);
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) {
      int32_t w;
      std::memcpy(&w, bg + 2 * j, 4);
      const __m512bh bj = (__m512bh)_mm512_set1_epi32(w);
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) acc[j][v] = _mm512_dpbf16_ps(acc[j][v], av[v], bj);
    }
  }
#pragma GCC unroll 8
  for (int j = 0; j < NV; ++j) store_column<V>(acc[j], j, mv, e);
}

template <int V, int NV>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512bf16"))) void tile_u8s8(
    int64_t ng, const int8_t* a, const uint8_t* b, int mv, const Epilogue& e) {
  __m512i acc[NV][V];
#pragma GCC unroll 8
  for (int j = 0; j < NV; ++j)
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) acc[j][v] = _mm512_setzero_si512();
#pragma GCC unroll 2
  for (int64_t g = 0; g < ng; ++g) {
    const int8_t* ag = a + g * kMr * 4;
    const uint8_t* bg = b + g * kNr * 4;
    __m512i av[V];
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) av[v] = _mm512_loadu_si512(ag + 64 * v);
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) {
      int32_t w;
      std::memcpy(&w, bg + 4 * j, 4);
      const __m512i bj = _mm512_set1_epi32(w);  // u8 x4: the unsigned operand
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) acc[j][v] = _mm512_dpbusd_epi32(acc[j][v], bj, av[v]);
    }
  }
#pragma GCC unroll 8
  for (int j = 0; j < NV; ++j) {
    __m512 f[V];
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) {
      __m512i s = acc[j][v];
      if (e.comp)
        s = _mm512_sub_epi32(s, _mm512_maskz_loadu_epi32(rows_mask(mv - 16 * v), e.comp + 16 * v));
      f[v] = _mm512_cvtepi32_ps(s);
    }
    store_column<V>(f, j, mv, e);
  }
}

template <class Tr>
using TileFn = void (*)(int64_t, const typename Tr::TA*, const typename Tr::TB*, int,
                        const Epilogue&);

template <class Tr, int V, int NV>
constexpr TileFn<Tr> tile_fn() {
  if constexpr (Tr::G == 2)
    return tile_bf16<V, NV>;
  else
    return tile_u8s8<V, NV>;
}

template <class Tr, int V, size_t... J>
constexpr std::array<TileFn<Tr>, kNr> tile_row(std::index_sequence<J...>) {
  return {tile_fn<Tr, V, static_cast<int>(J) + 1>()...};
}

// The tile for mv rows (V = ceil(mv / 16)) and nv columns.
template <class Tr>
TileFn<Tr> tile_for(int mv, int nv) {
  static constexpr std::array<std::array<TileFn<Tr>, kNr>, 3> table = {
      tile_row<Tr, 1>(std::make_index_sequence<kNr>()),
      tile_row<Tr, 2>(std::make_index_sequence<kNr>()),
      tile_row<Tr, 3>(std::make_index_sequence<kNr>())};
  return table[(mv - 1) / 16][nv - 1];
}

// op(A) rows [r0, r0 + mv) x sum [p0, p0 + kc) into one sliver (MR rows per group, zero-padded).
template <class Tr>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi"))) void pack_a(
    bool ta, const typename Tr::TA* a, int64_t lda, int64_t r0, int mv, int64_t p0, int64_t kc,
    typename Tr::TA* dst) {
  using T = typename Tr::TA;
  constexpr int G = Tr::G;
  const int64_t ng = ceil_div(kc, G), full = kc / G;
  if (ta) {  // row i of op(A) is column i of A: each group of G is one word
    int64_t g0 = 0;
    if (lda % G == 0) {  // word-aligned: the SGEMM's 8 x 8 transposes
      transpose_words(a + r0 * lda + p0, lda / G, mv, full, dst, kMr);
      g0 = full;
    }
    for (int64_t g = g0; g < ng; ++g)
      for (int r = 0; r < mv; ++r)
        for (int q = 0; q < G; ++q) {
          const int64_t p = g * G + q;
          dst[(g * kMr + r) * G + q] = p < kc ? a[(r0 + r) * lda + p0 + p] : T(0);
        }
    for (int64_t g = 0; g < ng && mv < kMr; ++g)
      std::memset(dst + (g * kMr + mv) * G, 0, (kMr - mv) * G * sizeof(T));
    return;
  }
  // Column p of A holds the rows contiguous: G columns (zero past kc) interleaved per 16 rows.
  for (int64_t g = 0; g < ng; ++g) {
    const T* col[G];
    for (int q = 0; q < G; ++q) {
      const int64_t p = g * G + q;
      col[q] = p < kc ? a + (p0 + p) * lda + r0 : nullptr;
    }
    for (int r = 0; r < kMr; r += 16) {
      const __mmask16 k = rows_mask(mv - r);
      __m512i out;
      if constexpr (G == 2) {
        static const __m512i idx =
            _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7,
                             22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
        const __m256i x0 =
            col[0] ? _mm256_maskz_loadu_epi16(k, col[0] + r) : _mm256_setzero_si256();
        const __m256i x1 =
            col[1] ? _mm256_maskz_loadu_epi16(k, col[1] + r) : _mm256_setzero_si256();
        out = _mm512_permutexvar_epi16(idx, _mm512_inserti64x4(_mm512_castsi256_si512(x0), x1, 1));
      } else {
        static const __m512i idx = _mm512_set_epi8(
            63, 47, 31, 15, 62, 46, 30, 14, 61, 45, 29, 13, 60, 44, 28, 12, 59, 43, 27, 11, 58, 42,
            26, 10, 57, 41, 25, 9, 56, 40, 24, 8, 55, 39, 23, 7, 54, 38, 22, 6, 53, 37, 21, 5, 52,
            36, 20, 4, 51, 35, 19, 3, 50, 34, 18, 2, 49, 33, 17, 1, 48, 32, 16, 0);
        __m512i v = _mm512_setzero_si512();
        if (col[0]) v = _mm512_inserti32x4(v, _mm_maskz_loadu_epi8(k, col[0] + r), 0);
        if (col[1]) v = _mm512_inserti32x4(v, _mm_maskz_loadu_epi8(k, col[1] + r), 1);
        if (col[2]) v = _mm512_inserti32x4(v, _mm_maskz_loadu_epi8(k, col[2] + r), 2);
        if (col[3]) v = _mm512_inserti32x4(v, _mm_maskz_loadu_epi8(k, col[3] + r), 3);
        out = _mm512_permutexvar_epi8(idx, v);
      }
      _mm512_storeu_si512(dst + (g * kMr + r) * G, out);
    }
  }
}

// op(B) sum [p0, p0 + kc) x columns [c0, c0 + nv) into one sliver (NR columns per group).
template <class Tr>
void pack_b(bool tb, const typename Tr::TB* b, int64_t ldb, int64_t p0, int64_t kc, int64_t c0,
            int nv, typename Tr::TB* dst) {
  using T = typename Tr::TB;
  constexpr int G = Tr::G;
  const int64_t ng = ceil_div(kc, G), full = kc / G;
  int64_t g0 = 0;
  if (!tb && ldb % G == 0) {  // column j of B: the sum contiguous, a group is a word
    transpose_words(b + c0 * ldb + p0, ldb / G, nv, full, dst, kNr);
    g0 = full;
    for (int64_t g = 0; g < full && nv < kNr; ++g)
      std::memset(dst + (g * kNr + nv) * G, 0, (kNr - nv) * G * sizeof(T));
  }
  for (int64_t g = g0; g < ng; ++g)
    for (int j = 0; j < kNr; ++j)
      for (int q = 0; q < G; ++q) {
        const int64_t p = g * G + q;
        const bool in = p < kc && j < nv;
        dst[(g * kNr + j) * G + q] = !in  ? T(0)
                                     : tb ? b[(p0 + p) * ldb + c0 + j]
                                          : b[(c0 + j) * ldb + p0 + p];
      }
}

// comp[r] = z * (sum of the packed sliver's row r), r < MR (u8s8).
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void row_sums(const int8_t* sliver,
                                                                     int64_t ng, int32_t z,
                                                                     int32_t* comp) {
  const __m512i ones = _mm512_set1_epi8(1);
  __m512i s[3] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512()};
  for (int64_t g = 0; g < ng; ++g)
    for (int v = 0; v < 3; ++v)
      s[v] = _mm512_dpbusd_epi32(s[v], ones, _mm512_loadu_si512(sliver + g * kMr * 4 + 64 * v));
  for (int v = 0; v < 3; ++v)
    _mm512_storeu_si512(comp + 16 * v, _mm512_mullo_epi32(s[v], _mm512_set1_epi32(z)));
}

// op(A) = A with at most kDirectMaxN columns of C (DeepBench's N = 1..64): A is read in place,
// each weight once; packing it would cost more than the few products it feeds. Each thread takes
// a range of 64-row blocks and walks the sum in chunks: per chunk and block, the G columns of
// each k group are interleaved in registers (unpack within 128-bit lanes, which permutes the
// rows: undone at the store) into an L1 buffer, and the kernel runs every group of up to 4
// columns of C over it, each group's sums waiting in a small per-thread state between chunks.
// Within a chunk the blocks follow each other, so the chunk's columns stream through contiguous
// rows and the pages they touch stay in the TLB.
constexpr int64_t kDirectMaxN = 64;
constexpr int kDirectRows = 64, kDirectCols = 4;

// A row's place in the interleaved block: vector q, element l (16 per vector) holds row
// L * 16 + q * 4 + e (u8s8: four unpacks of 16-row lanes; L = l / 4, e = l % 4) or
// (q / 2) * 32 + L * 8 + (q % 2) * 4 + e (bf16: two 32-row halves, unpacklo and unpackhi).
inline int interleaved_row(int G, int q, int l) {
  const int lane = l / 4, e = l % 4;
  return G == 4 ? lane * 16 + q * 4 + e : (q / 2) * 32 + lane * 8 + (q % 2) * 4 + e;
}

// The chunk [p0, p1) of the 64-row block at a (rows past mv and k past g.k zero) interleaved
// into u: 4 vectors per k group. u8s8 also adds the block's row sums (for the zero point) to
// `sums` (4 vectors, in the interleaved order).
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni"))) void interleave_u8s8(
    const int8_t* a, int64_t lda, int64_t k, int mv, int64_t p0, int64_t p1, __m512i* u,
    __m512i* sums) {
  const __mmask64 rmask = mv >= 64 ? ~__mmask64(0) : (__mmask64(1) << mv) - 1;
  const __m512i ones = _mm512_set1_epi8(1);
  __m512i s[4] = {sums[0], sums[1], sums[2], sums[3]};
  for (int64_t p = p0; p < p1; p += 4, u += 4) {
    __m512i x[4];
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q)
      x[q] = p + q < k ? _mm512_maskz_loadu_epi8(rmask, a + (p + q) * lda) : _mm512_setzero_si512();
    const __m512i t0 = _mm512_unpacklo_epi8(x[0], x[1]), t1 = _mm512_unpackhi_epi8(x[0], x[1]);
    const __m512i t2 = _mm512_unpacklo_epi8(x[2], x[3]), t3 = _mm512_unpackhi_epi8(x[2], x[3]);
    u[0] = _mm512_unpacklo_epi16(t0, t2);
    u[1] = _mm512_unpackhi_epi16(t0, t2);
    u[2] = _mm512_unpacklo_epi16(t1, t3);
    u[3] = _mm512_unpackhi_epi16(t1, t3);
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) s[q] = _mm512_dpbusd_epi32(s[q], ones, u[q]);
  }
#pragma GCC unroll 4
  for (int q = 0; q < 4; ++q) sums[q] = s[q];
}

__attribute__((target("avx512f,avx512bw,avx512vl"))) void interleave_bf16(const uint16_t* a,
                                                                          int64_t lda, int64_t k,
                                                                          int mv, int64_t p0,
                                                                          int64_t p1, __m512i* u) {
  const __mmask32 m0 = mv >= 32 ? ~__mmask32(0) : (__mmask32(1) << mv) - 1;
  const __mmask32 m1 = mv >= 64 ? ~__mmask32(0) : mv <= 32 ? 0 : (__mmask32(1) << (mv - 32)) - 1;
  for (int64_t p = p0; p < p1; p += 2, u += 4) {
    const uint16_t* c0 = a + p * lda;
    const bool second = p + 1 < k;
    const __m512i x0 = _mm512_maskz_loadu_epi16(m0, c0), y0 = _mm512_maskz_loadu_epi16(m1, c0 + 32);
    const __m512i x1 = second ? _mm512_maskz_loadu_epi16(m0, c0 + lda) : _mm512_setzero_si512();
    const __m512i y1 =
        second ? _mm512_maskz_loadu_epi16(m1, c0 + lda + 32) : _mm512_setzero_si512();
    u[0] = _mm512_unpacklo_epi16(x0, x1);
    u[1] = _mm512_unpackhi_epi16(x0, x1);
    u[2] = _mm512_unpacklo_epi16(y0, y1);
    u[3] = _mm512_unpackhi_epi16(y0, y1);
  }
}

// NV columns of C over ng interleaved groups: acc[j * 4 + q] += u[q] . b-word of column j.
// bw: the columns' words, `ldw` apart per group.
template <int G, int NV>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512bf16"))) void direct_cols(
    const __m512i* u, int64_t ng, const int32_t* bw, int64_t ldw, __m512i* state, bool first) {
  __m512i acc[NV][4];
#pragma GCC unroll 8
  for (int j = 0; j < NV; ++j)
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) acc[j][q] = first ? _mm512_setzero_si512() : state[j * 4 + q];
  for (int64_t grp = 0; grp < ng; ++grp, u += 4, bw += ldw) {
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) {
      const __m512i bj = _mm512_set1_epi32(bw[j]);
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) {
        if constexpr (G == 4)
          acc[j][q] = _mm512_dpbusd_epi32(acc[j][q], bj, u[q]);
        else
          acc[j][q] = _mm512_castps_si512(
              _mm512_dpbf16_ps(_mm512_castsi512_ps(acc[j][q]), (__m512bh)u[q], (__m512bh)bj));
      }
    }
  }
#pragma GCC unroll 8
  for (int j = 0; j < NV; ++j)
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) state[j * 4 + q] = acc[j][q];
}

// The finished sums of nv columns (state: 4 vectors per column, interleaved rows; u8s8: `sums`
// the row sums) through the epilogue into C's columns col0.. .
template <int G>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) void direct_store(
    const LowpGemm& g, const __m512i* state, const __m512i* sums, int nv, int64_t col0,
    const float* scale, float beta_c, int64_t r0, int mv) {
  Epilogue e{};
  e.out = g.dt.out;
  e.ldc = g.ldc;
  e.alpha = g.alpha;
  e.beta = beta_c;
  const size_t out_size = g.dt.out == DataType::out_f32 ? 4 : g.dt.out == DataType::out_s8 ? 1 : 2;
  alignas(64) float vals[64], rows[64];
  for (int j = 0; j < nv; ++j) {
    for (int q = 0; q < 4; ++q) {
      __m512i v = state[j * 4 + q];
      if (G == 4) v = _mm512_sub_epi32(v, _mm512_mullo_epi32(sums[q], _mm512_set1_epi32(g.b_zero)));
      _mm512_store_ps(vals + 16 * q, G == 4 ? _mm512_cvtepi32_ps(v) : _mm512_castsi512_ps(v));
    }
    for (int q = 0; q < 4; ++q)
      for (int l = 0; l < 16; ++l) rows[interleaved_row(G, q, l)] = vals[q * 16 + l];
    for (int h = 0; h < 4 && 16 * h < mv; ++h) {
      const __m512 f = _mm512_load_ps(rows + 16 * h);
      e.scale = scale ? scale + r0 + 16 * h : nullptr;
      e.c = static_cast<char*>(g.c) + ((col0 + j) * g.ldc + r0 + 16 * h) * out_size;
      store_column<1>(&f, 0, mv - 16 * h, e);
    }
  }
}

template <int G>
using ColsFn = void (*)(const __m512i*, int64_t, const int32_t*, int64_t, __m512i*, bool);

template <class Tr>
void direct(const LowpGemm& g, const float* scale, float beta_c, int nt) {
  using TB = typename Tr::TB;
  constexpr int G = Tr::G;
  const TB* b = static_cast<const TB*>(g.b);
  const int64_t ng = ceil_div(g.k, G);
  // op(B) as words of G consecutive k (zero past k), ldw per group: broadcast as they are.
  const int64_t ldw = ceil_div(g.n, kDirectCols) * kDirectCols;
  static thread_local std::vector<uint8_t> bw_buf;
  int32_t* bw = scratch<int32_t>(bw_buf, ng * ldw);
  for (int64_t grp = 0; grp < ng; ++grp)
    for (int64_t j = 0; j < ldw; ++j) {
      TB w[G] = {};
      for (int q = 0; q < G && j < g.n && grp * G + q < g.k; ++q) {
        const int64_t p = grp * G + q;
        w[q] = g.tb ? b[p * g.ldb + j] : b[j * g.ldb + p];
      }
      std::memcpy(bw + grp * ldw + j, w, 4);
    }
  static constexpr ColsFn<G> cols[kDirectCols] = {direct_cols<G, 1>, direct_cols<G, 2>,
                                                  direct_cols<G, 3>, direct_cols<G, 4>};
  // Chunks of the sum: short while N is small (the chunk's columns are the streams the
  // prefetchers follow: 32 measured best of 4..64 on 7680 x {1, 4} x 2560), longer when each
  // interleaved chunk serves many columns (the states' loads and stores amortised).
  const int64_t kc = g.n <= 4 ? 32 : 128;
  const int64_t n_cg = ceil_div(g.n, kDirectCols);
  const int64_t blocks = ceil_div(g.m, kDirectRows);
  const int threads = static_cast<int>(std::min<int64_t>(nt, blocks));
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    const int t = omp_get_thread_num(), tn = omp_get_num_threads();
    const int64_t b0 = blocks * t / tn, b1 = blocks * (t + 1) / tn;
    // Per block: 4 vectors per column of C, and 4 of row sums (u8s8).
    const int64_t per_block = n_cg * kDirectCols * 4 + 4;
    static thread_local std::vector<uint8_t> state_buf, u_buf;
    __m512i* state = scratch<__m512i>(state_buf, (b1 - b0) * per_block);
    __m512i* u = scratch<__m512i>(u_buf, ceil_div(kc, G) * 4);
    for (int64_t p0 = 0; p0 < g.k; p0 += kc) {
      const int64_t p1 = std::min(g.k, p0 + kc), ngc = ceil_div(p1 - p0, G);
      const bool first = p0 == 0, last = p1 == g.k;
      for (int64_t blk = b0; blk < b1; ++blk) {
        const int64_t r0 = blk * kDirectRows;
        const int mv = static_cast<int>(std::min<int64_t>(kDirectRows, g.m - r0));
        __m512i* st = state + (blk - b0) * per_block;
        __m512i* sums = st + n_cg * kDirectCols * 4;
        if constexpr (G == 4) {
          if (first)
            for (int q = 0; q < 4; ++q) sums[q] = _mm512_setzero_si512();
          interleave_u8s8(static_cast<const int8_t*>(g.a) + r0, g.lda, g.k, mv, p0, p1, u, sums);
        } else {
          interleave_bf16(static_cast<const uint16_t*>(g.a) + r0, g.lda, g.k, mv, p0, p1, u);
        }
        for (int64_t cg = 0; cg < n_cg; ++cg) {
          const int nv = static_cast<int>(std::min<int64_t>(kDirectCols, g.n - cg * kDirectCols));
          __m512i* sc = st + cg * kDirectCols * 4;
          cols[nv - 1](u, ngc, bw + (p0 / G) * ldw + cg * kDirectCols, ldw, sc, first);
          if (last) direct_store<G>(g, sc, sums, nv, cg * kDirectCols, scale, beta_c, r0, mv);
        }
      }
    }
  }
}

template <class Tr>
void driver(const LowpGemm& g) {
  using TA = typename Tr::TA;
  using TB = typename Tr::TB;
  constexpr int G = Tr::G;
  const bool quant = G == 4;
  const TA* a = static_cast<const TA*>(g.a);
  const TB* b = static_cast<const TB*>(g.b);
  const int64_t m = g.m, n = g.n, k = g.k;
  const int64_t kc_max = Tr::kKc;
  const int64_t kcp_max = ceil_div(kc_max, G) * G;
  // The A block takes half of L2, the B panel a quarter of L3, as in the SGEMM.
  const int64_t l2 = static_cast<int64_t>(cache_bytes(2, 1 << 20));
  const int64_t l3 = static_cast<int64_t>(cache_bytes(3, 8 << 20));
  const int64_t mc_max = std::max<int64_t>(kMr, l2 / 2 / (kcp_max * sizeof(TA)) / kMr * kMr);
  const int64_t nc_max = std::max<int64_t>(kNr, l3 / 4 / (kcp_max * sizeof(TB)) / kNr * kNr);
  const int nt = omp_in_parallel() ? 1 : omp_get_max_threads();
  const int64_t n_sl = ceil_div(m, kMr);
  const int64_t n_ic = std::min(n_sl, ceil_div(ceil_div(m, mc_max), nt) * nt);
  const int64_t mc = ceil_div(n_sl, n_ic) * kMr;
  const bool split_rows = n_ic >= nt;
  const bool typed_out = g.dt.out != DataType::out_f32;
  const bool panel = typed_out && k > kc_max;  // partial sums wait in fp32

  // Per-row scales: alpha * a_scale * b_scale (/ c_scale for s8), padded to whole slivers.
  static thread_local std::vector<uint8_t> scale_buf, b_buf, a_shared_buf, panel_buf,
      comp_shared_buf;
  float* scale = nullptr;
  float beta_c = g.beta;  // beta on C in C's units
  if (quant) {
    scale = scratch<float>(scale_buf, n_sl * kMr);
    const float div = g.dt.out == DataType::out_s8 ? g.c_scale : 1.0f;
    for (int64_t i = 0; i < n_sl * kMr; ++i)
      scale[i] = i < m ? g.alpha * g.a_scale[i] * g.b_scale / div : 0.0f;
    if (g.dt.out != DataType::out_s8) beta_c = g.beta * g.c_scale;
  }
  if (!g.ta && n <= kDirectMaxN) return direct<Tr>(g, scale, beta_c, nt);
  TB* bp = scratch<TB>(b_buf, kcp_max * ceil_div(std::min(n, nc_max), kNr) * kNr);
  TA* ap_shared = split_rows ? nullptr : scratch<TA>(a_shared_buf, mc * kcp_max);
  int32_t* comp_shared = split_rows || !quant ? nullptr : scratch<int32_t>(comp_shared_buf, mc);
  float* pn = panel ? scratch<float>(panel_buf, m * std::min(n, nc_max)) : nullptr;
  const size_t out_size = typed_out ? (g.dt.out == DataType::out_s8 ? 1 : 2) : 4;

#pragma omp parallel num_threads(nt) if (nt > 1)
  {
    static thread_local std::vector<uint8_t> a_buf, comp_buf;
    TA* ap_own = split_rows ? scratch<TA>(a_buf, mc * kcp_max) : nullptr;
    int32_t* comp_own = split_rows && quant ? scratch<int32_t>(comp_buf, mc) : nullptr;
    for (int64_t jc = 0; jc < n; jc += nc_max) {
      const int64_t nc = std::min(nc_max, n - jc), n_jr = ceil_div(nc, kNr);
      for (int64_t pc = 0; pc < k; pc += kc_max) {
        const int64_t kc = std::min(kc_max, k - pc), ng = ceil_div(kc, G);
        const bool last = pc + kc_max >= k;
#pragma omp for schedule(static)
        for (int64_t s = 0; s < n_jr; ++s) {
          const int nv = static_cast<int>(std::min<int64_t>(kNr, nc - s * kNr));
          pack_b<Tr>(g.tb, b, g.ldb, pc, kc, jc + s * kNr, nv, bp + s * kNr * ng * G);
        }
        auto pack_sliver = [&](int64_t ic, int64_t mcv, int64_t s, TA* ap, int32_t* comp) {
          const int mv = static_cast<int>(std::min<int64_t>(kMr, mcv - s * kMr));
          TA* sl = ap + s * kMr * ng * G;
          pack_a<Tr>(g.ta, a, g.lda, ic + s * kMr, mv, pc, kc, sl);
          if constexpr (G == 4)
            if (g.b_zero != 0) row_sums(sl, ng, g.b_zero, comp + s * kMr);
        };
        // Every B sliver jr in [jr0, jr1) against every A sliver of the block.
        auto tiles = [&](int64_t ic, int64_t mcv, const TA* ap, const int32_t* comp, int64_t jr0,
                         int64_t jr1) {
          const int64_t n_ir = ceil_div(mcv, kMr);
          for (int64_t jr = jr0; jr < jr1; ++jr) {
            const int nv = static_cast<int>(std::min<int64_t>(kNr, nc - jr * kNr));
            const int64_t col = jc + jr * kNr;
            for (int64_t ir = 0; ir < n_ir; ++ir) {
              const int mv = static_cast<int>(std::min<int64_t>(kMr, mcv - ir * kMr));
              const int64_t row = ic + ir * kMr;
              Epilogue e{};
              e.scale = scale ? scale + row : nullptr;
              e.alpha = g.alpha;
              e.comp = quant && g.b_zero != 0 ? comp + ir * kMr : nullptr;
              float* pt = pn ? pn + (jr * kNr) * m + row : nullptr;
              if (panel && !last) {  // an fp32 partial into the panel
                e.out = DataType::out_f32;
                e.c = pt;
                e.ldc = m;
                e.beta = pc == 0 ? 0.0f : 1.0f;
              } else {
                e.out = g.dt.out;
                e.c = static_cast<char*>(g.c) + (col * g.ldc + row) * out_size;
                e.ldc = g.ldc;
                // An f32 output accumulates in C across KC blocks.
                e.beta = pc == 0 || panel ? beta_c : 1.0f;
                e.panel = panel ? pt : nullptr;
                e.ldp = m;
              }
              tile_for<Tr>(mv, nv)(ng, ap + ir * kMr * ng * G, bp + jr * kNr * ng * G, mv, e);
            }
          }
        };
        if (split_rows) {
#pragma omp for schedule(dynamic, 1)
          for (int64_t blk = 0; blk < n_ic; ++blk) {
            const int64_t s0 = blk * n_sl / n_ic, s1 = (blk + 1) * n_sl / n_ic;
            const int64_t ic = s0 * kMr, mcv = std::min(s1 * kMr, m) - ic;
            for (int64_t s = 0; s < ceil_div(mcv, kMr); ++s)
              pack_sliver(ic, mcv, s, ap_own, comp_own);
            tiles(ic, mcv, ap_own, comp_own, 0, n_jr);
          }
        } else {
          for (int64_t blk = 0; blk < n_ic; ++blk) {
            const int64_t s0 = blk * n_sl / n_ic, s1 = (blk + 1) * n_sl / n_ic;
            const int64_t ic = s0 * kMr, mcv = std::min(s1 * kMr, m) - ic;
#pragma omp for schedule(static)
            for (int64_t s = 0; s < ceil_div(mcv, kMr); ++s)
              pack_sliver(ic, mcv, s, ap_shared, comp_shared);
#pragma omp for schedule(static)
            for (int64_t jr = 0; jr < n_jr; ++jr)
              tiles(ic, mcv, ap_shared, comp_shared, jr, jr + 1);
          }
        }
      }
    }
  }
}

}  // namespace
#pragma GCC diagnostic pop
#endif

void gemm_packed_lowp(const LowpGemm& g) {
  const std::string why = gemm_packed_lowp_unsupported(g.dt);
  if (!why.empty()) throw Unsupported(why);
  if (g.m <= 0 || g.n <= 0 || g.k <= 0)
    throw InputError("gemm", "cpu/packed reduced precision needs m, n, k >= 1");
#ifdef PB_X86
  if (g.dt.in == DataType::bf16)
    driver<Bf16>(g);
  else
    driver<U8s8>(g);
#endif
}

}  // namespace pb
