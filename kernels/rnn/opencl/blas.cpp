// ocl/blas: cpu/blas's scheme on OpenCL — the input projection and the per-step recurrent
// product with our SGEMM (gemm/tiled.cl, from the runtime's program cache), one fused pointwise
// kernel per step (rnn_pointwise.cl). Everything is enqueued: no host round trip in a sequence.
// Backward: after the loop, dR, dW, db and dx = G_w W over all T*N rows. W and R are transposed
// on the device, so inputs bound to a network's device buffers (bind_device) need no transfer.
#include <algorithm>
#include <string>

#include "kernels/core/problem.h"
#include "kernels/opencl/runtime.h"
#include "kernels/rnn/rnn.h"

namespace pb {
namespace {

// gemm/tiled.cl's default tunables (as ocl/tiled uses them); TA = 0 always, TB per product.
constexpr int kTsm = 64, kTsn = 64, kWptm = 32, kWptn = 8;
constexpr size_t kXt = 32;  // XT below
std::string gemm_options(bool tb) {
  return "-cl-mad-enable -DTSM=64 -DTSN=64 -DTSK=128 -DWPTM=32 -DWPTN=8 -DVW=16 -DTA=0 -DTB=" +
         std::to_string(tb ? 1 : 0) + " -DXT=32";
}

// One column-major C (m x n) = A (m x k) op(B) + beta C launch of gemm_tiled, arguments fixed.
struct Gemm {
  ocl::Kernel k;
  size_t global[2] = {1, 1}, local[2] = {kTsm / kWptm, kTsn / kWptn};
  void set(cl_program p, int m, int n, int kk, const ocl::Buffer& a, int lda, const ocl::Buffer& b,
           int ldb, float beta, const ocl::Buffer& c, int ldc) {
    k = ocl::Kernel(p, "gemm_tiled");
    k.set_args(m, n, kk, 1.0f, beta, a, lda, b, ldb, c, ldc);
    global[0] = ocl::round_up(m, kTsm) / kTsm * local[0];
    global[1] = ocl::round_up(n, kTsn) / kTsn * local[1];
  }
  void enqueue(ocl::Event* ev = nullptr) const { k.enqueue(2, global, local, ev); }
};

class RnnOclBlas : public StagedRnn {
 public:
  std::string name() const override { return "ocl/blas"; }
  Support supports(const RnnDesc& d, Dir dir) const override {
    if (dir != Dir::fwd && dir != Dir::bwd) return Support::no("rnn runs fwd or bwd");
    if (!d.dt.is_f32())
      return Support::no("dt " + d.dt.str() + ": ocl/blas runs fp32 only (CLBlast's SGEMM and " +
                         "fp32 pointwise kernels)");
    if (static_cast<double>(d.t) * d.n * std::max(d.gh(), d.i) > 2e9)
      return Support::no("sequence tensors exceed 32-bit int offsets");
    return Support::yes();
  }

