// cpu/native pooling: OpenMP over (n, c) planes; windows are separable (a row pass into a small
// per-thread buffer, then a column pass), so both passes are unit- or fixed-stride SIMD loops and
// each plane is read from memory once and written once; rows shorter than 16 outputs, and windows
// of 3x3 and more on planes that fit half of L2, go 16 planes at a time through a transposed copy
// instead (forward_blocked). Max backward scatters diff_dst through an argmax workspace recorded
// in forward_state(): the window index of the first maximum in row-major scan order (strict '>'
// while scanning, so ties go to the earliest element).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/core/machine.h"
#include "kernels/gemm/cpu/packed_sgemm.h"  // transpose_words
#include "kernels/pool/cpu/host_pool.h"

namespace pb {
namespace {

// Output columns ow whose window column j lies in the image: 0 <= ow*s - p + j < n.
struct Range {
  int64_t lo, hi;
};
Range valid_outputs(int64_t j, int64_t s, int64_t p, int64_t n, int64_t out) {
  const int64_t a = p - j;  // need ow*s >= a
  int64_t lo = a <= 0 ? 0 : (a + s - 1) / s;
  int64_t b = n - 1 + p - j;  // need ow*s <= b
  int64_t hi = b < 0 ? 0 : std::min(out, b / s + 1);
  return {lo, std::max(lo, hi)};
}

inline float op_max(float a, float b) {
  return b > a ? b : a;
}

// Row pass: h[ow] = reduce over window columns of x (one image row); SW > 0 fixes the stride.
template <bool Max, int SW>
void row_reduce(const PoolDesc& d, const float* x, float* h) {
  const int64_t sw = SW > 0 ? SW : d.sw;
  const float init = Max ? -INFINITY : 0.0f;
  if (d.ow == 1) {  // one window per row (global pooling): a contiguous reduction
    const int64_t c0 = std::max<int64_t>(0, -d.pw), c1 = std::min(d.iw, d.kw - d.pw);
    float a = init;
    if (Max) {
#pragma omp simd reduction(max : a)
      for (int64_t c = c0; c < c1; ++c) a = op_max(a, x[c]);
    } else {
#pragma omp simd reduction(+ : a)
      for (int64_t c = c0; c < c1; ++c) a += x[c];
    }
    h[0] = a;
    return;
  }
  for (int64_t o = 0; o < d.ow; ++o) h[o] = init;
  for (int64_t j = 0; j < d.kw; ++j) {
    Range r = valid_outputs(j, sw, d.pw, d.iw, d.ow);
    const float* p = x + j - d.pw;
#pragma omp simd
    for (int64_t o = r.lo; o < r.hi; ++o) h[o] = Max ? op_max(h[o], p[o * sw]) : h[o] + p[o * sw];
  }
}

class PoolCpuNative : public HostPool {
 public:
  std::string name() const override { return "cpu/native"; }
  size_t workspace_bytes() const override {
    return ws8_.size() + (ws32_.size() + arg_x_.size() + arg_i_.size()) * 4;
  }

  void run() override {
    // The thread count may have grown since plan(): more per-thread buffers (outside any
    // parallel region; a no-op otherwise).
    const size_t need = static_cast<size_t>(scratch_stride_) * omp_get_max_threads();
    if (scratch_.size() < need) scratch_.resize(need);
    if (dir_ == Dir::fwd) {
      d_.alg == PoolAlg::max ? forward<true>() : forward<false>();
    } else if (d_.alg == PoolAlg::max) {
      ws8_.empty() ? backward_max(ws32_.data()) : backward_max(ws8_.data());
    } else {
      backward_avg();
    }
  }

  // Backward of max pooling: the argmax workspace from the source (the forward's record).
  void forward_state() override {
    if (dir_ != Dir::bwd || d_.alg != PoolAlg::max) return;
    if (d_.ws_elem_bytes() == 1)
      record_argmax(&ws8_);
    else
      record_argmax(&ws32_);
  }

