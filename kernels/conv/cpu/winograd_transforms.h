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
//   applied once in weights()),
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
// The kLanes values rounded to bf16 (to nearest even, NaN kept quiet: to_bf16 in dtype.h, lane
// by lane in integer vectors). A loop calling to_bf16 per lane stayed scalar inside the input
// transform: bf16 F(2x2) on 3x3 256 at 14x14, batch 16, 2.9 -> 4.0 ms.
inline void vstore(uint16_t* p, Vec v) {
  typedef uint32_t UVec __attribute__((vector_size(kLanes * sizeof(uint32_t))));
  typedef uint16_t HVec __attribute__((vector_size(kLanes * sizeof(uint16_t))));
  UVec u;
  __builtin_memcpy(&u, &v, sizeof u);
  const UVec rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16, quiet_nan = (u >> 16) | 0x40u;
  const UVec nan = (UVec)((u & 0x7FFFFFFFu) > 0x7F800000u);  // all ones where NaN
  const HVec h = __builtin_convertvector((quiet_nan & nan) | (rounded & ~nan), HVec);
  __builtin_memcpy(p, &h, sizeof h);
}

// The 1-D transforms of the tables with their common subexpressions shared (about half the
// operations of a plain matrix product): in: r = B^T d (alpha -> alpha), out: y = A^T m
// (alpha -> m), and lift: r = A y (m -> alpha, the transpose of out, for bwd_w).
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
  static void lift(const Vec* y, Vec* r) {
    r[0] = y[0];
    r[1] = y[0] + y[1];
    r[2] = y[0] - y[1];
    r[3] = -y[1];
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
  static void lift(const Vec* y, Vec* r) {
    const Vec e = y[0] + y[2], o = y[1] + y[3], e4 = y[0] + 4.f * y[2],
              o8 = 2.f * y[1] + 8.f * y[3];
    r[0] = y[0];
    r[1] = e + o;
    r[2] = e - o;
    r[3] = e4 + o8;
    r[4] = e4 - o8;
    r[5] = y[3];
  }
};

// The 2-D form of a 1-D transform K (n -> p values of kLanes lanes, Fn): an n x n tile X (row i,
// column j at d + i * rs + j * cs) -> K X K^T, entry (q, k) at v + (q * P + k) * os (fp32, or
// rounded to bf16 for T = uint16_t). Rows first, then columns.
template <int N, int P, void (*Fn)(const Vec*, Vec*), class T = float>
__attribute__((always_inline)) inline void transform2d(const float* __restrict d, int64_t rs,
                                                       int64_t cs, T* __restrict v, int64_t os) {
  Vec t[P][N];  // t[k][i] = (X K^T)[i][k]
#pragma GCC unroll 8
  for (int i = 0; i < N; ++i) {
    Vec row[N], r[P];
#pragma GCC unroll 8
    for (int j = 0; j < N; ++j) row[j] = vload(d + i * rs + j * cs);
    Fn(row, r);
#pragma GCC unroll 8
    for (int k = 0; k < P; ++k) t[k][i] = r[k];
  }
#pragma GCC unroll 8
  for (int k = 0; k < P; ++k) {
    Vec r[P];
    Fn(t[k], r);
#pragma GCC unroll 8
    for (int q = 0; q < P; ++q) vstore(v + (q * P + k) * os, r[q]);
  }
}

// Input tile (alpha x alpha values of kLanes lanes; row i, column j at d + i * rs + j * cs) ->
// B^T d B, entry p = i * alpha + j at v + p * os.
template <int M, class T = float>
inline void input_transform(const float* d, int64_t rs, int64_t cs, T* v, int64_t os) {
  constexpr int A = Tables<M>::alpha;
  transform2d<A, A, Kernel1d<M>::in, T>(d, rs, cs, v, os);
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
  transform2d<A, M, Kernel1d<M>::out>(p, A * is, is, y, kLanes);
}