  void plan(const RnnDesc& d, Dir dir, const std::vector<const Tensor*>& in) override {
    d_ = d, dir_ = dir;
    const int T = d.t, N = d.n, H = d.h, I = d.i, GH = d.gh(), NH = N * H;
    double t0 = now_seconds();
    cl_program nn = ocl::program("gemm/tiled.cl", gemm_options(false));
    cl_program nt = dir == Dir::bwd ? ocl::program("gemm/tiled.cl", gemm_options(true)) : nullptr;
    cl_program pw =
        ocl::program("rnn/rnn_pointwise.cl", "-DCELL=" + std::to_string(static_cast<int>(d.cell)));
    build_ms_ = 1e3 * (now_seconds() - t0);
    size_t k = 0;
    // Inputs as given (uploaded, or the bound device buffers): x, h0, [c0], W, R, b, [dy].
    auto next_input = [&] {
      ++k;
      return inputs_.get(k - 1, *in[k - 1]);
    };
    x_ = next_input();
    h0_ = next_input();
    c0_ = d.has_c() ? next_input() : ocl::Buffer();
    w_ = next_input();
    r_ = next_input();
    b_ = next_input();
    // W^T (I x GH) and R^T (H x GH), as cpu/blas, by tiled.cl's transpose (load_weights()).
    wt_ = ocl::Buffer(4ull * I * GH);
    rt_ = ocl::Buffer(4ull * H * GH);
    tw_ = ocl::Kernel(nn, "transpose");
    tw_.set_args(I, GH, w_, I, wt_, GH);
    tr_ = ocl::Kernel(nn, "transpose");
    tr_.set_args(H, GH, r_, H, rt_, GH);
    xp_ = ocl::Buffer(4ull * T * N * GH);
    hr_ = ocl::Buffer(4ull * N * GH);
    hs_ = ocl::Buffer(4ull * (T + 1) * NH);
    cs_ = ocl::Buffer(4ull * (d.has_c() ? (T + 1) * NH : 1));
    rh_ = ocl::Buffer(4ull * (d.cell == Cell::gru ? T * NH : 1));
    for (auto& p : ping_) p = ocl::Buffer(4ull * NH);
    t0 = now_seconds();
    load_weights();
    load_states();
    ocl::finish();
    convert_ms_ = 1e3 * (now_seconds() - t0);
    if (inputs_.any_bound() && dir == Dir::fwd) {  // the outputs as buffers of their own
      y_ = ocl::Buffer(4ull * T * NH);
      ct_ = ocl::Buffer(4ull * NH);
    }

    proj_.set(nn, GH, T * N, I, wt_, GH, x_, I, 0.0f, xp_, GH);
    for (int p = 0; p < 2; ++p) step_[p].set(nn, GH, N, H, rt_, GH, ping_[p], H, 0.0f, hr_, GH);
    pw_fwd_ = ocl::Kernel(pw, "rnn_fwd");
    local_[0] = std::min<size_t>(64, ocl::round_up(H, 8));
    local_[1] = 1;
    global_[0] = ocl::round_up(H, local_[0]);
    global_[1] = N;

    if (dir == Dir::bwd) {
      forward();  // activations for the backward, untimed
      ocl::finish();
      dy_ = next_input();
      gw_ = ocl::Buffer(4ull * T * N * GH);
      gr_ = ocl::Buffer(4ull * (d.cell == Cell::gru ? T * N * GH : 1));
      gcur_ = ocl::Buffer(4ull * N * GH);
      dc_ = ocl::Buffer(4ull * NH);
      dw_ = ocl::Buffer(4ull * GH * I), dr_ = ocl::Buffer(4ull * GH * H);
      dx_ = ocl::Buffer(4ull * T * N * I);
      db_ = ocl::Buffer(4ull * d.bias_gates() * H);
      const float beta = d.cell == Cell::gru ? 1.0f : 0.0f;
      for (int p = 0; p < 2; ++p) back_[p].set(nn, H, N, GH, r_, H, gcur_, GH, beta, ping_[p], H);
      const ocl::Buffer& g_r = d.cell == Cell::gru ? gr_ : gw_;
      dr_gemm_.set(nt, H, GH, T * N, hs_, H, g_r, GH, 0.0f, dr_, H);
      dw_gemm_.set(nt, I, GH, T * N, x_, I, gw_, GH, 0.0f, dw_, I);
      // dx^T (I x T*N, column-major) = W^T G_w^T: W row-major (GH x I) is W^T column-major.
      dx_gemm_.set(nn, I, T * N, GH, w_, I, gw_, GH, 0.0f, dx_, I);
      pw_bwd_ = ocl::Kernel(pw, "rnn_bwd");
      sums_ = ocl::Kernel(pw, "column_sums");
      sums2_ = ocl::Kernel(pw, "column_sums");
      sums_.set_args(T * N, GH, 0, GH, gw_, db_);
      if (d.cell == Cell::gru) {
        db_ro_ = ocl::Buffer(4ull * H);
        sums2_.set_args(T * N, GH, 2 * H, H, gr_, db_ro_);
      }
    }
    // A warm-up pass (PoCL compiles each kernel at its first enqueue), then a profiled pass:
    // kernel time vs wall time per launch.
    dir == Dir::fwd ? forward() : backward();
    ocl::finish();
    profile();
  }