 protected:
  void prepare_more() override {
    // Column counts for avgnp divisors (rows likewise); avgp divides by kh*kw.
    cnt_h_ = counts(d_.oh, d_.sh, d_.ph, d_.ih, d_.kh);
    cnt_w_ = counts(d_.ow, d_.sw, d_.pw, d_.iw, d_.kw);
    ws8_.clear();
    ws32_.clear();
    // Window index -> (row, column) offsets within the window.
    di_.resize(d_.kh * d_.kw);
    dj_.resize(d_.kh * d_.kw);
    for (int64_t k = 0; k < d_.kh * d_.kw; ++k) di_[k] = k / d_.kw, dj_[k] = k % d_.kw;
    // Per-thread row buffers (ih x ow, and ow), or for blocked() the transposed planes and
    // outputs of one group, allocated here rather than in every run().
    scratch_stride_ = (d_.ih * d_.ow + d_.ow + 15) / 16 * 16;
    if (blocked())
      scratch_stride_ = std::max(scratch_stride_, (d_.ih * d_.iw + d_.oh * d_.ow) * kLanes);
    scratch_.assign(static_cast<size_t>(scratch_stride_) * omp_get_max_threads(), 0.0f);
  }

 private:
  static std::vector<float> counts(int64_t out, int64_t s, int64_t p, int64_t n, int64_t k) {
    std::vector<float> c(out);
    for (int64_t o = 0; o < out; ++o)
      c[o] = static_cast<float>(std::min(o * s - p + k, n) - std::max<int64_t>(o * s - p, 0));
    return c;
  }
  float divisor(int64_t oh, int64_t ow) const {
    return d_.alg == PoolAlg::avg_p ? static_cast<float>(d_.kh * d_.kw) : cnt_h_[oh] * cnt_w_[ow];
  }
  int64_t planes() const { return d_.mb * d_.ic; }
  // Global pooling: one window covers the whole plane, with no padding (ResNet's avgpool).
  bool global() const {
    return d_.oh == 1 && d_.ow == 1 && d_.ph == 0 && d_.pw == 0 && d_.kh == d_.ih && d_.kw == d_.iw;
  }

  // One contiguous reduction per plane: no row buffers, no per-row calls.
  template <bool Max>
  void forward_global() {
    const int64_t hw = d_.ih * d_.iw, np = planes();
    const float* src = src_->data();
    float* dst = out_.data();
    const float k = divisor(0, 0);
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < np; ++p) {
      const float* x = src + p * hw;
      float a = Max ? -INFINITY : 0.0f;
      if (Max) {
#pragma omp simd reduction(max : a)
        for (int64_t i = 0; i < hw; ++i) a = op_max(a, x[i]);
      } else {
#pragma omp simd reduction(+ : a)
        for (int64_t i = 0; i < hw; ++i) a += x[i];
      }
      dst[p] = Max ? a : a / k;  // division, not a reciprocal multiply: one rounding
    }
  }

  // Its transpose: every source element of a plane gets diff_dst / divisor.
  void backward_avg_global() {
    const int64_t hw = d_.ih * d_.iw, np = planes();
    const float* dy = dy_->data();
    float* dx = out_.data();
    const float k = divisor(0, 0);
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < np; ++p) {
      const float v = dy[p] / k;
      float* x = dx + p * hw;
#pragma omp simd
      for (int64_t i = 0; i < hw; ++i) x[i] = v;
    }
  }

  template <bool Max>
  void forward() {
    if (global()) return forward_global<Max>();
    int64_t p0 = 0;  // the planes the separable passes start at
    if (blocked()) p0 = forward_blocked<Max>();
    if (d_.sw == 1)
      forward_sw<Max, 1>(p0);
    else if (d_.sw == 2)
      forward_sw<Max, 2>(p0);
    else
      forward_sw<Max, 0>(p0);
  }

