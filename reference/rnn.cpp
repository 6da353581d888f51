// Naive fp64 RNN reference: one dot product per gate row and sample per step, then BPTT with
// the textbook derivatives. Independent of the implementations (no shared gate code).
#include "reference/rnn.h"

#include <cmath>

#include "kernels/core/error.h"

namespace pb::ref {

namespace {

double sigm(double v) {
  return 1.0 / (1.0 + std::exp(-v));
}

double dot(const double* a, const double* b, int64_t n) {
  double s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t k = 0; k < n; ++k) s += a[k] * b[k];
  return s;
}

// out (rows x cols) += g (rows x k) * m (k x cols), row-major.
void add_product(const double* g, const double* m, int64_t rows, int64_t k, int64_t cols,
                 double* out) {
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < rows; ++n)
    for (int64_t j = 0; j < k; ++j) {
      const double v = g[n * k + j];
      const double* mj = m + j * cols;
      double* o = out + n * cols;
#pragma omp simd
      for (int64_t c = 0; c < cols; ++c) o[c] += v * mj[c];
    }
}

std::vector<double> to64(const Tensor& t) {
  return std::vector<double>(t.data(), t.data() + t.size());
}

// Everything the forward computes, kept for the backward.
struct Trace {
  std::vector<double> act;   // (T, N, G*H) activated gates
  std::vector<double> hs;    // (T+1, N, H): h0, h_1 .. h_T
  std::vector<double> cs;    // (T+1, N, H) LSTM cell states
  std::vector<double> rh_o;  // (T, N, H) GRU: R_o h_{t-1} + b_ro
};

// The hidden state in the layer's type (desc.h): bf16/f16 rounding of the fp32 value an
// implementation computes, or u8s8's quantisation (to nearest even, saturated) and back.
double state_value(const RnnDesc& d, const RnnData& p, double h) {
  switch (d.dt.in) {
    case DataType::f32:
      return h;
    case DataType::bf16:
      return convert_output(h, DataType::out_bf16);
    case DataType::f16:
      return convert_output(h, DataType::out_f16);
    case DataType::u8s8: {
      const double q = std::nearbyint(h * p.data_scale + p.data_shift);
      return ((q < 0 ? 0 : q > 255 ? 255 : q) - p.data_shift) / p.data_scale;
    }
  }
  return h;
}

Trace run_forward(const RnnDesc& d, const RnnData& p) {
  const int64_t T = d.t, N = d.n, H = d.h, I = d.i, G = d.gates(), GH = G * H;
  Trace tr;
  tr.act.assign(T * N * GH, 0);
  tr.hs.assign((T + 1) * N * H, 0);
  std::copy(p.h0.begin(), p.h0.end(), tr.hs.begin());
  if (d.cell == Cell::lstm) {
    tr.cs.assign((T + 1) * N * H, 0);
    std::copy(p.c0.begin(), p.c0.end(), tr.cs.begin());
  }
  if (d.cell == Cell::gru) tr.rh_o.assign(T * N * H, 0);
  std::vector<double> xa(N * GH), ha(N * GH);  // W x_t and R h_{t-1}, without biases
  for (int64_t t = 0; t < T; ++t) {
    const double* x = &p.x[t * N * I];
    const double* hp = &tr.hs[t * N * H];
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < GH; ++k) {
        xa[n * GH + k] = dot(&p.w[k * I], &x[n * I], I);
        ha[n * GH + k] = dot(&p.r[k * H], &hp[n * H], H);
      }
    double* act = &tr.act[t * N * GH];
    double* h = &tr.hs[(t + 1) * N * H];
    for (int64_t n = 0; n < N; ++n)
      for (int64_t j = 0; j < H; ++j) {
        auto a = [&](int64_t g) {
          return xa[n * GH + g * H + j] + ha[n * GH + g * H + j] + p.b[g * H + j];
        };
        double* ac = &act[n * GH + j];
        if (d.cell == Cell::lstm) {
          const double i = sigm(a(0)), f = sigm(a(1)), g = std::tanh(a(2)), o = sigm(a(3));
          const double c = f * tr.cs[t * N * H + n * H + j] + i * g;
          tr.cs[(t + 1) * N * H + n * H + j] = c;
          h[n * H + j] = o * std::tanh(c);
          ac[0] = i, ac[H] = f, ac[2 * H] = g, ac[3 * H] = o;
        } else if (d.cell == Cell::gru) {
          const double u = sigm(a(0)), r = sigm(a(1));
          const double rh = ha[n * GH + 2 * H + j] + p.b[3 * H + j];
          const double o = std::tanh(xa[n * GH + 2 * H + j] + p.b[2 * H + j] + r * rh);
          tr.rh_o[t * N * H + n * H + j] = rh;
          h[n * H + j] = u * hp[n * H + j] + (1 - u) * o;
          ac[0] = u, ac[H] = r, ac[2 * H] = o;
        } else {
          h[n * H + j] = ac[0] = std::max(0.0, a(0));
        }
        h[n * H + j] = state_value(d, p, h[n * H + j]);
      }
  }
  return tr;
}

}  // namespace

