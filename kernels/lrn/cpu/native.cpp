// cpu/native LRN across channels: OpenMP over (image, channel) planes, the window sum of squares
// and the power vectorised over the plane's pixels (beta 0.75, AlexNet's and GoogLeNet's, as
// two square roots). Backward in two passes over a workspace: each channel's
// diff_dst * src * scale^(-beta-1) and scale^-beta, then the window sums of the first.
#include <cmath>

#include "kernels/lrn/cpu/host_lrn.h"

namespace pb {
namespace {

class LrnCpuNative : public HostLrn {
 public:
  std::string name() const override { return "cpu/native"; }

  void run() override {
    const LrnDesc& d = d_;
    const int64_t hw = d.hw(), C = d.ic, half = d.half();
    const float a = static_cast<float>(d.alpha / d.ls), k = static_cast<float>(d.k);
    const float* x = src_->data();
    float* y = out_.data();
    const bool b075 = d.beta == 0.75;
    const float nb = static_cast<float>(-d.beta);
    // scale^-beta of one plane into `out` (pixels of image n, channel c).
    auto inv_pow = [&](int64_t n, int64_t c, float* out) {
      const int64_t lo = c - half < 0 ? 0 : c - half, hi = c + half >= C ? C - 1 : c + half;
      for (int64_t p = 0; p < hw; ++p) out[p] = 0;
      for (int64_t j = lo; j <= hi; ++j) {
        const float* xj = x + (n * C + j) * hw;
#pragma omp simd
        for (int64_t p = 0; p < hw; ++p) out[p] += xj[p] * xj[p];
      }
      if (b075) {
#pragma omp simd
        for (int64_t p = 0; p < hw; ++p) {
          const float r = 1.0f / std::sqrt(k + a * out[p]);  // s^-1/2
          out[p] = r * std::sqrt(r);                         // s^-3/4
        }
      } else {
        for (int64_t p = 0; p < hw; ++p) out[p] = std::pow(k + a * out[p], nb);
      }
    };
    if (dir_ == Dir::fwd) {
#pragma omp parallel for schedule(static)
      for (int64_t nc = 0; nc < d.mb * C; ++nc) {
        float* yp = y + nc * hw;
        inv_pow(nc / C, nc % C, yp);
        const float* xp = x + nc * hw;
#pragma omp simd
        for (int64_t p = 0; p < hw; ++p) yp[p] *= xp[p];
      }
      return;
    }
    // Backward. t = dy * x * scale^(-beta-1) = dy * x * scale^-beta / scale; sb = scale^-beta.
    const float* dy = dy_->data();
    float* t = ws_.data();
    float* sb = ws_.data() + d.size();
#pragma omp parallel for schedule(static)
    for (int64_t nc = 0; nc < d.mb * C; ++nc) {
      const int64_t n = nc / C, c = nc % C;
      float* s = sb + nc * hw;
      inv_pow(n, c, s);
      // scale itself again, for the division (cheap next to the power).
      const int64_t lo = c - half < 0 ? 0 : c - half, hi = c + half >= C ? C - 1 : c + half;
      float* tp = t + nc * hw;
      for (int64_t p = 0; p < hw; ++p) tp[p] = 0;
      for (int64_t j = lo; j <= hi; ++j) {
        const float* xj = x + (n * C + j) * hw;
#pragma omp simd
        for (int64_t p = 0; p < hw; ++p) tp[p] += xj[p] * xj[p];
      }
      const float* xp = x + nc * hw;
      const float* gp = dy + nc * hw;
#pragma omp simd
      for (int64_t p = 0; p < hw; ++p) tp[p] = gp[p] * xp[p] * s[p] / (k + a * tp[p]);
    }
    const float coef = static_cast<float>(2 * d.alpha * d.beta / d.ls);
#pragma omp parallel for schedule(static)
    for (int64_t nc = 0; nc < d.mb * C; ++nc) {
      const int64_t n = nc / C, c = nc % C;
      const int64_t lo = c - half < 0 ? 0 : c - half, hi = c + half >= C ? C - 1 : c + half;
      float* dx = y + nc * hw;
      const float* xp = x + nc * hw;
      const float* gp = dy + nc * hw;
      const float* s = sb + nc * hw;
      for (int64_t p = 0; p < hw; ++p) dx[p] = 0;
      for (int64_t j = lo; j <= hi; ++j) {
        const float* tj = t + (n * C + j) * hw;
#pragma omp simd
        for (int64_t p = 0; p < hw; ++p) dx[p] += tj[p];
      }
#pragma omp simd
      for (int64_t p = 0; p < hw; ++p) dx[p] = gp[p] * s[p] - coef * xp[p] * dx[p];
    }
  }
  size_t workspace_bytes() const override {
    return ws_.bytes();
  }

 protected:
  void prepare_more() override {
    if (dir_ == Dir::bwd) ws_ = Tensor({2, d_.mb, d_.ic, d_.ih, d_.iw});
  }

 private:
  Tensor ws_;
};

}  // namespace

std::unique_ptr<LrnImpl> make_lrn_cpu_native() {
  return std::make_unique<LrnCpuNative>();
}

}  // namespace pb