  void run() override {
    if (dir_ == Dir::bwd) return backward();
    forward();
    if (y_.bytes()) {  // bound: y and cT into buffers that start at them (device_output)
      const size_t nh = 4ull * d_.n * d_.h;
      y_.copy_from(hs_, nh * d_.t, nh);
      if (d_.has_c()) ct_.copy_from(cs_, nh, nh * d_.t);
    }
  }
  void sync() override { ocl::finish(); }
  bool bind_device(const std::vector<void*>& dev) override { return inputs_.bind(dev); }
  bool reads_inputs_in_place() const override { return inputs_.any_bound(); }
  void run_forward() override { forward(); }
  bool is_backward() const override { return dir_ == Dir::bwd; }
  void* device_output(size_t i) const override {
    std::vector<const ocl::Buffer*> out;
    if (dir_ == Dir::fwd) out = {&y_, &ct_};
    if (dir_ == Dir::bwd) out = {&dw_, &dr_, &db_, &ping_[last_], &dc_, &dx_};
    if (!d_.has_c()) out.erase(out.begin() + (dir_ == Dir::fwd ? 1 : 4));
    return i < out.size() && out[i]->bytes() ? out[i]->get() : nullptr;
  }

  std::vector<Tensor> result() override {
    const int64_t NH = d_.n * d_.h;
    std::vector<Tensor> out;
    if (dir_ == Dir::fwd) {
      out.push_back(Tensor({d_.t, d_.n, d_.h}));
      hs_.download(out.back().data(), out.back().bytes(), 4 * NH);
      if (d_.has_c()) {
        out.push_back(Tensor({d_.n, d_.h}));
        cs_.download(out.back().data(), out.back().bytes(), 4 * NH * d_.t);
      }
      return out;
    }
    out.push_back(Tensor({d_.gates(), d_.h, d_.i}));
    dw_.download(out.back().data(), out.back().bytes());
    out.push_back(Tensor({d_.gates(), d_.h, d_.h}));
    dr_.download(out.back().data(), out.back().bytes());
    out.push_back(Tensor({d_.bias_gates(), d_.h}));
    db_.download(out.back().data(), 4 * d_.gh());
    if (d_.cell == Cell::gru) db_ro_.download(out.back().data() + 3 * d_.h, 4 * d_.h);
    out.push_back(Tensor({d_.n, d_.h}));
    ping_[last_].download(out.back().data(), out.back().bytes());
    if (d_.has_c()) {
      out.push_back(Tensor({d_.n, d_.h}));
      dc_.download(out.back().data(), out.back().bytes());
    }
    out.push_back(Tensor({d_.t, d_.n, d_.i}));
    dx_.download(out.back().data(), out.back().bytes());
    return out;
  }

  size_t workspace_bytes() const override {
    return xp_.bytes() + hr_.bytes() + hs_.bytes() + cs_.bytes() + rh_.bytes() + gw_.bytes() +
           gr_.bytes() + gcur_.bytes() + wt_.bytes() + rt_.bytes();
  }

  std::vector<std::pair<std::string, double>> extra_counters() const override {
    return {{"build_ms", build_ms_},
            {"convert_ms", convert_ms_},
            {"kernel_ms", kernel_ms_},  // sum of the profiled pass's kernel times
            {"launches", launches_},
            {"launch_overhead_us", launches_ ? 1e3 * (wall_ms_ - kernel_ms_) / launches_ : 0},
            {(dir_ == Dir::fwd ? "input_proj_ms" : "weight_grad_ms"), first_ms_},
            {"recurrent_ms", wall_ms_ - first_ms_}};
  }

 private:
  // Enqueues W^T, R^T and the initial state (h0, c0 at the start of hs_, cs_).
  void load_weights() override {
    size_t local[2] = {kXt, kXt};
    size_t gw[2] = {ocl::round_up(d_.i, kXt), ocl::round_up(d_.gh(), kXt)};
    size_t gr[2] = {ocl::round_up(d_.h, kXt), ocl::round_up(d_.gh(), kXt)};
    tw_.enqueue(2, gw, local);
    tr_.enqueue(2, gr, local);
  }
  void load_states() override {
    const size_t nh = 4ull * d_.n * d_.h;
    hs_.copy_from(h0_, nh);
    if (d_.has_c()) cs_.copy_from(c0_, nh);
  }