// bwd_w: an m x m diff_dst tile (row i, column j at d + i * rs + j * cs) -> A dy A^T (alpha x
// alpha), entry p = i * alpha + j at v + p * os: the gradient of the products of the forward.
template <int M>
inline void diff_transform(const float* d, int64_t rs, int64_t cs, float* v, int64_t os) {
  constexpr int A = Tables<M>::alpha;
  transform2d<M, A, Kernel1d<M>::lift>(d, rs, cs, v, os);
}

// N 3x3 filters at once -> G w G^T each, in double then rounded: tap k (row * 3 + column) of
// filter n at w[k * N + n], entry p (i * alpha + j) of its transform at u[p * N + n]. Every step
// is a loop over the N filters, which the compiler vectorises: AlexNet conv3's (73728 filters)
// weights in the step contract took 1.5 ms instead of 1.8 one filter at a time (fwd; bwd_d 1.0
// instead of 1.3; F(4x4,3x3), 2 threads, Zen 5 family 26), the rest of it writing U.
template <int M, int N>
inline void filter_transform_batch(const float* w, float* u) {
  constexpr int A = Tables<M>::alpha;
  double t[A][3][N];
  for (int i = 0; i < A; ++i)
    for (int j = 0; j < 3; ++j) {
      double* s = t[i][j];
      for (int n = 0; n < N; ++n) s[n] = 0;
      for (int k = 0; k < 3; ++k)
        for (int n = 0; n < N; ++n) s[n] += Tables<M>::g[i][k] * w[(k * 3 + j) * N + n];
    }
  for (int i = 0; i < A; ++i)
    for (int j = 0; j < A; ++j) {
      double s[N] = {};
      for (int k = 0; k < 3; ++k)
        for (int n = 0; n < N; ++n) s[n] += t[i][k][n] * Tables<M>::g[j][k];
      for (int n = 0; n < N; ++n) u[(i * A + j) * N + n] = static_cast<float>(s[n]);
    }
}

// One 3x3 filter w (row-major) -> G w G^T (alpha x alpha, row-major), in double then rounded.
template <int M>
inline void filter_transform(const float* w, float* u) {
  filter_transform_batch<M, 1>(w, u);
}

// bwd_w: the summed gradients of n transformed filters, m[p * ms + c] (alpha x alpha positions
// p, filters c < n contiguous) -> the 3x3 filter gradients G^T m G, w[c * 9 + k * 3 + l], in
// double (vectorised across c) then rounded; n <= kGradBatch.
constexpr int kGradBatch = 64;
template <int M>
inline void filter_gradient(const float* m, int64_t ms, int n, float* w) {
  constexpr int A = Tables<M>::alpha;
  double t[3][A][kGradBatch], r[9][kGradBatch];  // (G^T m)[k][j], then (G^T m G)[k][l]
  for (int k = 0; k < 3; ++k)
    for (int j = 0; j < A; ++j) {
      double* tk = t[k][j];
      for (int c = 0; c < n; ++c) tk[c] = 0;
      for (int i = 0; i < A; ++i) {
        const double gik = Tables<M>::g[i][k];
        const float* mi = m + (i * A + j) * ms;
        if (gik != 0)
          for (int c = 0; c < n; ++c) tk[c] += gik * double(mi[c]);
      }
    }
  for (int k = 0; k < 3; ++k)
    for (int l = 0; l < 3; ++l) {
      double* rk = r[k * 3 + l];
      for (int c = 0; c < n; ++c) rk[c] = 0;
      for (int j = 0; j < A; ++j) {
        const double gjl = Tables<M>::g[j][l];
        if (gjl != 0)
          for (int c = 0; c < n; ++c) rk[c] += t[k][j][c] * gjl;
      }
    }
  for (int c = 0; c < n; ++c)
    for (int q = 0; q < 9; ++q) w[c * 9 + q] = static_cast<float>(r[q][c]);
}

}  // namespace wino
}  // namespace pb
