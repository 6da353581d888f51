// Internal to cpu/packed's reduced-precision GEMM (packed_lowp.cpp: the packed loop nest;
// packed_lowp_direct.cpp: the in-place path for few columns): the element types, the cache
// scratch, the group dot product and the epilogue their micro-kernels share. The group dot
// product (dot, Acc) also serves cpu/direct's reduced-precision convolution tiles. x86 AVX-512
// only; include it between the includer's diagnostic push and pop (GCC 12's false
// maybe-uninitialized reports on its own intrinsics).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <new>
#include <vector>

#include "kernels/core/threads.h"

#include "kernels/gemm/cpu/packed_lowp.h"

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
// past row m up to `rows` (whole slivers), in `buf`; *beta_c: beta in C's units.
inline float* u8s8_row_scales(const LowpGemm& g, int64_t rows, std::vector<uint8_t>& buf,
                              float* beta_c) {
  float* scale = scratch<float>(buf, rows);
  const bool s8 = g.dt.out == DataType::out_s8;
  const float div = s8 ? g.c_scale : 1.0f;
  for (int64_t i = 0; i < rows; ++i)
    scale[i] = i < g.m ? g.alpha * g.a_scale[i] * g.b_scale / div : 0.0f;
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

inline __mmask16 rows_mask(int rows) {
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

// acc += a . b over one group of G consecutive k per 32-bit lane: u8 (b, the unsigned operand)
// x s8 (a) into int32 lanes (vpdpbusd), or bf16 pairs into fp32 lanes (vdpbf16ps). The bf16
// accumulators stay __m512: held as integer vectors, GCC 12 spilled them in the packed tile
// (1760x128x1760 in bf16: 0.87 -> 1.40 ms).
__attribute__((target("avx512f,avx512vnni"))) inline __m512i dot(__m512i acc, __m512i b,
                                                                 __m512i a) {
  return _mm512_dpbusd_epi32(acc, b, a);
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

// The in-place path for op(A) = A and N <= kDirectMaxN (packed_lowp_direct.cpp): `scale` the
// per-row scales (u8s8) or nullptr, `beta_c` beta in C's units, `nt` threads.
constexpr int64_t kDirectMaxN = 64;
template <class Tr>
void direct(const LowpGemm& g, const float* scale, float beta_c, int nt);

}  // namespace pb::lowp
