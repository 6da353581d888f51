// Internal to cpu/packed's reduced-precision GEMM (packed_lowp.cpp: the packed loop nest;
// packed_lowp_direct.cpp: the in-place path for few columns): the element types, the cache
// scratch, the group dot product and the epilogue their micro-kernels share. The group dot
// product (dot, Acc) also serves cpu/direct's reduced-precision convolution tiles. x86 AVX-512
// only; include it between the includer's diagnostic push and pop (GCC 12's false
// maybe-uninitialized reports on its own intrinsics).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <new>
#include <vector>

#include "kernels/core/threads.h"

#include "kernels/gemm/cpu/packed_lowp.h"
#include "kernels/gemm/cpu/packed_sgemm.h"

namespace pb::lowp {

constexpr int kMr = 48, kNr = 8;

inline int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// A 64-byte aligned area of `count` T in `v`, grown as needed.
// in_region: grown inside a parallel region (where PRIMBENCH_INJECT_BAD_ALLOC=scratch fails it).
template <class T>
T* scratch(std::vector<uint8_t>& v, size_t count, bool in_region = false) {
  if (v.size() < count * sizeof(T) + 64) {
    if (in_region && inject_scratch_bad_alloc()) throw std::bad_alloc();
    v.resize(count * sizeof(T) + 64);
  }
  const uintptr_t p = reinterpret_cast<uintptr_t>(v.data());
  return reinterpret_cast<T*>((p + 63) & ~uintptr_t(63));
}

// The u8s8 epilogue's per-row scales, alpha * a_scale[i] * b_scale (/ c_scale for an s8 C), zero
// past row m up to `rows` (whole slivers), in `buf`; *beta_c: beta in C's units. With
// LowpGemm::u8_a, the per-column scales (a_scale[j], j < n) the same way.
inline float* u8s8_row_scales(const LowpGemm& g, int64_t rows, std::vector<uint8_t>& buf,
                              float* beta_c) {
  float* scale = scratch<float>(buf, rows);
  const bool s8 = g.dt.out == DataType::out_s8;
  const float div = s8 ? g.c_scale : 1.0f;
  const int64_t count = g.u8_a ? g.n : g.m;
  for (int64_t i = 0; i < rows; ++i)
    scale[i] = i < count ? g.alpha * g.a_scale[i] * g.b_scale / div : 0.0f;
  *beta_c = s8 ? g.beta : g.beta * g.c_scale;
  return scale;
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
// u8s8 with the operands' roles swapped (LowpGemm::u8_a): A the u8 source, B the s8 weights; the
// zero point's compensation and the scales per column of C.
struct U8s8A {
  using TA = uint8_t;
  using TB = int8_t;
  static constexpr int G = 4;
  static constexpr int64_t kKc = 2048;
};

inline __mmask16 rows_mask(int rows) {
  return rows >= 16 ? __mmask16(0xFFFF) : rows <= 0 ? __mmask16(0) : __mmask16((1u << rows) - 1);
}

// G runs of 16 elements (src[q][0..15]; nullptr: zeros; elements >= the mask's count zero)
// interleaved into 16 words of G elements: element r * G + q of the result is src[q][r]. The
// packs' group step: G columns of A (or rows of B^T) into one 64-byte line of a sliver or tile.
template <int G, class T>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi"))) inline __m512i interleave16(
    const T* const* src, __mmask16 k) {
  if constexpr (G == 2) {
    static const __m512i idx =
        _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6,
                         21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    const __m256i x0 = src[0] ? _mm256_maskz_loadu_epi16(k, src[0]) : _mm256_setzero_si256();
    const __m256i x1 = src[1] ? _mm256_maskz_loadu_epi16(k, src[1]) : _mm256_setzero_si256();
    return _mm512_permutexvar_epi16(idx, _mm512_inserti64x4(_mm512_castsi256_si512(x0), x1, 1));
  } else {
    static const __m512i idx = _mm512_set_epi8(
        63, 47, 31, 15, 62, 46, 30, 14, 61, 45, 29, 13, 60, 44, 28, 12, 59, 43, 27, 11, 58, 42, 26,
        10, 57, 41, 25, 9, 56, 40, 24, 8, 55, 39, 23, 7, 54, 38, 22, 6, 53, 37, 21, 5, 52, 36, 20,
        4, 51, 35, 19, 3, 50, 34, 18, 2, 49, 33, 17, 1, 48, 32, 16, 0);
    __m512i v = _mm512_setzero_si512();
    if (src[0]) v = _mm512_inserti32x4(v, _mm_maskz_loadu_epi8(k, src[0]), 0);
    if (src[1]) v = _mm512_inserti32x4(v, _mm_maskz_loadu_epi8(k, src[1]), 1);
    if (src[2]) v = _mm512_inserti32x4(v, _mm_maskz_loadu_epi8(k, src[2]), 2);
    if (src[3]) v = _mm512_inserti32x4(v, _mm_maskz_loadu_epi8(k, src[3]), 3);
    return _mm512_permutexvar_epi8(idx, v);
  }
}

// op(A) = A^T rows [r0, r0 + rows) x sum [p0, p0 + kc) (row i of op(A) is column i of A, the
// sum contiguous) into `groups` groups of ds rows each: element (g * ds + r) * G + q, zero for
// rows >= `rows` and past kc. A group of G is one word, so whole groups are a word transpose
// where lda keeps the words aligned (the SGEMM's 8 x 8 transposes), the rest element by element.
// The packs of both reduced-precision drivers (48-row slivers, 16-row AMX tiles).
template <class T, int G>
inline void transpose_groups(const T* a, int64_t lda, int64_t r0, int rows, int64_t p0, int64_t kc,
                             int64_t groups, int ds, T* dst) {
  const int64_t full = kc / G < groups ? kc / G : groups;
  int64_t g0 = 0;
  if (lda % G == 0) {
    transpose_words(a + r0 * lda + p0, lda / G, rows, full, dst, ds);
    g0 = full;
  }
  for (int64_t g = g0; g < groups; ++g)
    for (int r = 0; r < rows; ++r)
      for (int q = 0; q < G; ++q) {
        const int64_t p = g * G + q;
        dst[(g * ds + r) * G + q] = p < kc ? a[(r0 + r) * lda + p0 + p] : T(0);
      }
  for (int64_t g = 0; g < groups && rows < ds; ++g)
    std::memset(dst + (g * ds + rows) * G, 0, (ds - rows) * G * sizeof(T));
}

// op(B)'s words for the kernels that broadcast them (the in-place paths for few columns): groups
// [grp0, grp0 + groups) of the sum, G consecutive elements of a column each (zero past k), of
// columns [0, cols), into dst[group * w + column], zero for columns cols..w-1. op(B) = B: a
// column's groups are words already (transpose_groups); B^T: G rows interleaved along them, a
// loop GCC vectorises. Element by element throughout, this took 5% of u8s8 2560x64x2560 on one
// thread before the others started (Zen 5 family 26).
template <class T, int G>
inline void b_words(const T* b, int64_t ldb, bool tb, int64_t k, int cols, int64_t grp0,
                    int64_t groups, int w, int32_t* dst) {
  static_assert(G * sizeof(T) == 4, "a group of the sum is one word");
  const int64_t p0 = grp0 * G;
  if (!tb) {
    const int64_t kc = k - p0 < groups * G ? k - p0 : groups * G;
    transpose_groups<T, G>(b, ldb, 0, cols, p0, kc, groups, w, reinterpret_cast<T*>(dst));
    return;
  }
  for (int64_t grp = 0; grp < groups; ++grp) {
    const T* r = b + (p0 + grp * G) * ldb;
    const int64_t left = k - p0 - grp * G;  // elements of this group inside k
    int32_t* out = dst + grp * w;
    if (left >= G) {
      for (int j = 0; j < cols; ++j) {
        uint32_t word = 0;
        for (int q = 0; q < G; ++q)
          word |= static_cast<uint32_t>(r[q * ldb + j]) << (q * 8 * sizeof(T));
        out[j] = static_cast<int32_t>(word);
      }
    } else {
      for (int j = 0; j < cols; ++j) {
        uint32_t word = 0;
        for (int q = 0; q < left; ++q)
          word |= static_cast<uint32_t>(r[q * ldb + j]) << (q * 8 * sizeof(T));
        out[j] = static_cast<int32_t>(word);
      }
    }
    for (int j = cols; j < w; ++j) out[j] = 0;
  }
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
  // LowpGemm::u8_a: per column of the tile, the scale (in place of scale and alpha) and the zero
  // point's compensation (in place of comp; nullptr for a zero point 0).
  const float* col_scale;
  const int32_t* col_comp;
};

// The epilogue of the tile whose first element is C(row, col), in the KC block from pc of a
// panel of columns from jc: before the last block of a typed output (`panel`), an fp32 partial
// into the panel `pn` (m rows; beta 0 in the first block, 1 after); else into C, an f32 output
// accumulating there across KC blocks, a typed one adding the panel's partials. scale: the
// per-row scales (u8s8) or nullptr; beta_c: beta in C's units. comp is left to the caller.
inline Epilogue tile_epilogue(const LowpGemm& g, const float* scale, float beta_c, float* pn,
                              bool panel, int64_t pc, bool last, int64_t row, int64_t col,
                              int64_t jc) {
  Epilogue e{};
  e.scale = scale ? scale + row : nullptr;
  e.alpha = g.alpha;
  float* pt = pn ? pn + (col - jc) * g.m + row : nullptr;
  if (panel && !last) {
    e.out = DataType::out_f32;
    e.c = pt;
    e.ldc = g.m;
    e.beta = pc == 0 ? 0.0f : 1.0f;
  } else {
    e.out = g.dt.out;
    e.c = static_cast<char*>(g.c) + (col * g.ldc + row) * static_cast<int64_t>(g.dt.out_bytes());
    e.ldc = g.ldc;
    e.beta = pc == 0 || panel ? beta_c : 1.0f;
    e.panel = panel ? pt : nullptr;
    e.ldp = g.m;
  }
  return e;
}

// acc: the tile's sums as fp32 (u8s8: compensated and converted); writes rows < mv of column j.
template <int V>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) inline void store_column(
    const __m512* acc, int j, int mv, const Epilogue& e) {
#pragma GCC unroll 3
  for (int v = 0; v < V; ++v) {
    const int r0 = 16 * v;
    const __mmask16 k = rows_mask(mv - r0);
    __m512 x = acc[v];
    x = e.scale       ? _mm512_mul_ps(x, _mm512_maskz_loadu_ps(k, e.scale + r0))
        : e.col_scale ? _mm512_mul_ps(x, _mm512_set1_ps(e.col_scale[j]))
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

// acc += a . b over one group of G consecutive k per 32-bit lane: u8 (b, the unsigned operand)
// x s8 (a) into int32 lanes (vpdpbusd), or bf16 pairs into fp32 lanes (vdpbf16ps). The bf16
// accumulators stay __m512: held as integer vectors, GCC 12 spilled them in the packed tile
// (1760x128x1760 in bf16: 0.87 -> 1.40 ms).
__attribute__((target("avx512f,avx512vnni"))) inline __m512i dot(__m512i acc, __m512i b,
                                                                 __m512i a) {
  return _mm512_dpbusd_epi32(acc, b, a);
}
// The same with the roles swapped (U8s8A): a the u8 operand, b the s8 one.
__attribute__((target("avx512f,avx512vnni"))) inline __m512i dot_u8_a(__m512i acc, __m512i b,
                                                                      __m512i a) {
  return _mm512_dpbusd_epi32(acc, a, b);
}
// The accumulator of a group of G: int32 lanes for u8s8 (G = 4), fp32 for bf16 (G = 2).
template <int G>
struct Acc {
  using type = __m512i;
};
template <>
struct Acc<2> {
  using type = __m512;
};
__attribute__((target("avx512f,avx512bf16"))) inline __m512 dot(__m512 acc, __m512i b, __m512i a) {
  return _mm512_dpbf16_ps(acc, (__m512bh)a, (__m512bh)b);
}

// comp[r] = z * (the sum of row r of a packed s8 operand), r < 16 V (u8s8's zero point): ng
// group lines `ld` bytes apart, each holding V vectors of 16 rows x 4 bytes (a 48-row sliver:
// V = 3; an AMX tile: V = 1). Even and odd groups in their own sums, two chains of vpdpbusd.
template <int V>
__attribute__((target("avx512f,avx512bw,avx512vnni"))) inline void row_sums(const int8_t* p,
                                                                            int64_t ng, int64_t ld,
                                                                            int32_t z,
                                                                            int32_t* comp) {
  const __m512i ones = _mm512_set1_epi8(1);
  __m512i s0[V], s1[V];
  for (int v = 0; v < V; ++v) s0[v] = s1[v] = _mm512_setzero_si512();
  int64_t g = 0;
  for (; g + 1 < ng; g += 2)
    for (int v = 0; v < V; ++v) {
      s0[v] = dot(s0[v], ones, _mm512_loadu_si512(p + g * ld + 64 * v));
      s1[v] = dot(s1[v], ones, _mm512_loadu_si512(p + (g + 1) * ld + 64 * v));
    }
  if (g < ng)
    for (int v = 0; v < V; ++v) s0[v] = dot(s0[v], ones, _mm512_loadu_si512(p + g * ld + 64 * v));
  for (int v = 0; v < V; ++v)
    _mm512_storeu_si512(comp + 16 * v,
                        _mm512_mullo_epi32(_mm512_add_epi32(s0[v], s1[v]), _mm512_set1_epi32(z)));
}

// The in-place path for op(A) = A and N <= kDirectMaxN, or up to twice that where A is over
// half of the threads' L2 (packed_lowp_direct.cpp; the driver's rule in packed_lowp.cpp): `scale`
// the per-row scales (u8s8) or nullptr, `beta_c` beta in C's units, `nt` threads.
constexpr int64_t kDirectMaxN = 64;
template <class Tr>
void direct(const LowpGemm& g, const float* scale, float beta_c, int nt);
// op(A) = A^T with at most 64 columns, A read in place in tiles of C^T (packed_lowp_tn.cpp): the
// same arguments; false, having done nothing, where its rule leaves the product to the packed
// path (k not a multiple of the group, too few rows per thread, a packed A).
template <class Tr>
bool tn_tiles(const LowpGemm& g, const float* scale, float beta_c, int nt);
// The AMX path (packed_lowp_amx.cpp), where kernels/core/amx.h says the tiles run the type:
// the same arguments.
template <class Tr>
void amx(const LowpGemm& g, const float* scale, float beta_c, int nt);

}  // namespace pb::lowp