  // Rows shorter than a vector (AlexNet's pool2 and pool5, VGG-16's pool4 and pool5): the
  // separable passes spent their time in loop overhead on rows of 6-14 outputs (0.2-0.5x oneDNN);
  // and larger windows on planes that fit the cache (below).
  // Here kLanes planes at a time are transposed into [row][column][plane] (oneDNN's nChw16c,
  // within the call), every output takes its window's kLanes-wide rows whole, and the outputs are
  // transposed back. Returns the planes done (whole groups of kLanes; the rest go the other way).
  static constexpr int64_t kLanes = 16;
  bool blocked() const {
    if (planes() < kLanes) return false;
    if (d_.ow < kLanes) return true;
    // Windows of 3x3 and more on planes whose group (input and output, transposed) fits half of
    // L2: every window row is then kLanes-wide vectors instead of strided loads into a row
    // buffer. Zen 5 family 26, 2 threads, alternating runs (primbench run pool, medians of
    // 20-30), ms separable -> blocked: AlexNet's pool1 (3x3 s2, 55x55) max 1.05-1.07 -> 0.78-0.84
    // (onednn/auto 0.82-0.95), avg 1.25-1.28 -> 0.93; GoogLeNet's 3x3 s1 at 28x28 1.39-1.46 ->
    // 0.89-0.96. Larger planes lost (VGG-16's 2x2 s2 at 224x224 8.5 -> 10.5), and ResNet-50's
    // pool1 (3x3 s2, 112x112) was even (3.12-3.22 -> 3.07-3.09).
    const double group = 4.0 * kLanes * (d_.ih * d_.iw + d_.oh * d_.ow);
    return d_.kh * d_.kw >= 9 && group <= cache_bytes(2, 1 << 20) / 2;
  }
  template <bool Max>
  int64_t forward_blocked() {
    const PoolDesc& d = d_;
    const int64_t hw = d.ih * d.iw, ohw = d.oh * d.ow, groups = planes() / kLanes;
    const float* src = src_->data();
    float* dst = out_.data();
#pragma omp parallel
    {
      float* xt = scratch_.data() + scratch_stride_ * omp_get_thread_num();
      float* yt = xt + hw * kLanes;
#pragma omp for schedule(static)
      for (int64_t g = 0; g < groups; ++g) {
        transpose_words(src + g * kLanes * hw, hw, kLanes, hw, xt, kLanes);
        for (int64_t oh = 0; oh < d.oh; ++oh) {
          const int64_t r0 = std::max<int64_t>(oh * d.sh - d.ph, 0);
          const int64_t r1 = std::min(oh * d.sh - d.ph + d.kh, d.ih);
          for (int64_t ow = 0; ow < d.ow; ++ow) {
            const int64_t c0 = std::max<int64_t>(ow * d.sw - d.pw, 0);
            const int64_t c1 = std::min(ow * d.sw - d.pw + d.kw, d.iw);
            float acc[kLanes];
            std::fill(acc, acc + kLanes, Max ? -INFINITY : 0.0f);
            for (int64_t r = r0; r < r1; ++r)
              for (int64_t c = c0; c < c1; ++c) {
                const float* v = xt + (r * d.iw + c) * kLanes;
#pragma omp simd
                for (int64_t l = 0; l < kLanes; ++l)
                  acc[l] = Max ? op_max(acc[l], v[l]) : acc[l] + v[l];
              }
            float* o = yt + (oh * d.ow + ow) * kLanes;
            const float k = Max ? 1.0f : divisor(oh, ow);
#pragma omp simd
            for (int64_t l = 0; l < kLanes; ++l) o[l] = Max ? acc[l] : acc[l] / k;
          }
        }
        transpose_words(yt, kLanes, ohw, kLanes, dst + g * kLanes * ohw, ohw);
      }
    }
    return groups * kLanes;
  }

  template <bool Max, int SW>
  void forward_sw(int64_t p_begin) {
    const PoolDesc& d = d_;
    const float* src = src_->data();
    float* dst = out_.data();
    if (p_begin >= planes()) return;
#pragma omp parallel
    {
      float* h = scratch_.data() + scratch_stride_ * omp_get_thread_num();
#pragma omp for schedule(static)
      for (int64_t p = p_begin; p < planes(); ++p) {
        const float* x = src + p * d.ih * d.iw;
        float* y = dst + p * d.oh * d.ow;
        for (int64_t r = 0; r < d.ih; ++r) row_reduce<Max, SW>(d, x + r * d.iw, h + r * d.ow);
        for (int64_t oh = 0; oh < d.oh; ++oh) {
          const int64_t r0 = std::max<int64_t>(oh * d.sh - d.ph, 0);
          const int64_t r1 = std::min(oh * d.sh - d.ph + d.kh, d.ih);
          float* yo = y + oh * d.ow;
          const float* h0 = h + r0 * d.ow;
#pragma omp simd
          for (int64_t o = 0; o < d.ow; ++o) yo[o] = h0[o];
          for (int64_t r = r0 + 1; r < r1; ++r) {
            const float* hr = h + r * d.ow;
#pragma omp simd
            for (int64_t o = 0; o < d.ow; ++o) yo[o] = Max ? op_max(yo[o], hr[o]) : yo[o] + hr[o];
          }
          if (!Max) {
            // Division (not a reciprocal multiply): one rounding of an exact integer sum.
            if (d.alg == PoolAlg::avg_p) {
              const float k = static_cast<float>(d.kh * d.kw);
#pragma omp simd
              for (int64_t o = 0; o < d.ow; ++o) yo[o] /= k;
            } else {
              const float ch = cnt_h_[oh];
              const float* cw = cnt_w_.data();
#pragma omp simd
              for (int64_t o = 0; o < d.ow; ++o) yo[o] /= ch * cw[o];
            }
          }
        }
      }
    }
  }

