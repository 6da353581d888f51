// cpu/native batch-norm: OpenMP over channels, SIMD within each (n, c) plane. Training forward
// and backward take blocks of channels (channel_block below). The forward reads each from memory
// once: a shifted sum (mean), then the squared deviations from that mean (two-pass variance: no
// E[x^2] - E[x]^2 cancellation), then the normalisation, the last two passes re-reading the channel
// from cache. Plane partial sums are fp32 SIMD lanes, combined across planes in fp64.
#include <omp.h>

#include <algorithm>
#include <cmath>

#include "kernels/bnorm/cpu/host_bnorm.h"
#include "kernels/core/machine.h"

namespace pb {
namespace {

inline double sum_shifted(const float* x, int64_t n, float k) {
  float s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += x[i] - k;
  return s;
}

inline double sum_sq_dev(const float* x, int64_t n, float m) {
  float s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += (x[i] - m) * (x[i] - m);
  return s;
}

// y = (x - m) * a + b, optionally ReLU'd.
inline void normalize(const float* x, float* y, int64_t n, float m, float a, float b, bool relu) {
  if (relu) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] = std::max((x[i] - m) * a + b, 0.0f);
  } else {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) * a + b;
  }
}

// dy through the fused ReLU's mask (recomputed: y = (x - m) * a + b > 0).
inline float masked(float dy, float x, float m, float a, float b, bool relu) {
  return relu && (x - m) * a + b <= 0.0f ? 0.0f : dy;
}

// The backward's sums over a plane, sum g and sum g (x - m) with g = dy through the ReLU's mask,
// and with kStore dx = a g (inference). One loop per case: with `relu` and the store as run-time
// conditions GCC left the case without ReLU scalar (vaddss: 75% of res2_bn_c's backward in perf).
template <bool kRelu, bool kStore>
inline void dy_sums(const float* x, const float* dy, float* dx, int64_t n, float m, float a,
                    float b, float& s0, float& s1) {
  float t0 = 0, t1 = 0;
#pragma omp simd reduction(+ : t0, t1)
  for (int64_t i = 0; i < n; ++i) {
    const float g = masked(dy[i], x[i], m, a, b, kRelu);
    t0 += g;
    t1 += g * (x[i] - m);
    if (kStore) dx[i] = a * g;
  }
  s0 = t0;
  s1 = t1;
}

class BnormCpuNative : public HostBnorm {
 public:
  std::string name() const override { return "cpu/native"; }
  void run() override {
    if (dir_ == Dir::fwd)
      d_.inference ? forward_inference() : forward_training();
    else
      backward();
  }

 private:
  const float* plane(const Tensor* t, int64_t n, int64_t c) const {
    return t->data() + (n * d_.ic + c) * d_.hw();
  }
  float* plane(Tensor& t, int64_t n, int64_t c) { return t.data() + (n * d_.ic + c) * d_.hw(); }

