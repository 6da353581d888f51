// cpu/native activations: element-wise loops in one pass (read, write) split across threads,
// sigmoid and tanh on SLEEF's vector expf (kernels/core/vmath.h); softmax and
// cross-entropy per position over the channel axis: max, sum of exp(x - max), scale.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include <omp.h>

#include "kernels/act/act.h"
#include "kernels/core/machine.h"
#include "kernels/core/vmath.h"

namespace pb {
namespace {

// Runs f(begin, count) over [0, n) split into one range per thread (multiples of 64 floats, so
// that no two threads share a cache line); small arrays run on the calling thread alone.
template <class F>
void parallel_ranges(int64_t n, F f) {
  constexpr int64_t kSerial = 1 << 14;  // below this, a parallel region costs more than it saves
#pragma omp parallel if (n >= kSerial)
  {
    const int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t per = ((n + nt - 1) / nt + 63) / 64 * 64;
    const int64_t b = std::min(n, t * per), e = std::min(n, b + per);
    if (b < e) f(b, e - b);
  }
}

// One position's softmax over ic contiguous channels: y = exp(x - max) / sum, giving the max
// and the sum (for the cross-entropy).
inline void softmax_row(const float* x, float* y, int64_t ic, float* max, float* sum) {
  // In vmath: GCC left this loop scalar under omp simd (a chain of vmaxss: 16x1000 ran in 19
  // us against oneDNN's 7).
  const float mx = vmath::max(x, ic);
  const double sm = vmath::exp_shifted_sum(x, y, ic, mx);
  const float r = static_cast<float>(1.0 / sm);
#pragma omp simd
  for (int64_t c = 0; c < ic; ++c) y[c] *= r;
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
  // Outputs larger than the last-level cache are written with non-temporal stores.
  bool stream_output() const {
    return static_cast<size_t>(d_.size()) * sizeof(float) > cache_bytes(0);
  }

  void eltwise_fwd() {
    const float* x = in_[0]->data();
    float* y = out_[0].data();
    const int64_t n = d_.size();
    const bool nt = stream_output();
    const ActFunc f = d_.func;
    parallel_ranges(n, [&](int64_t b, int64_t c) {
      if (f == ActFunc::relu)
        vmath::relu(x + b, y + b, c, nt);
      else if (f == ActFunc::sigmoid)
        vmath::sigmoid(x + b, y + b, c, nt);
      else
        vmath::tanh(x + b, y + b, c, nt);
    });
  }

  void eltwise_bwd() {
    const float* x = in_[0]->data();
    const float* dy = in_[1]->data();
    float* dx = out_[0].data();
    const int64_t n = d_.size();
    const bool nt = stream_output();
    const ActFunc f = d_.func;
    parallel_ranges(n, [&](int64_t b, int64_t c) {
      if (f == ActFunc::relu)
        vmath::relu_bwd(x + b, dy + b, dx + b, c, nt);
      else if (f == ActFunc::sigmoid)
        vmath::sigmoid_bwd(x + b, dy + b, dx + b, c, nt);
      else
        vmath::tanh_bwd(x + b, dy + b, dx + b, c, nt);
    });
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
    if (xent) check_labels(d_, aux);  // here, not as an exception inside the parallel loop
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t n = 0; n < d_.mb; ++n)
      for (int64_t b = 0; b < blocks; ++b) {
        const int64_t i0 = b * kB, w = std::min(kB, hw - i0);
        const int64_t base = n * ic * hw + i0;
        float m[kB], s[kB];
        if (d_.func == ActFunc::softmax && !fwd) {  // dx = y * (dy - sum dy*y)
          const float* dy = aux;
          if (w == 1) {
            // One position, channels hw apart. Contiguous (hw = 1), the sum goes through vmath:
            // GCC left this loop scalar here under omp simd (16x1000 ran in 7 us against
            // oneDNN's 3).
            double acc = 0;
            if (hw == 1) {
              acc = vmath::dot(dy + base, x + base, ic);
            } else {
#pragma omp simd reduction(+ : acc)
              for (int64_t c = 0; c < ic; ++c) acc += dy[base + c * hw] * x[base + c * hw];
            }
            const float dot = static_cast<float>(acc);
#pragma omp simd
            for (int64_t c = 0; c < ic; ++c)
              y[base + c * hw] = x[base + c * hw] * (dy[base + c * hw] - dot);
          } else {
            std::fill(s, s + w, 0.0f);
            for (int64_t c = 0; c < ic; ++c) {
              const int64_t o = base + c * hw;
#pragma omp simd
              for (int64_t j = 0; j < w; ++j) s[j] += dy[o + j] * x[o + j];
            }
            for (int64_t c = 0; c < ic; ++c) {
              const int64_t o = base + c * hw;
#pragma omp simd
              for (int64_t j = 0; j < w; ++j) y[o + j] = x[o + j] * (dy[o + j] - s[j]);
            }
          }
          continue;
        }
        if (hw == 1) {  // the usual ih = iw = 1: channels are contiguous
          softmax_row(x + base, y + base, ic, &m[0], &s[0]);
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
            float t[kB];
#pragma omp simd
            for (int64_t j = 0; j < w; ++j) t[j] = x[o + j] - m[j];
            vmath::exp(t, y + o, w);
#pragma omp simd
            for (int64_t j = 0; j < w; ++j) s[j] += y[o + j];
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