  // Untimed: the window index of the first maximum of every output window. kLanes planes at a
  // time as forward_blocked reads them (the rest one by one): each output's window in scan order,
  // a vector of kLanes planes per element, the best value and its index replaced where strictly
  // greater or where none was taken yet (ties and NaNs keep the first, as the scan below). Plane
  // by plane (the loop below, now for the rest), a call took 48-57 ms on ResNet-50's pool1 (now
  // 5.1-5.8), 4.3-4.9 on AlexNet's pool1 (1.1-1.4) and 2.9-3.0 on its pool2 (0.63): about 10
  // times their forward and backward together (perf samples; Zen 5 family 26, 2 threads).
  template <class T>
  void record_argmax(std::vector<T>* ws) {
    const PoolDesc& d = d_;
    ws->resize(d.dst_size());  // every element written below
    const float* src = src_->data();
    const int64_t hw = d.ih * d.iw, ohw = d.oh * d.ow, groups = planes() / kLanes;
    const size_t nt = omp_get_max_threads();
    if (arg_x_.size() < nt * hw * kLanes) arg_x_.resize(nt * hw * kLanes);
    if (arg_i_.size() < nt * ohw * kLanes) arg_i_.resize(nt * ohw * kLanes);
    T* w = ws->data();
#pragma omp parallel for schedule(static)
    for (int64_t g = 0; g < groups; ++g) {
      float* xt = arg_x_.data() + hw * kLanes * omp_get_thread_num();
      int32_t* it = arg_i_.data() + ohw * kLanes * omp_get_thread_num();
      transpose_words(src + g * kLanes * hw, hw, kLanes, hw, xt, kLanes);
      for (int64_t oh = 0; oh < d.oh; ++oh)
        for (int64_t ow = 0; ow < d.ow; ++ow) {
          const int64_t y0 = oh * d.sh - d.ph, x0 = ow * d.sw - d.pw;
          float bv[kLanes];
          int32_t* bi = it + (oh * d.ow + ow) * kLanes;
          std::fill(bv, bv + kLanes, 0.0f);
          std::fill(bi, bi + kLanes, -1);
          for (int64_t r = std::max<int64_t>(y0, 0); r < std::min(y0 + d.kh, d.ih); ++r)
            for (int64_t c = std::max<int64_t>(x0, 0); c < std::min(x0 + d.kw, d.iw); ++c) {
              const float* v = xt + (r * d.iw + c) * kLanes;
              const int32_t k = static_cast<int32_t>((r - y0) * d.kw + (c - x0));
#pragma omp simd
              for (int64_t l = 0; l < kLanes; ++l) {
                const bool take = (bi[l] < 0) | (v[l] > bv[l]);
                bv[l] = take ? v[l] : bv[l];
                bi[l] = take ? k : bi[l];
              }
            }
        }
      for (int64_t l = 0; l < kLanes; ++l) {
        T* o = w + (g * kLanes + l) * ohw;
        for (int64_t q = 0; q < ohw; ++q) o[q] = static_cast<T>(it[q * kLanes + l]);
      }
    }
#pragma omp parallel for schedule(static)
    for (int64_t p = groups * kLanes; p < planes(); ++p) {
      const float* x = src + p * d.ih * d.iw;
      for (int64_t oh = 0; oh < d.oh; ++oh)
        for (int64_t ow = 0; ow < d.ow; ++ow) {
          int64_t best = -1;
          float bv = 0;
          for (int64_t i = 0; i < d.kh; ++i) {
            const int64_t r = oh * d.sh - d.ph + i;
            if (r < 0 || r >= d.ih) continue;
            for (int64_t j = 0; j < d.kw; ++j) {
              const int64_t c = ow * d.sw - d.pw + j;
              if (c < 0 || c >= d.iw) continue;
              if (best < 0 || x[r * d.iw + c] > bv) best = i * d.kw + j, bv = x[r * d.iw + c];
            }
          }
          (*ws)[(p * d.oh + oh) * d.ow + ow] = static_cast<T>(best);
        }
    }
  }