RnnData rnn_data(const RnnDesc& d, const std::vector<const Tensor*>& in) {
  RnnData p;
  size_t k = 0;
  p.x = to64(*in[k++]);
  p.h0 = to64(*in[k++]);
  if (d.has_c()) p.c0 = to64(*in[k++]);
  p.w = to64(*in[k++]);
  p.r = to64(*in[k++]);
  p.b = to64(*in[k++]);
  if (d.dt.integer()) {
    p.data_scale = (*in[k + 1])[0];
    p.data_shift = (*in[k + 2])[0];
  } else if (k < in.size()) {
    p.dy = to64(*in[k]);
  }
  return p;
}

RnnForward rnn_forward(const RnnDesc& d, const RnnData& p) {
  Trace tr = run_forward(d, p);
  const int64_t NH = d.n * d.h;
  RnnForward f;
  f.y.assign(tr.hs.begin() + NH, tr.hs.end());
  if (d.has_c()) f.c_last.assign(tr.cs.end() - NH, tr.cs.end());
  return f;
}

RnnGrads rnn_backward(const RnnDesc& d, const RnnData& p) {
  if (!d.dt.is_f32()) throw RuntimeError("the rnn reference has no backward in dt=" + d.dt.str());
  const int64_t T = d.t, N = d.n, H = d.h, I = d.i, G = d.gates(), GH = G * H;
  Trace tr = run_forward(d, p);
  RnnGrads g;
  g.dw.assign(GH * I, 0);
  g.dr.assign(GH * H, 0);
  g.db.assign(d.bias_gates() * H, 0);
  g.dx.assign(T * N * I, 0);
  std::vector<double> dh_next(N * H, 0), dc(N * H, 0), dh_prev(N * H);
  std::vector<double> dgw(N * GH), dgr(N * GH);  // d(pre-activation): W/b side, R side
  for (int64_t t = T - 1; t >= 0; --t) {
    const double* act = &tr.act[t * N * GH];
    const double* hp = &tr.hs[t * N * H];
    const double* x = &p.x[t * N * I];
    for (int64_t n = 0; n < N; ++n)
      for (int64_t j = 0; j < H; ++j) {
        const int64_t s = n * H + j;
        const double dh = p.dy[t * N * H + s] + dh_next[s];
        const double* ac = &act[n * GH + j];
        double* gw = &dgw[n * GH + j];
        double* gr = &dgr[n * GH + j];
        if (d.cell == Cell::lstm) {
          const double i = ac[0], f = ac[H], gg = ac[2 * H], o = ac[3 * H];
          const double c = tr.cs[(t + 1) * N * H + s], cp = tr.cs[t * N * H + s];
          const double tc = std::tanh(c);
          const double dct = dc[s] + dh * o * (1 - tc * tc);
          gw[0] = dct * gg * i * (1 - i);
          gw[H] = dct * cp * f * (1 - f);
          gw[2 * H] = dct * i * (1 - gg * gg);
          gw[3 * H] = dh * tc * o * (1 - o);
          dc[s] = dct * f;
          for (int64_t q = 0; q < 4; ++q) gr[q * H] = gw[q * H];
          dh_prev[s] = 0;
        } else if (d.cell == Cell::gru) {
          const double u = ac[0], r = ac[H], o = ac[2 * H];
          const double dao = dh * (1 - u) * (1 - o * o);
          gw[0] = gr[0] = dh * (hp[s] - o) * u * (1 - u);
          gw[H] = gr[H] = dao * tr.rh_o[t * N * H + s] * r * (1 - r);
          gw[2 * H] = dao;
          gr[2 * H] = dao * r;
          dh_prev[s] = dh * u;
        } else {
          gw[0] = gr[0] = tr.hs[(t + 1) * N * H + s] > 0 ? dh : 0;
          dh_prev[s] = 0;
        }
      }
    // Through R to h_{t-1}; weight and bias gradients.
    add_product(dgr.data(), p.r.data(), N, GH, H, dh_prev.data());
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < GH; ++k)
      for (int64_t n = 0; n < N; ++n) {
        const double vr = dgr[n * GH + k], vw = dgw[n * GH + k];
        double* dr = &g.dr[k * H];
        double* dw = &g.dw[k * I];
        const double* h = &hp[n * H];
        const double* xn = &x[n * I];
#pragma omp simd
        for (int64_t j = 0; j < H; ++j) dr[j] += vr * h[j];
#pragma omp simd
        for (int64_t q = 0; q < I; ++q) dw[q] += vw * xn[q];
        g.db[k] += vw;
        if (d.cell == Cell::gru && k >= 2 * H) g.db[H + k] += vr;  // b_ro: row 3
      }
    // Through W to x_t: every gate's pre-activation holds W x_t once (GRU's o too, outside
    // the reset), so the W-side gradients dgw multiply W.
    double* dx = &g.dx[t * N * I];
    add_product(dgw.data(), p.w.data(), N, GH, I, dx);
    dh_next.swap(dh_prev);
  }
  g.dh0 = dh_next;
  if (d.has_c()) g.dc0 = dc;
  return g;
}

}  // namespace pb::ref
