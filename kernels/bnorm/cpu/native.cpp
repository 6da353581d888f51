// cpu/native batch-norm: OpenMP over channels, SIMD within each (n, c) plane. Training forward
// reads each channel from memory once: a shifted sum (mean), then the squared deviations from
// that mean (two-pass variance: no E[x^2] - E[x]^2 cancellation), then the normalisation, the
// last two passes re-reading the channel from cache. Plane partial sums are fp32 SIMD lanes,
// combined across planes in fp64.
#include <algorithm>
#include <cmath>

#include "kernels/bnorm/cpu/host_bnorm.h"

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
    const int64_t hw = d_.hw(), mb = d_.mb;
    const double cnt = static_cast<double>(d_.reduce_size());
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t c = 0; c < d_.ic; ++c) {
      const float k = plane(src_, 0, c)[0];  // shift: any sample of the channel
      double s = 0;
      for (int64_t n = 0; n < mb; ++n) s += sum_shifted(plane(src_, n, c), hw, k);
      const double mean = k + s / cnt;
      const float mf = static_cast<float>(mean);
      double m2 = 0;
      for (int64_t n = 0; n < mb; ++n) m2 += sum_sq_dev(plane(src_, n, c), hw, mf);
      // sum (x - mean)^2 = sum (x - mf)^2 - cnt (mean - mf)^2
      const double var = std::max(0.0, m2 / cnt - (mean - mf) * (mean - mf));
      const double a = gamma(c) / std::sqrt(var + d_.eps);
      const float af = static_cast<float>(a), bf = static_cast<float>(beta(c) - (mean - mf) * a);
      for (int64_t n = 0; n < mb; ++n)
        normalize(plane(src_, n, c), plane(out_[0], n, c), hw, mf, af, bf, d_.relu);
      out_[1][c] = mf;
      out_[2][c] = static_cast<float>(var);
      update_running(c, mean, var);
    }
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

  void backward() {
    const int64_t hw = d_.hw(), mb = d_.mb;
    const double cnt = static_cast<double>(d_.reduce_size());
    const bool relu = d_.relu, train = !d_.inference;
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t c = 0; c < d_.ic; ++c) {
      const float m = (*mean_)[c];
      const double rstd = 1.0 / std::sqrt(double((*var_)[c]) + d_.eps);
      const float a = static_cast<float>(gamma(c) * rstd), b = beta(c);
      const float k1 = a;  // gamma * rstd
      double sdy = 0, sdyx = 0;
      // Inference: dx = gamma * rstd * dy needs no statistics, so it is written in this pass.
      for (int64_t n = 0; n < mb; ++n) {
        const float* x = plane(src_, n, c);
        const float* dy = plane(dy_, n, c);
        float* dx = plane(out_[0], n, c);
        float s0 = 0, s1 = 0;
#pragma omp simd reduction(+ : s0, s1)
        for (int64_t i = 0; i < hw; ++i) {
          const float g = masked(dy[i], x[i], m, a, b, relu);
          s0 += g;
          s1 += g * (x[i] - m);
          if (!train) dx[i] = k1 * g;
        }
        sdy += s0;
        sdyx += s1;
      }
      if (train) {
        const float mdy = static_cast<float>(sdy / cnt);
        const float k2 = static_cast<float>(rstd * rstd * sdyx / cnt);
        for (int64_t n = 0; n < mb; ++n) {
          const float* x = plane(src_, n, c);
          const float* dy = plane(dy_, n, c);
          float* dx = plane(out_[0], n, c);
#pragma omp simd
          for (int64_t i = 0; i < hw; ++i)
            dx[i] = k1 * (masked(dy[i], x[i], m, a, b, relu) - mdy - (x[i] - m) * k2);
        }
      }
      size_t o = 1;
      if (d_.scale) out_[o++][c] = static_cast<float>(sdyx * rstd);
      if (d_.shift) out_[o][c] = static_cast<float>(sdy);
    }
  }
};

}  // namespace

std::unique_ptr<BnormImpl> make_bnorm_cpu_native() {
  return std::make_unique<BnormCpuNative>();
}

}  // namespace pb