  // Enqueues the forward; with `ev`, one event per launch (profiling).
  void forward(std::vector<ocl::Event>* ev = nullptr) {
    const int T = d_.t, N = d_.n, H = d_.h, GH = d_.gh(), NH = N * H;
    auto next = [&]() -> ocl::Event* { return ev ? &ev->emplace_back() : nullptr; };
    if (ev) ev->reserve(1 + 2 * T);
    ping_[0].copy_from(h0_, 4ull * NH);
    proj_.enqueue(next());
    for (int t = 0; t < T; ++t) {
      const int p = t & 1;
      step_[p].enqueue(next());
      pw_fwd_.set_args(N, H, xp_, t * N * GH, hr_, b_, hs_, cs_, t * NH, ping_[1 - p], rh_, t * NH);
      pw_fwd_.enqueue(2, global_, local_, next());
    }
  }

  void backward(std::vector<ocl::Event>* ev = nullptr) {
    const int T = d_.t, N = d_.n, H = d_.h, GH = d_.gh(), NH = N * H;
    auto next = [&]() -> ocl::Event* { return ev ? &ev->emplace_back() : nullptr; };
    if (ev) ev->reserve(5 + 2 * T);
    ping_[0].zero();  // enqueued: no host wait
    dc_.zero();
    int cur = 0;
    for (int t = T - 1; t >= 0; --t) {
      pw_bwd_.set_args(N, H, xp_, t * N * GH, dy_, t * NH, ping_[cur], hs_, cs_, t * NH, dc_, rh_,
                       gw_, gr_, gcur_, ping_[1 - cur]);
      pw_bwd_.enqueue(2, global_, local_, next());
      back_[1 - cur].enqueue(next());
      cur = 1 - cur;
    }
    last_ = cur;
    dr_gemm_.enqueue(next());
    dw_gemm_.enqueue(next());
    dx_gemm_.enqueue(next());
    size_t l = 64, g = ocl::round_up(GH, 64);
    sums_.enqueue(1, &g, &l, next());
    if (d_.cell == Cell::gru) {
      size_t g2 = ocl::round_up(H, 64);
      sums2_.enqueue(1, &g2, &l, next());
      if (inputs_.any_bound()) db_.copy_from(db_ro_, 4ull * H, 0, 4ull * GH);  // db as one buffer
    }
  }

  void profile() {
    std::vector<ocl::Event> ev;
    ocl::finish();
    double t0 = now_seconds();
    dir_ == Dir::fwd ? forward(&ev) : backward(&ev);
    ocl::finish();
    wall_ms_ = 1e3 * (now_seconds() - t0);
    kernel_ms_ = 0;
    for (auto& e : ev) kernel_ms_ += e.elapsed_ms();
    launches_ = static_cast<double>(ev.size());
    // The non-recurrent part: the projection (fwd, first event) or the launches after the
    // loop (bwd: dR, dW, dx GEMMs and the bias sums).
    const size_t tail = d_.cell == Cell::gru ? 5 : 4;
    first_ms_ = 0;
    if (dir_ == Dir::fwd)
      first_ms_ = ev.front().elapsed_ms();
    else
      for (size_t i = ev.size() - tail; i < ev.size(); ++i) first_ms_ += ev[i].elapsed_ms();
  }

  RnnDesc d_;
  Dir dir_ = Dir::fwd;
  ocl::Buffer x_, wt_, rt_, r_, w_, b_, xp_, hr_, hs_, cs_, rh_, h0_, c0_, dy_, gw_, gr_, gcur_,
      dc_, dw_, dr_, db_, db_ro_, dx_;
  ocl::Buffer y_, ct_;  // bound fwd: y and cT copied out of hs_ and cs_
  ocl::Inputs inputs_;
  ocl::Kernel tw_, tr_;
  ocl::Buffer ping_[2];
  Gemm proj_, step_[2], back_[2], dr_gemm_, dw_gemm_, dx_gemm_;
  ocl::Kernel pw_fwd_, pw_bwd_, sums_, sums2_;
  size_t global_[2] = {1, 1}, local_[2] = {1, 1};
  int last_ = 0;
  double build_ms_ = 0, convert_ms_ = 0, kernel_ms_ = 0, wall_ms_ = 0, first_ms_ = 0, launches_ = 0;
};

}  // namespace

std::unique_ptr<RnnImpl> make_rnn_ocl_blas() {
  return std::make_unique<RnnOclBlas>();
}

}  // namespace pb
