// Winograd F(m x m, 3 x 3) transform matrices (Lavin & Gray 2015) and the transforms themselves,
// vectorised across kLanes tiles at once. Shared by F(2x2,3x3) and F(4x4,3x3).
#pragma once

#include <cstdint>

namespace pb {
namespace wino {

constexpr int kLanes = 16;  // tiles transformed together (one AVX-512 vector of fp32)

// Tables for output tile m and kernel 3: alpha = m + 2 points. Row-major.
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

// out[r][c][l] = sum_{i,j} L[r][i] * in[i][j][l] * L[c][j], for R x N matrix L (row-major), on
// kLanes lanes; entry (i, j) of in starts at in + i * irs + j * ics, entry (r, c) of out at
// out + r * ors + c * ocs (kLanes contiguous floats each). Fully unrolled so that the table
// entries are compile-time constants (zero terms vanish, +-1 become adds), one row of L * in at a
// time so that it stays in registers: out[r][.] = (L in)[r][.] L^T.
template <int R, int N>
inline void sandwich(const float (&L)[R][N], const float* in, int64_t irs, int64_t ics, float* out,
                     int64_t ors, int64_t ocs) {
  Vec d[N][N];
#pragma GCC unroll 8
  for (int i = 0; i < N; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < N; ++j) d[i][j] = vload(in + i * irs + j * ics);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    Vec t[N];
#pragma GCC unroll 8
    for (int j = 0; j < N; ++j) {
      t[j] = Vec{};
#pragma GCC unroll 8
      for (int i = 0; i < N; ++i)
        if (L[r][i] != 0) t[j] += L[r][i] * d[i][j];
    }
#pragma GCC unroll 8
    for (int c = 0; c < R; ++c) {
      Vec o = Vec{};
#pragma GCC unroll 8
      for (int j = 0; j < N; ++j)
        if (L[c][j] != 0) o += L[c][j] * t[j];
      vstore(out + r * ors + c * ocs, o);
    }
  }
}

// Input tile (alpha x alpha values of kLanes lanes; row i, column j at d + i * rs + j * cs) ->
// B^T d B, entry p = i * alpha + j at v + p * os.
template <int M>
inline void input_transform(const float* d, int64_t rs, int64_t cs, float* v, int64_t os) {
  constexpr int A = Tables<M>::alpha;
  sandwich(Tables<M>::bt, d, rs, cs, v, A * os, os);
}
template <int M>
inline void input_transform(const float* d, float* v) {
  constexpr int A = Tables<M>::alpha;
  input_transform<M>(d, A * kLanes, kLanes, v, kLanes);
}

// Product tile (alpha x alpha entries is floats apart) -> A^T p A (m x m x kLanes, contiguous).
template <int M>
inline void output_transform(const float* p, float* y, int64_t is = kLanes) {
  constexpr int A = Tables<M>::alpha;
  sandwich(Tables<M>::at, p, A * is, is, y, M * kLanes, kLanes);
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
