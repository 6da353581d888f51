// cpu/blas: the input projection as one sgemm for all steps, then per step one sgemm of the
// recurrent weights for all gates (OpenBLAS) and one fused pointwise pass (OpenMP + SIMD).
// Backward: per step the pointwise derivatives and one sgemm to h_{t-1}; the weight gradients
// are two large sgemms over all steps after the loop (DeepBench's scheme), and dx = G_w W a
// third. With PRIMBENCH_SGEMM=packed (the default) the per-step products read R packed once in
// weights() (SgemmPackedA, as oneDNN packs its RNN weights), and so does the input projection
// where it has few columns; openblas and blis are called as before. With R prepacked, the recurrent
// loop runs in one parallel region: each thread owns a share of the hidden units, computes its rows
// of every gate's product (SgemmPackedA's row groups) and their pointwise pass, and the threads
// meet once per step (the next step needs all of h_t; the backward's product needs every gate's
// derivative). A reduced data type (dt=bf16, u8s8) runs blas_lowp.cpp's forward instead.
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "kernels/core/problem.h"
#include "kernels/core/threads.h"
#include "kernels/gemm/cpu/packed_sgemm.h"
#include "kernels/gemm/cpu/sgemm.h"
#include "kernels/rnn/cpu/blas_lowp.h"
#include "kernels/rnn/cpu/pointwise.h"
#include "kernels/rnn/rnn.h"

