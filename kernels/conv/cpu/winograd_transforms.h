// Winograd F(m x m, 3 x 3) transform matrices (Lavin & Gray 2015) and the transforms themselves,
// vectorised across kLanes independent lanes (channels). Shared by F(2x2,3x3) and F(4x4,3x3).
#pragma once

#include <cstdint>

namespace pb {
namespace wino {

constexpr int kLanes = 16;  // lanes transformed together (one AVX-512 vector of fp32)

// Tables for output tile m and kernel 3: alpha = m + 2 points. Row-major. bt and at define the
// transforms (Kernel1d below computes them; a test checks that they agree).
//   bt: alpha x alpha (input transform B^T), g: alpha x 3 (filter transform G, in double:
//   applied once in prepare()),
//   at: m x alpha (output transform A^T).
// For 1-D: y = A^T [(G w) .* (B^T d)] is the correlation y_i = sum_j d[i + j] w[j].
template <int M>
struct Tables;

template <>
struct Tables<2> {
  static constexpr int m = 2, alpha = 4;
  static constexpr float bt[4][4] = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
  static constexpr double g[4][3] = {{1, 0, 0}, {.5, .5, .5}, {.5, -.5, .5}, {0, 0, 1}};
  static constexpr float at[2][4] = {{1, 1, 1, 0}, {0, 1, -1, -1}};
};

// Points 0, +-1, +-2, infinity.
template <>
struct Tables<4> {
  static constexpr int m = 4, alpha = 6;
  static constexpr float bt[6][6] = {{4, 0, -5, 0, 1, 0},  {0, -4, -4, 1, 1, 0},
                                     {0, 4, -4, -1, 1, 0}, {0, -2, -1, 2, 1, 0},
                                     {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1}};
  static constexpr double g[6][3] = {{1. / 4, 0, 0},
                                     {-1. / 6, -1. / 6, -1. / 6},
                                     {-1. / 6, 1. / 6, -1. / 6},
                                     {1. / 24, 1. / 12, 1. / 6},
                                     {1. / 24, -1. / 12, 1. / 6},
                                     {0, 0, 1}};
  static constexpr float at[4][6] = {
      {1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}};
};

// kLanes floats as one value (GCC/Clang vector extension: AVX-512 where compiled for it).
typedef float Vec __attribute__((vector_size(kLanes * sizeof(float)), aligned(4)));

inline Vec vload(const float* p) {
  Vec v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
inline void vstore(float* p, Vec v) {
  __builtin_memcpy(p, &v, sizeof v);
}

// The 1-D transforms of the tables with their common subexpressions shared (about half the
// operations of a plain matrix product): in: r = B^T d (alpha -> alpha), out: y = A^T m
// (alpha -> m).
template <int M>
struct Kernel1d;

template <>
struct Kernel1d<2> {
  static void in(const Vec* d, Vec* r) {
    r[0] = d[0] - d[2];
    r[1] = d[1] + d[2];
    r[2] = d[2] - d[1];
    r[3] = d[1] - d[3];
  }
  static void out(const Vec* m, Vec* y) {
    y[0] = m[0] + m[1] + m[2];
    y[1] = m[1] - m[2] - m[3];
  }
};

template <>
struct Kernel1d<4> {
  static void in(const Vec* d, Vec* r) {
    const Vec t5 = d[4] - d[2], t6 = d[3] - d[1];
    r[0] = 4.f * d[0] - 5.f * d[2] + d[4];
    r[1] = (d[3] + d[4]) - 4.f * (d[1] + d[2]);
    r[2] = (d[4] - d[3]) + 4.f * (d[1] - d[2]);
    r[3] = t5 + 2.f * t6;
    r[4] = t5 - 2.f * t6;
    r[5] = 4.f * d[1] - 5.f * d[3] + d[5];
  }
  static void out(const Vec* m, Vec* y) {
    const Vec a = m[1] + m[2], b = m[1] - m[2], c = m[3] + m[4], e = m[3] - m[4];
    y[0] = m[0] + a + c;
    y[1] = b + 2.f * e;
    y[2] = a + 4.f * c;
    y[3] = b + 8.f * e + m[5];
  }
};

// Input tile (alpha x alpha values of kLanes lanes; row i, column j at d + i * rs + j * cs) ->
// B^T d B, entry p = i * alpha + j at v + p * os. Rows first, then columns.
template <int M>
inline void input_transform(const float* __restrict d, int64_t rs, int64_t cs, float* __restrict v,
                            int64_t os) {
  constexpr int A = Tables<M>::alpha;
  Vec t[A][A];  // t[k][i] = (d B)[i][k]
#pragma GCC unroll 8
  for (int i = 0; i < A; ++i) {
    Vec row[A], r[A];
#pragma GCC unroll 8
    for (int j = 0; j < A; ++j) row[j] = vload(d + i * rs + j * cs);
    Kernel1d<M>::in(row, r);
#pragma GCC unroll 8
    for (int k = 0; k < A; ++k) t[k][i] = r[k];
  }
#pragma GCC unroll 8
  for (int k = 0; k < A; ++k) {
    Vec r[A];
    Kernel1d<M>::in(t[k], r);
#pragma GCC unroll 8
    for (int q = 0; q < A; ++q) vstore(v + (q * A + k) * os, r[q]);
  }
}
template <int M>
inline void input_transform(const float* d, float* v) {
  constexpr int A = Tables<M>::alpha;
  input_transform<M>(d, A * kLanes, kLanes, v, kLanes);
}

// Product tile (alpha x alpha entries is floats apart) -> A^T p A (m x m x kLanes, contiguous).
template <int M>
inline void output_transform(const float* __restrict p, float* __restrict y, int64_t is = kLanes) {
  constexpr int A = Tables<M>::alpha;
  Vec t[M][A];  // t[j][i] = (p A)[i][j]
#pragma GCC unroll 8
  for (int i = 0; i < A; ++i) {
    Vec row[A], r[M];
#pragma GCC unroll 8
    for (int j = 0; j < A; ++j) row[j] = vload(p + (i * A + j) * is);
    Kernel1d<M>::out(row, r);
#pragma GCC unroll 8
    for (int j = 0; j < M; ++j) t[j][i] = r[j];
  }
#pragma GCC unroll 8
  for (int j = 0; j < M; ++j) {
    Vec r[M];
    Kernel1d<M>::out(t[j], r);
#pragma GCC unroll 8
    for (int q = 0; q < M; ++q) vstore(y + (q * M + j) * kLanes, r[q]);
  }
}

// One 3x3 filter w (row-major) -> G w G^T (alpha x alpha, row-major), in double then rounded.
template <int M>
inline void filter_transform(const float* w, float* u) {
  constexpr int A = Tables<M>::alpha;
  double t[A][3];
  for (int i = 0; i < A; ++i)
    for (int j = 0; j < 3; ++j) {
      double s = 0;
      for (int k = 0; k < 3; ++k) s += Tables<M>::g[i][k] * w[k * 3 + j];
      t[i][j] = s;
    }
  for (int i = 0; i < A; ++i)
    for (int j = 0; j < A; ++j) {
      double s = 0;
      for (int k = 0; k < 3; ++k) s += t[i][k] * Tables<M>::g[j][k];
      u[i * A + j] = static_cast<float>(s);
    }
}

}  // namespace wino
}  // namespace pb