  void forward_training() {
    const int64_t hw = d_.hw(), mb = d_.mb, ic = d_.ic;
    const double cnt = static_cast<double>(d_.reduce_size());
    const int64_t blk = channel_block(1);
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t c0 = 0; c0 < ic; c0 += blk) {
      const int64_t nc = std::min(blk, ic - c0);
      double s[kMaxBlock] = {}, m2[kMaxBlock] = {}, mean[kMaxBlock];
      float k[kMaxBlock], mf[kMaxBlock], af[kMaxBlock], bf[kMaxBlock];
      for (int64_t j = 0; j < nc; ++j) k[j] = plane(src_, 0, c0 + j)[0];  // shift: any sample
      // Each channel's planes in the same order as one channel at a time (the same sums), the
      // block's channels side by side: one contiguous run per image.
      for (int64_t n = 0; n < mb; ++n)
        for (int64_t j = 0; j < nc; ++j) s[j] += sum_shifted(plane(src_, n, c0 + j), hw, k[j]);
      for (int64_t j = 0; j < nc; ++j) {
        mean[j] = k[j] + s[j] / cnt;
        mf[j] = static_cast<float>(mean[j]);
      }
      for (int64_t n = 0; n < mb; ++n)
        for (int64_t j = 0; j < nc; ++j) m2[j] += sum_sq_dev(plane(src_, n, c0 + j), hw, mf[j]);
      for (int64_t j = 0; j < nc; ++j) {
        const int64_t c = c0 + j;
        // sum (x - mean)^2 = sum (x - mf)^2 - cnt (mean - mf)^2
        const double dm = mean[j] - mf[j];
        const double var = std::max(0.0, m2[j] / cnt - dm * dm);
        const double a = gamma(c) / std::sqrt(var + d_.eps);
        af[j] = static_cast<float>(a);
        bf[j] = static_cast<float>(beta(c) - dm * a);
        out_[1][c] = mf[j];
        out_[2][c] = static_cast<float>(var);
        update_running(c, mean[j], var);
      }
      for (int64_t n = 0; n < mb; ++n)
        for (int64_t j = 0; j < nc; ++j)
          normalize(plane(src_, n, c0 + j), plane(out_[0], n, c0 + j), hw, mf[j], af[j], bf[j],
                    d_.relu);
    }
  }

  // Channels per block of forward_training: as many as keep the block's planes in half of L2
  // (the second and third passes re-read them from there), at most kMaxBlock, and at least 4
  // blocks per thread. One channel at a time, a channel's planes lie a whole image apart: with
  // small planes (7 x 7 x 16 images, ResNet-50's res5) each pass waited on scattered lines.
  // Zen 5 family 26, 2 threads, onednn/auto time over ours (bench_bnorm, medians of 3, two
  // alternating runs of each build): res5_bn_c 0.46 -> 1.47-1.48, res5_bn_b 0.46-0.49 ->
  // 1.45-1.58, res4_bn_c 1.33-1.38 -> 2.29-2.54, res3_bn_c 1.43-1.55 -> 1.81-2.41; the large
  // planes (one or two channels per block) within the runs' noise (bn_conv1 2.12-2.68 ->
  // 1.92-2.08, res2_bn_c 1.75-2.46 -> 1.70-1.85).
  static constexpr int64_t kMaxBlock = 128;
  // `tensors`: how many tensors of the block the later passes re-read (the backward: x and dy).
  int64_t channel_block(int64_t tensors) const {
    const int64_t per_channel =
        std::max<int64_t>(1, tensors * d_.mb * d_.hw() * int64_t(sizeof(float)));
    const int64_t fit = static_cast<int64_t>(cache_bytes(2, size_t(1) << 20)) / 2 / per_channel;
    const int64_t balance = d_.ic / (4 * int64_t(omp_get_max_threads()));
    return std::clamp<int64_t>(std::min(fit, balance), 1, kMaxBlock);
  }

  void forward_inference() {
    const int64_t hw = d_.hw(), planes = d_.mb * d_.ic;
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < planes; ++p) {
      const int64_t c = p % d_.ic;
      const float a = static_cast<float>(gamma(c) / std::sqrt(double((*var_)[c]) + d_.eps));
      normalize(src_->data() + p * hw, out_[0].data() + p * hw, hw, (*mean_)[c], a, beta(c),
                d_.relu);
    }
  }

  // Over blocks of channels as forward_training, for the same reason (res5_bn_c ran at 0.69x
  // oneDNN one channel at a time); the block's x and dy planes both stay in L2 for the second pass.
  void backward() {
    const int64_t hw = d_.hw(), mb = d_.mb, ic = d_.ic;
    const double cnt = static_cast<double>(d_.reduce_size());
    const bool relu = d_.relu, train = !d_.inference;
    const int64_t blk = channel_block(2);
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t c0 = 0; c0 < ic; c0 += blk) {
      const int64_t nc = std::min(blk, ic - c0);
      double sdy[kMaxBlock] = {}, sdyx[kMaxBlock] = {}, rstd[kMaxBlock];
      float m[kMaxBlock], a[kMaxBlock], b[kMaxBlock];
      for (int64_t j = 0; j < nc; ++j) {
        const int64_t c = c0 + j;
        m[j] = (*mean_)[c];
        rstd[j] = 1.0 / std::sqrt(double((*var_)[c]) + d_.eps);
        a[j] = static_cast<float>(gamma(c) * rstd[j]);  // also dx's factor, gamma * rstd
        b[j] = beta(c);
      }
      // Inference: dx = gamma * rstd * dy needs no statistics, so it is written in this pass.
      for (int64_t n = 0; n < mb; ++n)
        for (int64_t j = 0; j < nc; ++j) {
          const float* x = plane(src_, n, c0 + j);
          const float* dy = plane(dy_, n, c0 + j);
          float* dx = plane(out_[0], n, c0 + j);
          const float mj = m[j], aj = a[j], bj = b[j];
          float s0 = 0, s1 = 0;
          if (relu)
            train ? dy_sums<true, false>(x, dy, dx, hw, mj, aj, bj, s0, s1)
                  : dy_sums<true, true>(x, dy, dx, hw, mj, aj, bj, s0, s1);
          else
            train ? dy_sums<false, false>(x, dy, dx, hw, mj, aj, bj, s0, s1)
                  : dy_sums<false, true>(x, dy, dx, hw, mj, aj, bj, s0, s1);
          sdy[j] += s0;
          sdyx[j] += s1;
        }
      if (train) {
        float mdy[kMaxBlock], k2[kMaxBlock];
        for (int64_t j = 0; j < nc; ++j) {
          mdy[j] = static_cast<float>(sdy[j] / cnt);
          k2[j] = static_cast<float>(rstd[j] * rstd[j] * sdyx[j] / cnt);
        }
        for (int64_t n = 0; n < mb; ++n)
          for (int64_t j = 0; j < nc; ++j) {
            const float* x = plane(src_, n, c0 + j);
            const float* dy = plane(dy_, n, c0 + j);
            float* dx = plane(out_[0], n, c0 + j);
            const float mj = m[j], aj = a[j], bj = b[j], mdyj = mdy[j], k2j = k2[j];
#pragma omp simd
            for (int64_t i = 0; i < hw; ++i)
              dx[i] = aj * (masked(dy[i], x[i], mj, aj, bj, relu) - mdyj - (x[i] - mj) * k2j);
          }
      }
      for (int64_t j = 0; j < nc; ++j) {
        size_t o = 1;
        if (d_.scale) out_[o++][c0 + j] = static_cast<float>(sdyx[j] * rstd[j]);
        if (d_.shift) out_[o][c0 + j] = static_cast<float>(sdy[j]);
      }
    }
  }
};

}  // namespace

std::unique_ptr<BnormImpl> make_bnorm_cpu_native() {
  return std::make_unique<BnormCpuNative>();
}

}  // namespace pb
