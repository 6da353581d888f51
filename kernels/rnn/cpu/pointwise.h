// The fused pointwise passes of cpu/blas, one per cell and direction, over a row segment
// [j0, j1) of one sample: activations with a vectorizable exp (OpenMP SIMD), no libm calls.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/rnn/desc.h"

namespace pb::rnn_cpu {

// e^x for x clamped to [-87, 88]: 2^k * p(r) with r = x - k ln2, |r| <= ln2/2, degree-6 Taylor
// (relative error < 2e-7). Written so that GCC vectorizes it inside `omp simd` loops.
#pragma omp declare simd
inline float fast_exp(float x) {
  x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
  const float kf = (x * 1.44269504f + 12582912.0f) - 12582912.0f;  // round to nearest
  const float r = (x - kf * 0.693145752f) - kf * 1.42860677e-6f;
  float p = 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(kf) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}
#pragma omp declare simd
inline float sigmoid(float x) {
  return 1.0f / (1.0f + fast_exp(-x));
}
#pragma omp declare simd
inline float tanh_f(float x) {
  // tanh x = sign(x) (1 - e) / (1 + e), e = e^{-2|x|}: accurate near 0 and saturating cleanly.
  const float e = fast_exp(-2.0f * (x < 0 ? -x : x));
  const float t = (1.0f - e) / (1.0f + e);
  return x < 0 ? -t : t;
}

// Pointers of one sample's rows at step t (row-major, G*H gates, H states).
struct FwdRow {
  float* a;         // in: W x_t (+ R h_{t-1} for LSTM/RNN); out: activated gates (G*H)
  const float* hr;  // GRU: R h_{t-1} (G*H)
  const float* b;   // biases
  const float* hp;  // h_{t-1}
  float* h;         // out: h_t
  const float* cp;  // LSTM: c_{t-1}
  float* c;         // LSTM out: c_t
  float* rh;        // GRU out: R_o h_{t-1} + b_ro, kept for the backward
};

inline void lstm_fwd(const FwdRow& r, int64_t H, int64_t j0, int64_t j1) {
  float* a = r.a;
  const float* b = r.b;
#pragma omp simd
  for (int64_t j = j0; j < j1; ++j) {
    const float i = sigmoid(a[j] + b[j]), f = sigmoid(a[H + j] + b[H + j]);
    const float g = tanh_f(a[2 * H + j] + b[2 * H + j]), o = sigmoid(a[3 * H + j] + b[3 * H + j]);
    const float c = f * r.cp[j] + i * g;
    r.c[j] = c;
    r.h[j] = o * tanh_f(c);
    a[j] = i, a[H + j] = f, a[2 * H + j] = g, a[3 * H + j] = o;
  }
}

inline void gru_fwd(const FwdRow& r, int64_t H, int64_t j0, int64_t j1) {
  float* a = r.a;
  const float *b = r.b, *hr = r.hr;
#pragma omp simd
  for (int64_t j = j0; j < j1; ++j) {
    const float u = sigmoid(a[j] + hr[j] + b[j]), rr = sigmoid(a[H + j] + hr[H + j] + b[H + j]);
    const float rh = hr[2 * H + j] + b[3 * H + j];
    const float o = tanh_f(a[2 * H + j] + b[2 * H + j] + rr * rh);
    r.rh[j] = rh;
    r.h[j] = u * r.hp[j] + (1.0f - u) * o;
    a[j] = u, a[H + j] = rr, a[2 * H + j] = o;
  }
}

inline void relu_fwd(const FwdRow& r, int64_t, int64_t j0, int64_t j1) {
#pragma omp simd
  for (int64_t j = j0; j < j1; ++j) {
    const float v = r.a[j] + r.b[j];
    r.h[j] = r.a[j] = v > 0 ? v : 0.0f;
  }
}

// One sample's rows for the backward at step t.
struct BwdRow {
  const float* act;  // activated gates (G*H)
  const float* dy;   // dL/dh_t from the output
  const float* dhn;  // dL/dh_t through R from step t+1 (zeros at t = T-1)
  const float* h;    // h_t (ReLU mask)
  const float* hp;   // h_{t-1} (GRU)
  const float* c;    // LSTM c_t
  const float* cp;   // LSTM c_{t-1}
  float* dc;         // LSTM in: dL/dc_t from t+1; out: dL/dc_{t-1}
  const float* rh;   // GRU: R_o h_{t-1} + b_ro
  float* gw;         // out: d pre-activations, W side (G*H)
  float* gr;         // out: R side (GRU; == gw otherwise)
  float* dhp;        // GRU out: the direct part u*dh of dL/dh_{t-1}
};

inline void lstm_bwd(const BwdRow& r, int64_t H, int64_t j0, int64_t j1) {
  const float* a = r.act;
  float* g = r.gw;
#pragma omp simd
  for (int64_t j = j0; j < j1; ++j) {
    const float dh = r.dy[j] + r.dhn[j];
    const float i = a[j], f = a[H + j], gg = a[2 * H + j], o = a[3 * H + j];
    const float tc = tanh_f(r.c[j]);
    const float dc = r.dc[j] + dh * o * (1.0f - tc * tc);
    g[j] = dc * gg * i * (1.0f - i);
    g[H + j] = dc * r.cp[j] * f * (1.0f - f);
    g[2 * H + j] = dc * i * (1.0f - gg * gg);
    g[3 * H + j] = dh * tc * o * (1.0f - o);
    r.dc[j] = dc * f;
  }
}

inline void gru_bwd(const BwdRow& r, int64_t H, int64_t j0, int64_t j1) {
  const float* a = r.act;
#pragma omp simd
  for (int64_t j = j0; j < j1; ++j) {
    const float dh = r.dy[j] + r.dhn[j];
    const float u = a[j], rr = a[H + j], o = a[2 * H + j];
    const float dao = dh * (1.0f - u) * (1.0f - o * o);
    const float dau = dh * (r.hp[j] - o) * u * (1.0f - u);
    const float dar = dao * r.rh[j] * rr * (1.0f - rr);
    r.gw[j] = r.gr[j] = dau;
    r.gw[H + j] = r.gr[H + j] = dar;
    r.gw[2 * H + j] = dao;
    r.gr[2 * H + j] = dao * rr;
    r.dhp[j] = dh * u;
  }
}

inline void relu_bwd(const BwdRow& r, int64_t, int64_t j0, int64_t j1) {
#pragma omp simd
  for (int64_t j = j0; j < j1; ++j) r.gw[j] = r.h[j] > 0 ? r.dy[j] + r.dhn[j] : 0.0f;
}

// The cell's pass over [j0, j1) of one sample.
inline void cell_fwd(Cell cell, const FwdRow& r, int64_t H, int64_t j0, int64_t j1) {
  if (cell == Cell::lstm)
    lstm_fwd(r, H, j0, j1);
  else if (cell == Cell::gru)
    gru_fwd(r, H, j0, j1);
  else
    relu_fwd(r, H, j0, j1);
}
inline void cell_bwd(Cell cell, const BwdRow& r, int64_t H, int64_t j0, int64_t j1) {
  if (cell == Cell::lstm)
    lstm_bwd(r, H, j0, j1);
  else if (cell == Cell::gru)
    gru_bwd(r, H, j0, j1);
  else
    relu_bwd(r, H, j0, j1);
}

// Runs fn(n, j0, j1) over N samples x H units in blocks; on all OpenMP threads when `parallel`
// and the work is large, else on the calling thread (SIMD only).
template <class Fn>
inline void for_blocks(int64_t N, int64_t H, bool parallel, Fn fn) {
  const int64_t B = 256, nb = (H + B - 1) / B;
#pragma omp parallel for schedule(static) if (parallel && N * H >= 8192)
  for (int64_t q = 0; q < N * nb; ++q) {
    const int64_t n = q / nb, j0 = (q % nb) * B;
    fn(n, j0, j0 + B < H ? j0 + B : H);
  }
}

}  // namespace pb::rnn_cpu
