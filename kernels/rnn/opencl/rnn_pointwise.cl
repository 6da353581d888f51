// Fused pointwise kernels of ocl/blas, one work-item per (hidden unit j, sample n) and one
// launch per time step; row-major buffers with element offsets for the step's slices.
// CELL: 0 LSTM (gates i, f, c~, o), 1 GRU linear-before-reset (u, r, o), 2 ReLU RNN.
#ifndef CELL
#define CELL 0
#endif

inline float sigm(float x) { return 1.0f / (1.0f + exp(-x)); }

// xp: W x_t (+ b_x) slice at `a0` (N x GH), overwritten with the activated gates; hr: R h_{t-1}
// (N x GH); hs/cs: all states, h_{t-1} at s0, h_t at s0 + N*H; hn: h_t again (next GEMM input);
// rh: GRU R_o h + b_ro at s0 - 0 (T x N x H, slice at r0).
__kernel void rnn_fwd(const int N, const int H, __global float* xp, const int a0,
                      __global const float* hr, __global const float* b, __global float* hs,
                      __global float* cs, const int s0, __global float* hn, __global float* rh,
                      const int r0) {
  const int j = get_global_id(0), n = get_global_id(1);
  if (j >= H || n >= N) return;
  const int GH = CELL == 0 ? 4 * H : CELL == 1 ? 3 * H : H;
  __global float* a = xp + a0 + n * GH;
  __global const float* q = hr + n * GH;
  const int s = s0 + n * H + j, NH = N * H;
#if CELL == 0
  const float i = sigm(a[j] + q[j] + b[j]), f = sigm(a[H + j] + q[H + j] + b[H + j]);
  const float g = tanh(a[2 * H + j] + q[2 * H + j] + b[2 * H + j]);
  const float o = sigm(a[3 * H + j] + q[3 * H + j] + b[3 * H + j]);
  const float c = f * cs[s] + i * g;
  cs[s + NH] = c;
  const float h = o * tanh(c);
  a[j] = i, a[H + j] = f, a[2 * H + j] = g, a[3 * H + j] = o;
#elif CELL == 1
  const float u = sigm(a[j] + q[j] + b[j]), r = sigm(a[H + j] + q[H + j] + b[H + j]);
  const float rr = q[2 * H + j] + b[3 * H + j];
  const float o = tanh(a[2 * H + j] + b[2 * H + j] + r * rr);
  rh[r0 + n * H + j] = rr;
  const float h = u * hs[s] + (1.0f - u) * o;
  a[j] = u, a[H + j] = r, a[2 * H + j] = o;
#else
  const float h = fmax(a[j] + q[j] + b[j], 0.0f);
  a[j] = h;
#endif
  hs[s + NH] = h;
  hn[n * H + j] = h;
}

// Backward step: act (activated gates slice at a0), dy slice at s0 - N*H .. (dL/dh_t), dhn
// (dL/dh_t through R), hs/cs with h_{t-1} at s0; writes the W-side (gw, slice a0) and R-side
// (gr, slice a0; GRU only) gate gradients, gcur (= the R side, for the step's GEMM), dc in
// place, and for GRU the direct part u*dh of dL/dh_{t-1} into dhp.
__kernel void rnn_bwd(const int N, const int H, __global const float* act, const int a0,
                      __global const float* dy, const int y0, __global const float* dhn,
                      __global const float* hs, __global const float* cs, const int s0,
                      __global float* dc, __global const float* rh, __global float* gw,
                      __global float* gr, __global float* gcur, __global float* dhp) {
  const int j = get_global_id(0), n = get_global_id(1);
  if (j >= H || n >= N) return;
  const int GH = CELL == 0 ? 4 * H : CELL == 1 ? 3 * H : H;
  __global const float* a = act + a0 + n * GH;
  __global float* w = gw + a0 + n * GH;
  __global float* gc = gcur + n * GH;
  const int s = s0 + n * H + j, NH = N * H, e = n * H + j;
  const float dh = dy[y0 + e] + dhn[e];
#if CELL == 0
  const float i = a[j], f = a[H + j], g = a[2 * H + j], o = a[3 * H + j];
  const float tc = tanh(cs[s + NH]);
  const float dct = dc[e] + dh * o * (1.0f - tc * tc);
  const float gi = dct * g * i * (1.0f - i), gf = dct * cs[s] * f * (1.0f - f);
  const float gg = dct * i * (1.0f - g * g), go = dh * tc * o * (1.0f - o);
  w[j] = gc[j] = gi, w[H + j] = gc[H + j] = gf;
  w[2 * H + j] = gc[2 * H + j] = gg, w[3 * H + j] = gc[3 * H + j] = go;
  dc[e] = dct * f;
#elif CELL == 1
  __global float* v = gr + a0 + n * GH;
  const float u = a[j], r = a[H + j], o = a[2 * H + j];
  const float dao = dh * (1.0f - u) * (1.0f - o * o);
  const float dau = dh * (hs[s] - o) * u * (1.0f - u);
  const float dar = dao * rh[y0 + e] * r * (1.0f - r);
  w[j] = v[j] = gc[j] = dau;
  w[H + j] = v[H + j] = gc[H + j] = dar;
  w[2 * H + j] = dao;
  v[2 * H + j] = gc[2 * H + j] = dao * r;
  dhp[e] = dh * u;
#else
  w[j] = gc[j] = hs[s + NH] > 0.0f ? dh : 0.0f;
#endif
}

// out[c] = sum over `rows` rows of m[r * ld + c0 + c], c < cols: one work-item per column.
__kernel void column_sums(const int rows, const int ld, const int c0, const int cols,
                          __global const float* m, __global float* out) {
  const int c = get_global_id(0);
  if (c >= cols) return;
  float s = 0.0f;
  for (int r = 0; r < rows; ++r) s += m[(size_t)r * ld + c0 + c];
  out[c] = s;
}