namespace pb {
namespace {

using namespace rnn_cpu;

// Row-major C (m x n) = op(A) op(B) + beta C.
void sgemm(bool ta, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
           int64_t ldb, float beta, float* c, int64_t ldc) {
  sgemm_rowmajor(ta, false, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
}

// The most input-projection columns (steps x batch) for which W^T is packed once (load_weights).
constexpr int64_t kInputPrepackMaxCols = 256;

// The fused loops' threads: all of them where R has at least 16K floats (64 KB), else as
// gemm_threads() sizes one step's product. Below 2 MFLOP that keeps one thread, but the loops
// pay no fork per step, only a barrier, and two cores stream R from two caches. Zen 3, forward
// ms, medians of 5 alternating runs, one thread -> two (onednn/auto): LSTM h256 n1 t150 3.38 ->
// 2.26 (2.5-3.6), h256 n2 t150 4.32 -> 2.70 (3.44), h128 n1 t100 0.63 -> 0.40 (0.62), h64 n2 t100
// 0.40 -> 0.30 (0.46), GRU h512 n1 t1 0.118 -> 0.105 (0.153); with smaller R two lost (vanilla
// h64 n1 t96 0.078 -> 0.089, h32 n1 t672 0.302 -> 0.311).
int step_threads(const RnnDesc& d) {
  constexpr int64_t kSplitMinWeights = 16 << 10;
  if (d.gh() * d.h >= kSplitMinWeights) return omp_in_parallel() ? 1 : omp_get_max_threads();
  return gemm_threads(d.gh(), d.n, d.h);
}

// Each thread's hidden units [s[i], s[i + 1]), balanced in multiples of 16 (a vector of the
// micro-kernel's rows, so that a share's last sliver is never a few rows padded to 48).
std::vector<int64_t> hidden_split(int64_t h, int threads) {
  const int64_t units = (h + 15) / 16;
  const int64_t nt = std::max<int64_t>(1, std::min<int64_t>(threads, units));
  std::vector<int64_t> s(nt + 1);
  for (int64_t i = 0; i <= nt; ++i) s[i] = std::min(h, units * i / nt * 16);
  return s;
}

Tensor copy_of(const std::vector<float>& v, const Dims& dims) {
  Tensor t(dims);
  std::copy(v.begin(), v.end(), t.data());
  return t;
}

class RnnCpuBlas : public StagedRnn {
 public:
  std::string name() const override { return "cpu/blas"; }
  Support supports(const RnnDesc& d, Dir dir) const override {
    if (dir != Dir::fwd && dir != Dir::bwd) return Support::no("rnn runs fwd or bwd");
    if (d.dt.is_f32()) return Support::yes();
    const std::string why = rnn_blas_lowp_unsupported(d, dir);
    return why.empty() ? Support::yes() : Support::no(why);
  }

  void plan(const RnnDesc& d, Dir dir, const std::vector<const Tensor*>& in) override {
    d_ = d, dir_ = dir;
    lowp_.reset();
    if (!d.dt.is_f32()) {
      lowp_ = make_rnn_blas_lowp(d);
      lowp_->plan(d, dir, in);
      return;
    }
    // OpenBLAS (pthreads) and OpenMP each keep their workers spinning after a parallel region;
    // alternating them every step makes the two pools fight for the cores (the recurrent part
    // ran 2.3x the GEMMs alone on 2 cores). So the per-step pointwise pass runs SIMD on the
    // calling thread, unless OMP_WAIT_POLICY=passive makes OpenMP's workers sleep.
    const char* wait = std::getenv("OMP_WAIT_POLICY");
    parallel_pw_ = wait && (std::string(wait) == "passive" || std::string(wait) == "PASSIVE");
    const int64_t T = d.t, N = d.n, H = d.h, I = d.i, GH = d.gh();
    size_t k = 0;
    x_ = in[k++];
    h0_ = in[k++];
    c0_ = d.has_c() ? in[k++] : nullptr;
    w_ = in[k++];
    r_ = in[k++];
    b_ = in[k++];
    dy_ = dir == Dir::bwd ? in[k] : nullptr;
    // GEMM-friendly layouts: W^T (I x GH) and R^T (H x GH) make both products NN with the
    // gates contiguous per sample (the backward uses R as given).
    wt_.assign(I * GH, 0);
    rt_.assign(H * GH, 0);
    xp_.assign(T * N * GH, 0);
    hs_.assign((T + 1) * N * H, 0);
    if (c0_) cs_.assign((T + 1) * N * H, 0);
    load_weights();
    load_states();
    if (d.cell == Cell::gru) hr_.assign(N * GH, 0), rh_.assign(T * N * H, 0);
    paired_ = false, runs_ = 0;
    if (dir == Dir::fwd) return;
    forward();  // the activations the backward needs (untimed)
    runs_ = 0;
    gw_.assign(T * N * GH, 0);
    if (d.cell == Cell::gru) gr_.assign(T * N * GH, 0);
    dh_[0].assign(N * H, 0), dh_[1].assign(N * H, 0);
    if (d.has_c()) dc_.assign(N * H, 0);
    dw_.assign(GH * I, 0), dr_.assign(GH * H, 0), db_.assign(d.bias_gates() * H, 0);
    wt_c_.assign(GH * std::min<int64_t>(512, std::max(H, I)), 0);
    dx_.assign(T * N * I, 0);
  }

  void run() override {
    if (lowp_) return lowp_->run();
    dir_ == Dir::fwd ? forward() : backward();
  }
  // A reduced type's plan() converts the source into its type: new contents need a new plan.
  bool reads_inputs_in_place() const override { return !lowp_; }

  void run_forward() override { forward(); }
  bool is_backward() const override { return dir_ == Dir::bwd; }

  std::vector<Tensor> result() override {
    if (lowp_) return lowp_->result();
    std::vector<Tensor> out;
    const int64_t NH = d_.n * d_.h;
    if (dir_ == Dir::fwd) {
      out.push_back(copy_of(std::vector<float>(hs_.begin() + NH, hs_.end()), {d_.t, d_.n, d_.h}));
      if (d_.has_c())
        out.push_back(copy_of(std::vector<float>(cs_.end() - NH, cs_.end()), {d_.n, d_.h}));
      return out;
    }
    out.push_back(copy_of(dw_, {d_.gates(), d_.h, d_.i}));
    out.push_back(copy_of(dr_, {d_.gates(), d_.h, d_.h}));
    out.push_back(copy_of(db_, {d_.bias_gates(), d_.h}));
    out.push_back(copy_of(dh_[last_], {d_.n, d_.h}));
    if (d_.has_c()) out.push_back(copy_of(dc_, {d_.n, d_.h}));
    out.push_back(copy_of(dx_, {d_.t, d_.n, d_.i}));
    return out;
  }

  size_t workspace_bytes() const override {
    if (lowp_) return lowp_->workspace_bytes();
    return 4 * (wt_.size() + rt_.size() + xp_.size() + hs_.size() + cs_.size() + hr_.size() +
                rh_.size() + gw_.size() + gr_.size() + wt_c_.size()) +
           (prepacked_ ? wp_.bytes() + rp_fwd_.bytes() + rp_bwd_.bytes() : 0);
  }

  std::vector<std::pair<std::string, double>> extra_counters() const override {
    if (lowp_) return lowp_->extra_counters();
    const_cast<RnnCpuBlas*>(this)->pair_with_gemms();
    const double total = first_ms_ + recurrent_ms_ + last_ms_;
    std::vector<std::pair<std::string, double>> v = {
        {"recurrent_ms", recurrent_ms_},
        {"gemm_only_ms", gemm_only_ms_},     // the same per-step sgemms alone, best of 3
        {"recur_over_gemm", paired_ratio_},  // recurrent / gemm_only, paired
        {"recurrent_share", total > 0 ? recurrent_ms_ / total : 0},
        {"convert_ms", convert_ms_},
        {"pw_threads", prepacked_     ? split_.size() - 1.0
                       : parallel_pw_ ? 0.0 + threads()
                                      : 1.0},
        {"r_prepacked", prepacked_ ? 1.0 : 0.0},     // the per-step products read R packed once
        {"w_prepacked", wp_.groups() ? 1.0 : 0.0}};  // and the input projection W
    // bwd: the sgemms after the loop (dW, dR, db and dx), under the name they had before dx.
    v.emplace_back(dir_ == Dir::fwd ? "input_proj_ms" : "weight_grad_ms",
                   dir_ == Dir::fwd ? first_ms_ : last_ms_);
    return v;
  }

 private:
  // What derives from the weights: W^T and R^T, and with our own SGEMM, the per-step products'
  // op(A) packed into its micro-kernel's slivers: R^T (GH x H, column-major) for the forward, R
  // (H x GH) for the backward's dh_{t-1} (the backward's plan runs the forward too).
  void load_weights() override {
    if (lowp_) return lowp_->weights();
    double t0 = now_seconds();
    const int64_t H = d_.h, GH = d_.gh();
    transpose_matrix(w_->data(), GH, d_.i, wt_.data());
    transpose_matrix(r_->data(), GH, H, rt_.data());
    prepacked_ = sgemm_library() == "packed";
    // Thread s's groups: its units' rows of every gate (gate-major, so that the groups are in
    // order: group g * shares + s) for the forward, its rows of dh_{t-1} for the backward.
    split_ = hidden_split(H, step_threads(d_));
    const int64_t shares = static_cast<int64_t>(split_.size()) - 1;
    std::vector<SgemmPackedA::Rows> fwd_groups, bwd_groups;
    for (int64_t g = 0; g < d_.gates(); ++g)
      for (int64_t s = 0; s < shares; ++s)
        fwd_groups.push_back({g * H + split_[s], split_[s + 1] - split_[s]});
    for (int64_t s = 0; s < shares; ++s)
      bwd_groups.push_back({split_[s], split_[s + 1] - split_[s]});
    share_groups_.assign(shares, {});
    for (int64_t s = 0; s < shares; ++s)
      for (int64_t g = 0; g < d_.gates(); ++g) share_groups_[s].push_back(g * shares + s);
    // Packed again in place on every call (a training step: no allocation once warm); nothing
    // is kept from a plan of another direction or library.
    if (prepacked_) rp_fwd_.pack(false, GH, H, rt_.data(), GH, fwd_groups);
    if (prepacked_ && dir_ == Dir::bwd)
      rp_bwd_.pack(false, H, GH, r_->data(), H, bwd_groups);
    else
      rp_bwd_ = SgemmPackedA();
    if (!prepacked_) rp_fwd_ = SgemmPackedA();
    // W^T too, where the input projection has few columns (T*N): packing its 4H x I per call
    // then cost as much as the product. Zen 3, 2 threads, LSTM h1024 t25 forward, ms (medians of
    // 5-7 alternating runs, packed per call -> prepacked): n1 9.84 -> 9.21 (input projection 3.0
    // -> 1.9), n4 14.7 -> 14.5, n8 27.4 -> 25.3; at 400 columns it lost (n16 49.9 -> 53.2,
    // h1536 n8 t50 130.0 -> 134.9), A's slivers then streaming once per column block.
    if (prepacked_ && d_.t * d_.n <= kInputPrepackMaxCols)
      wp_.pack(false, GH, d_.i, wt_.data(), GH);
    else
      wp_ = SgemmPackedA();
    convert_ms_ = 1e3 * (now_seconds() - t0);
  }
  // The initial states into the state sequences.
  void load_states() override {
    if (lowp_) return lowp_->reorder_in();
    const int64_t N = d_.n, H = d_.h;
    std::copy(h0_->data(), h0_->data() + N * H, hs_.begin());
    if (c0_) std::copy(c0_->data(), c0_->data() + N * H, cs_.begin());
  }

  // LSTM/RNN: xp_t += h_{t-1} R^T in place; GRU: hr = h_{t-1} R^T (kept apart for the reset).
  // Row-major N x GH, in column-major terms C^T (GH x N) = (R^T)^T-stored A x h_{t-1}^T.
  void step_gemm_fwd(int64_t t) {
    const int64_t N = d_.n, H = d_.h, GH = d_.gh();
    const float* hp = &hs_[t * N * H];
    const bool gru = d_.cell == Cell::gru;
    float* c = gru ? hr_.data() : &xp_[t * N * GH];
    const float beta = gru ? 0.0f : 1.0f;
    if (prepacked_)
      sgemm_prepacked(rp_fwd_, false, N, 1.0f, hp, H, beta, c, GH);
    else
      sgemm(false, N, GH, H, hp, H, rt_.data(), GH, beta, c, GH);
  }
  // The pre-activation derivatives on R's side, every step (T*N x GH): the GRU keeps its own
  // (its o gate's scaled by the reset), the other cells share the W side's.
  float* r_grads() { return d_.cell == Cell::gru ? gr_.data() : gw_.data(); }
  // dL/dh_{t-1} (+)= g_t R, accumulating onto the GRU's direct part.
  void step_gemm_bwd(int64_t t, float* dhp) {
    const int64_t N = d_.n, H = d_.h, GH = d_.gh();
    const float* g = r_grads() + t * N * GH;
    const float beta = d_.cell == Cell::gru ? 1.0f : 0.0f;
    if (prepacked_)
      sgemm_prepacked(rp_bwd_, false, N, 1.0f, g, GH, beta, dhp, H);
    else
      sgemm(false, N, H, GH, g, GH, r_->data(), H, beta, dhp, H);
  }

  void forward() {
    const int64_t T = d_.t, N = d_.n, H = d_.h, GH = d_.gh();
    double t0 = now_seconds();
    if (wp_.groups())
      sgemm_prepacked(wp_, false, T * N, 1.0f, x_->data(), d_.i, 0.0f, xp_.data(), GH);
    else
      sgemm(false, T * N, GH, d_.i, x_->data(), d_.i, wt_.data(), GH, 0.0f, xp_.data(), GH);
    double t1 = now_seconds();
    if (prepacked_) {
      fused_forward();
    } else {
      for (int64_t t = 0; t < T; ++t) {
        step_gemm_fwd(t);
        for_blocks(N, H, parallel_pw_,
                   [&](int64_t n, int64_t j0, int64_t j1) { pointwise_fwd(t, n, j0, j1); });
      }
    }
    double t2 = now_seconds();
    first_ms_ = 1e3 * (t1 - t0), last_ms_ = 0;
    keep_min(1e3 * (t2 - t1));
  }

  // Sample n's units [j0, j1) at step t.
  void pointwise_fwd(int64_t t, int64_t n, int64_t j0, int64_t j1) {
    const int64_t N = d_.n, H = d_.h, GH = d_.gh();
    FwdRow r;
    r.a = &xp_[(t * N + n) * GH];
    r.hr = hr_.empty() ? nullptr : &hr_[n * GH];
    r.b = b_->data();
    r.hp = &hs_[(t * N + n) * H];
    r.h = &hs_[((t + 1) * N + n) * H];
    r.cp = cs_.empty() ? nullptr : &cs_[(t * N + n) * H];
    r.c = cs_.empty() ? nullptr : &cs_[((t + 1) * N + n) * H];
    r.rh = rh_.empty() ? nullptr : &rh_[(t * N + n) * H];
    cell_fwd(d_.cell, r, H, j0, j1);
  }
  // Sample n's units [j0, j1) at step t: dh_[cur] holds dL/dh_t through R, dhp receives the
  // GRU's direct part of dL/dh_{t-1}.
  void pointwise_bwd(int64_t t, int64_t n, int64_t j0, int64_t j1, int cur, float* dhp) {
    const int64_t N = d_.n, H = d_.h, GH = d_.gh();
    float* gr_all = r_grads();
    BwdRow r;
    const int64_t s = (t * N + n) * H;
    r.act = &xp_[(t * N + n) * GH];
    r.dy = dy_->data() + s;
    r.dhn = &dh_[cur][n * H];
    r.h = &hs_[s + N * H];
    r.hp = &hs_[s];
    r.c = cs_.empty() ? nullptr : &cs_[s + N * H];
    r.cp = cs_.empty() ? nullptr : &cs_[s];
    r.dc = dc_.empty() ? nullptr : &dc_[n * H];
    r.rh = rh_.empty() ? nullptr : &rh_[s];
    r.gw = &gw_[(t * N + n) * GH];
    r.gr = &gr_all[(t * N + n) * GH];
    r.dhp = dhp + n * H;
    cell_bwd(d_.cell, r, H, j0, j1);
  }

  // The forward's steps in one parallel region (R prepacked): share s's rows of every gate's
  // product, then its units' pointwise pass for every sample, then one barrier per step. A
  // team smaller than the shares (a nested region) takes several shares per thread. Odd steps
  // run the gates and their slivers last to first: R larger than the cache then starts each
  // step on what the last one left there (forward ms, medians of 7 alternating runs, Zen 3:
  // LSTM h1024 n1 t25 6.66 -> 6.35, h2048 n1 t25 52.7 -> 50.3, GRU h2048 n1 t187 280 -> 278).
  void fused_forward() {
    const int64_t T = d_.t, N = d_.n, H = d_.h, GH = d_.gh(), G = d_.gates();
    const int shares = static_cast<int>(split_.size()) - 1;
    const bool gru = d_.cell == Cell::gru;
#pragma omp parallel num_threads(shares) if (shares > 1)
    {
      const int team = omp_get_num_threads(), me = omp_get_thread_num();
      for (int64_t t = 0; t < T; ++t) {
        const float* hp = &hs_[t * N * H];
        float* c = gru ? hr_.data() : &xp_[t * N * GH];
        for (int s = me; s < shares; s += team) {
          sgemm_prepacked(rp_fwd_, share_groups_[s].data(), G, false, N, 1.0f, hp, H,
                          gru ? 0.0f : 1.0f, c, GH, t % 2);
          for (int64_t n = 0; n < N; ++n) pointwise_fwd(t, n, split_[s], split_[s + 1]);
        }
#pragma omp barrier
      }
    }
  }
  // The backward's steps likewise: share s's pointwise derivatives for every sample, one
  // barrier (dh_{t-1}'s product sums over every gate), then its rows of dh_{t-1}, which the
  // same share's next pointwise pass reads alone; odd steps reversed, as in the forward.
  // Returns the index of dL/dh_0 in dh_.
  int fused_backward() {
    const int64_t T = d_.t, N = d_.n, H = d_.h, GH = d_.gh();
    const int shares = static_cast<int>(split_.size()) - 1;
    const bool gru = d_.cell == Cell::gru;
    const float* gr_all = r_grads();
#pragma omp parallel num_threads(shares) if (shares > 1)
    {
      const int team = omp_get_num_threads(), me = omp_get_thread_num();
      int cur = 0;
      for (int64_t t = T - 1; t >= 0; --t) {
        float* dhp = dh_[1 - cur].data();
        for (int s = me; s < shares; s += team)
          for (int64_t n = 0; n < N; ++n) pointwise_bwd(t, n, split_[s], split_[s + 1], cur, dhp);
#pragma omp barrier
        for (int s = me; s < shares; s += team)
          sgemm_prepacked(rp_bwd_, s, false, N, 1.0f, gr_all + t * N * GH, GH, gru ? 1.0f : 0.0f,
                          dhp, H, t % 2);
        cur = 1 - cur;
      }
    }
    return static_cast<int>(T % 2);
  }

  void backward() {
    const int64_t T = d_.t, N = d_.n, H = d_.h, I = d_.i, GH = d_.gh();
    double t0 = now_seconds();
    std::fill(dh_[0].begin(), dh_[0].end(), 0.0f);
    std::fill(dc_.begin(), dc_.end(), 0.0f);
    int cur = 0;  // dh_[cur]: dL/dh_t through R from step t+1
    float* gr_all = r_grads();
    if (prepacked_) {
      cur = fused_backward();
    } else {
      for (int64_t t = T - 1; t >= 0; --t) {
        float* dhp = dh_[1 - cur].data();
        for_blocks(N, H, parallel_pw_, [&](int64_t n, int64_t j0, int64_t j1) {
          pointwise_bwd(t, n, j0, j1, cur, dhp);
        });
        step_gemm_bwd(t, dhp);
        cur = 1 - cur;
      }
    }
    last_ = cur;
    double t1 = now_seconds();
    // dR = G_r^T [h_0 .. h_{T-1}], dW = G_w^T x, db = column sums, dx = G_w W (W as given:
    // every gate's pre-activation, GRU's o included, holds W x_t outside the reset).
    sgemm_tn(GH, H, T * N, gr_all, GH, hs_.data(), H, dr_.data());
    sgemm_tn(GH, I, T * N, gw_.data(), GH, x_->data(), I, dw_.data());
    sgemm(false, T * N, I, GH, gw_.data(), GH, w_->data(), I, 0.0f, dx_.data(), I);
    column_sums(gw_.data(), T * N, GH, db_.data());
    if (d_.cell == Cell::gru) column_sums(gr_all + 2 * H, T * N, GH, db_.data() + 3 * H, H);
    double t2 = now_seconds();
    first_ms_ = 0, last_ms_ = 1e3 * (t2 - t1);
    keep_min(1e3 * (t1 - t0));
  }

  // Row-major C (m x n) = A^T B (A k x m, B k x n, k the steps' samples). Our SGEMM's 48-row
  // slivers run along C's columns here (its rows in column-major terms), and few of them run
  // slowly: for dR and dW with n = H or I a quarter of m = 4H, column-major 256 x 1024 x 16384
  // ran 184 GFLOP/s and 1024 x 256 x 16384 271, 512 x 2048 x 3200 239 and 2048 x 512 x 3200
  // 277, 1024 x 4096 x 3200 272 and 4096 x 1024 x 3200 286 (2 threads, Xeon family 6 model
  // 207). So with cpu/packed and n <= 512, C^T = B^T A is computed into wt_c_ and transposed
  // (at most 4 MB). OpenBLAS and BLIS are called as given. Since cpu/packed reads B in place for
  // few rows (packed_sgemm.cpp's b_in_place), the direct orientation is still the slower with
  // A^T: lstm_h256n256t64 bwd took 212-239 ms with it against 198-216 ms with this.
  void sgemm_tn(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                int64_t ldb, float* c) {
    if (!prepacked_ || n >= m || n > 512) return sgemm(true, m, n, k, a, lda, b, ldb, 0.0f, c, n);
    sgemm(true, n, m, k, b, ldb, a, lda, 0.0f, wt_c_.data(), m);
    transpose_words(wt_c_.data(), m, static_cast<int>(n), m, c, n);
  }

  // out[c] = sum over rows of m[r * ld + c], c < cols (default: ld).
  static void column_sums(const float* m, int64_t rows, int64_t ld, float* out, int64_t cols = 0) {
    if (!cols) cols = ld;
    const int64_t B = 512;
#pragma omp parallel for schedule(static)
    for (int64_t c0 = 0; c0 < cols; c0 += B) {
      const int64_t c1 = std::min(cols, c0 + B);
      float acc[B] = {};
      for (int64_t r = 0; r < rows; ++r) {
        const float* row = m + r * ld;
#pragma omp simd
        for (int64_t c = c0; c < c1; ++c) acc[c - c0] += row[c];
      }
      std::copy(acc, acc + (c1 - c0), out + c0);
    }
  }

  // The pointwise overhead: the per-step sgemms alone vs the whole recurrent part, timed
  // alternately 3 times each (best of 3) so that both see the same machine load. Measured when
  // the counters are first read, after the timed runs (whose figures it leaves as they were),
  // not in plan(): its 6 passes took most of a conformance case, which reads no counter (a GRU
  // h1536 t16 backward: 0.7 s of plan for a 15 ms run).
  void pair_with_gemms() {
    if (paired_) return;
    paired_ = true;
    const double timed[3] = {recurrent_ms_, first_ms_, last_ms_};
    const int runs = runs_;
    runs_ = 0;
    gemm_only_ms_ = 1e30;
    for (int rep = 0; rep < 3; ++rep) {
      const double s = now_seconds();
      if (dir_ == Dir::fwd)
        for (int64_t t = 0; t < d_.t; ++t) step_gemm_fwd(t);
      else
        for (int64_t t = d_.t - 1; t >= 0; --t) step_gemm_bwd(t, dh_[0].data());
      gemm_only_ms_ = std::min(gemm_only_ms_, 1e3 * (now_seconds() - s));
      dir_ == Dir::fwd ? forward() : backward();
    }
    paired_ratio_ = recurrent_ms_ / gemm_only_ms_;
    if (runs) recurrent_ms_ = timed[0], first_ms_ = timed[1], last_ms_ = timed[2], runs_ = runs;
  }

  // The recurrent time of the fastest run so far (comparable with gemm_only_ms, a best of 3).
  void keep_min(double ms) {
    recurrent_ms_ = runs_++ ? std::min(recurrent_ms_, ms) : ms;
  }

  RnnDesc d_;
  Dir dir_ = Dir::fwd;
  std::unique_ptr<RnnImpl> lowp_;  // dt != f32
  const Tensor *x_ = nullptr, *h0_ = nullptr, *c0_ = nullptr, *w_ = nullptr, *r_ = nullptr,
               *b_ = nullptr, *dy_ = nullptr;
  std::vector<float> wt_, rt_, xp_, hs_, cs_, hr_, rh_, gw_, gr_, dc_, dw_, dr_, db_, dx_;
  std::vector<float> wt_c_;  // dR^T or dW^T before its transpose (sgemm_tn)
  std::vector<float> dh_[2];
  SgemmPackedA wp_;               // W^T packed for a narrow input projection
  SgemmPackedA rp_fwd_, rp_bwd_;  // R^T and R packed for the per-step products (prepacked_)
  std::vector<int64_t> split_;    // the threads' shares of the hidden units (prepacked_)
  std::vector<std::vector<size_t>> share_groups_;  // share s's groups of rp_fwd_ (every gate)
  int last_ = 0, runs_ = 0;
  bool parallel_pw_ = false, prepacked_ = false, paired_ = false;
  double paired_ratio_ = 0;
  double convert_ms_ = 0, gemm_only_ms_ = 0, first_ms_ = 0, recurrent_ms_ = 0, last_ms_ = 0;
};

}  // namespace

std::unique_ptr<RnnImpl> make_rnn_cpu_blas() {
  return std::make_unique<RnnCpuBlas>();
}

}  // namespace pb
