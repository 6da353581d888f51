// cpu/native activations: OpenMP + SIMD element-wise loops (one pass: read, write), with an
// inlined polynomial exp (Cephes expf, ~1 ulp) so that sigmoid and tanh vectorise; softmax and
// cross-entropy per position over the channel axis: max, sum of exp(x - max), scale.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/act/act.h"

namespace pb {
namespace {

inline float vexp(float x) {
  x = std::min(std::max(x, -87.0f), 88.0f);
  const float n = std::floor(x * 1.44269504088896341f + 0.5f);
  const float r = x - n * 0.693359375f - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}
inline float vsigmoid(float x) {
  return 1.0f / (1.0f + vexp(-x));
}
inline float vtanh(float x) {
  const float t = vexp(-2.0f * std::fabs(x));
  return std::copysign((1.0f - t) / (1.0f + t), x);
}

// One position's softmax over ic channels `st` floats apart: y = exp(x - max) / sum, giving
// the max and the sum (for the cross-entropy).
inline void softmax_row(const float* x, float* y, int64_t ic, int64_t st, float* max, float* sum) {
  // The sum in fp64: 1e4 similar fp32 terms in 16 lanes drift by ~1e-5 (biased rounding).
  float mx = -INFINITY;
  double sm = 0;
#pragma omp simd reduction(max : mx)
  for (int64_t c = 0; c < ic; ++c) mx = std::max(mx, x[c * st]);
#pragma omp simd reduction(+ : sm)
  for (int64_t c = 0; c < ic; ++c) {
    const float e = vexp(x[c * st] - mx);
    y[c * st] = e;
    sm += e;
  }
  const float r = static_cast<float>(1.0 / sm);
#pragma omp simd
  for (int64_t c = 0; c < ic; ++c) y[c * st] *= r;
  *max = mx, *sum = static_cast<float>(sm);
}

class ActCpuNative : public ActImpl {
 public:
  std::string name() const override { return "cpu/native"; }
  Support supports(const ActDesc&, Dir dir) const override {
    return dir == Dir::fwd || dir == Dir::bwd ? Support::yes()
                                              : Support::no("act runs fwd and bwd");
  }
  void plan(const ActDesc& d, Dir dir, const std::vector<const Tensor*>& in) override {
    d_ = d;
    dir_ = dir;
    in_ = in;
    out_.clear();
    out_.emplace_back(Dims{d.mb, d.ic, d.ih, d.iw});
    if (d.func == ActFunc::xent && dir == Dir::fwd) out_.emplace_back(Dims{d.mb, d.ih, d.iw});
  }
  void run() override {
    if (d_.eltwise())
      dir_ == Dir::fwd ? eltwise_fwd() : eltwise_bwd();
    else
      softmax();
  }
  std::vector<Tensor> result() override {
    std::vector<Tensor> v;
    for (const Tensor& t : out_) v.push_back(t.clone());
    return v;
  }
  const Tensor* output_view(size_t i) const override {
    return i < out_.size() ? &out_[i] : nullptr;
  }

 private:
  void eltwise_fwd() {
    const float* x = in_[0]->data();
    float* y = out_[0].data();
    const int64_t n = d_.size();
    switch (d_.func) {
      case ActFunc::relu:
#pragma omp parallel for simd schedule(static)
        for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
        break;
      case ActFunc::sigmoid:
#pragma omp parallel for simd schedule(static)
        for (int64_t i = 0; i < n; ++i) y[i] = vsigmoid(x[i]);
        break;
      default:
#pragma omp parallel for simd schedule(static)
        for (int64_t i = 0; i < n; ++i) y[i] = vtanh(x[i]);
    }
  }

  void eltwise_bwd() {
    const float* x = in_[0]->data();
    const float* dy = in_[1]->data();
    float* dx = out_[0].data();
    const int64_t n = d_.size();
    switch (d_.func) {
      case ActFunc::relu:
#pragma omp parallel for simd schedule(static)
        for (int64_t i = 0; i < n; ++i) dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;
        break;
      case ActFunc::sigmoid:
#pragma omp parallel for simd schedule(static)
        for (int64_t i = 0; i < n; ++i) {
          const float s = vsigmoid(x[i]);
          dx[i] = dy[i] * s * (1.0f - s);
        }
        break;
      default:
#pragma omp parallel for simd schedule(static)
        for (int64_t i = 0; i < n; ++i) {
          const float t = vtanh(x[i]);
          dx[i] = dy[i] * (1.0f - t * t);
        }
    }
  }