  template <class T>
  void backward_max(const T* ws) {
    const PoolDesc& d = d_;
    const float* dy = dy_->data();
    float* dx = out_.data();
    const int64_t* di = di_.data();
    const int64_t* dj = dj_.data();
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < planes(); ++p) {
      float* x = dx + p * d.ih * d.iw;
      const float* g = dy + p * d.oh * d.ow;
      const T* w = ws + p * d.oh * d.ow;
      std::fill(x, x + d.ih * d.iw, 0.0f);
      for (int64_t oh = 0; oh < d.oh; ++oh) {
        const int64_t base = (oh * d.sh - d.ph) * d.iw - d.pw;  // window origin, may be < 0
        for (int64_t ow = 0; ow < d.ow; ++ow) {
          const int64_t k = w[oh * d.ow + ow];
          x[base + di[k] * d.iw + ow * d.sw + dj[k]] += g[oh * d.ow + ow];
        }
      }
    }
  }

  void backward_avg() {
    if (global())
      backward_avg_global();
    else if (d_.sw == 1)
      backward_avg_sw<1>();
    else if (d_.sw == 2)
      backward_avg_sw<2>();
    else
      backward_avg_sw<0>();
  }

  // The transpose of the separable forward: diff_dst / divisor is spread over window rows into
  // a per-thread (ih x ow) buffer, then over window columns into the diff_src plane.
  template <int SW>
  void backward_avg_sw() {
    const PoolDesc& d = d_;
    const int64_t sw = SW > 0 ? SW : d.sw;
    const float* dy = dy_->data();
    float* dx = out_.data();
#pragma omp parallel
    {
      float* gr = scratch_.data() + scratch_stride_ * omp_get_thread_num();
      float* t = gr + d.ih * d.ow;
#pragma omp for schedule(static)
      for (int64_t p = 0; p < planes(); ++p) {
        const float* g = dy + p * d.oh * d.ow;
        float* x = dx + p * d.ih * d.iw;
        std::fill(gr, gr + d.ih * d.ow, 0.0f);
        for (int64_t oh = 0; oh < d.oh; ++oh) {
          for (int64_t o = 0; o < d.ow; ++o) t[o] = g[oh * d.ow + o] / divisor(oh, o);
          const int64_t r0 = std::max<int64_t>(oh * d.sh - d.ph, 0);
          const int64_t r1 = std::min(oh * d.sh - d.ph + d.kh, d.ih);
          for (int64_t r = r0; r < r1; ++r) {
            float* gro = gr + r * d.ow;
#pragma omp simd
            for (int64_t o = 0; o < d.ow; ++o) gro[o] += t[o];
          }
        }
        std::fill(x, x + d.ih * d.iw, 0.0f);
        for (int64_t r = 0; r < d.ih; ++r) {
          const float* gro = gr + r * d.ow;
          float* xr = x + r * d.iw;
          if (d.ow == 1) {
            const int64_t c0 = std::max<int64_t>(0, -d.pw), c1 = std::min(d.iw, d.kw - d.pw);
            const float v = gro[0];
#pragma omp simd
            for (int64_t c = c0; c < c1; ++c) xr[c] += v;
            continue;
          }
          for (int64_t j = 0; j < d.kw; ++j) {
            Range rg = valid_outputs(j, sw, d.pw, d.iw, d.ow);
            float* q = xr + j - d.pw;
#pragma omp simd
            for (int64_t o = rg.lo; o < rg.hi; ++o) q[o * sw] += gro[o];
          }
        }
      }
    }
  }

  std::vector<float> cnt_h_, cnt_w_;
  std::vector<float> scratch_;  // omp_get_max_threads() x scratch_stride_ floats
  int64_t scratch_stride_ = 0;
  std::vector<uint8_t> ws8_;
  std::vector<int32_t> ws32_;
  // record_argmax: per thread, kLanes planes transposed and their outputs' window indices.
  std::vector<float> arg_x_;
  std::vector<int32_t> arg_i_;
  std::vector<int64_t> di_, dj_;
};

}  // namespace

std::unique_ptr<PoolImpl> make_pool_cpu_native() {
  return std::make_unique<PoolCpuNative>();
}

}  // namespace pb