  // Softmax family over the channel axis, a block of up to kB positions at a time (one when
  // ih*iw = 1, then the channel loops are unit-stride and vectorise over channels).
  void softmax() {
    constexpr int64_t kB = 64;
    const int64_t hw = d_.hw(), ic = d_.ic, blocks = (hw + kB - 1) / kB;
    const bool fwd = dir_ == Dir::fwd, xent = d_.func == ActFunc::xent;
    const float* x = in_[0]->data();
    const float* aux = in_.size() > 1 ? in_[1]->data() : nullptr;  // labels or diff_dst
    float* y = out_[0].data();
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t n = 0; n < d_.mb; ++n)
      for (int64_t b = 0; b < blocks; ++b) {
        const int64_t i0 = b * kB, w = std::min(kB, hw - i0);
        const int64_t base = n * ic * hw + i0;
        float m[kB], s[kB];
        if (d_.func == ActFunc::softmax && !fwd) {  // dx = y * (dy - sum dy*y)
          const float* dy = aux;
          std::fill(s, s + w, 0.0f);
          for (int64_t c = 0; c < ic; ++c) {
            const int64_t o = base + c * hw;
            for (int64_t j = 0; j < w; ++j) s[j] += dy[o + j] * x[o + j];
          }
          if (w == 1) {
            const float dot = s[0];
#pragma omp simd
            for (int64_t c = 0; c < ic; ++c)
              y[base + c * hw] = x[base + c * hw] * (dy[base + c * hw] - dot);
          } else {
            for (int64_t c = 0; c < ic; ++c) {
              const int64_t o = base + c * hw;
#pragma omp simd
              for (int64_t j = 0; j < w; ++j) y[o + j] = x[o + j] * (dy[o + j] - s[j]);
            }
          }
          continue;
        }
        if (w == 1) {
          // A literal stride 1 (the usual ih = iw = 1) inlines into unit-stride loops.
          if (hw == 1)
            softmax_row(x + base, y + base, ic, 1, &m[0], &s[0]);
          else
            softmax_row(x + base, y + base, ic, hw, &m[0], &s[0]);
        } else {
          std::fill(m, m + w, -INFINITY);
          std::fill(s, s + w, 0.0f);
          for (int64_t c = 0; c < ic; ++c) {
            const int64_t o = base + c * hw;
#pragma omp simd
            for (int64_t j = 0; j < w; ++j) m[j] = std::max(m[j], x[o + j]);
          }
          for (int64_t c = 0; c < ic; ++c) {
            const int64_t o = base + c * hw;
#pragma omp simd
            for (int64_t j = 0; j < w; ++j) {
              const float e = vexp(x[o + j] - m[j]);
              y[o + j] = e;
              s[j] += e;
            }
          }
          float r[kB];
          for (int64_t j = 0; j < w; ++j) r[j] = 1.0f / s[j];
          for (int64_t c = 0; c < ic; ++c) {
            const int64_t o = base + c * hw;
#pragma omp simd
            for (int64_t j = 0; j < w; ++j) y[o + j] *= r[j];
          }
        }
        if (!xent) continue;
        for (int64_t j = 0; j < w; ++j) {
          const int64_t pos = n * hw + i0 + j;
          const int64_t label = static_cast<int64_t>(aux[pos]);
          if (fwd) {
            // -log p[label] = log(sum) - (x[label] - max): no log of a rounded-to-zero p.
            out_[1][pos] = std::log(s[j]) - (x[base + label * hw + j] - m[j]);
          } else {
            y[base + label * hw + j] -= 1.0f;
          }
        }
      }
  }

  ActDesc d_;
  Dir dir_ = Dir::fwd;
  std::vector<const Tensor*> in_;
  std::vector<Tensor> out_;
};

}  // namespace

std::unique_ptr<ActImpl> make_act_cpu_native() {
  return std::make_unique<ActCpuNative>();
}

}  // namespace pb
