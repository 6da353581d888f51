// cpu/fft: FFTW3 (single precision) convolution by overlap-save tiles or the whole image:
// r2c of input patches, one complex GEMM per frequency over the input channels, c2r, crop.
#include <cblas.h>
#include <fftw3.h>
#include <omp.h>

#include <algorithm>
#include <complex>
#include <cstring>
#include <mutex>

#include "kernels/conv/cpu/fft_bwd_weights.h"
#include "kernels/conv/cpu/fft_common.h"
#include "kernels/conv/cpu/fft_geometry.h"
#include "kernels/conv/cpu/host_conv.h"
#include "kernels/conv/cpu/winograd_bwd_data.h"
#include "kernels/core/error.h"
#include "kernels/core/threads.h"

namespace pb {

namespace {

using fft::cplx;
using fft::Plan;
using fft::planner_mutex;

class FftConv final : public HostConv {
 public:
  std::string name() const override { return "cpu/fft"; }

  Support supports_fwd(const ConvDesc& d) const override {
    if (d.sh != 1 || d.sw != 1)
      return Support::no("fft needs stride 1, got " + std::to_string(d.sh) + "x" +
                         std::to_string(d.sw));
    if (d.dh != 0 || d.dw != 0) return Support::no("fft needs dilation 0 (dense)");
    fft::Geometry geo = fft::choose_geometry(d);
    if (fft::filter_bytes(d, geo) > 2.0 * (1 << 30))
      return Support::no("fft: filter spectra would need over 2 GiB");
    return Support::yes();
  }
  Support supports_bwd_d(const ConvDesc& d) const override {
    Support s = bwd_as_fwd::supports(d, name());
    return s ? supports_fwd(bwd_as_fwd::desc(d)) : s;
  }
  Support supports_bwd_w(const ConvDesc& d) const override { return fft::BwdWeights::supports(d); }

  void prepare_more() override {
    if (dir_ == Dir::bwd_w) {
      wspec_ = Tensor();
      filt_patches_.clear(), filt_specs_.clear(), filt_tmp_.clear();
      bww_.prepare(d_, omp_get_max_threads());
      return;
    }
    // bwd_d runs the forward on diff_dst with the flipped, transposed filter.
    const bool bwd = dir_ == Dir::bwd_d;
    e_ = bwd ? bwd_as_fwd::desc(d_) : d_;
    in_ = bwd ? diff_dst_->data() : src_->data();
    geo_ = fft::choose_geometry(e_);
    nthreads_ = omp_get_max_threads();
    bt_ = fft::block_tiles(e_, geo_, nthreads_);
    tiles_ = geo_.tiles(e_);
    blocks_ = (tiles_ + bt_ - 1) / bt_;
    const int64_t n = geo_.nh * geo_.nw, f = geo_.freqs(), icg = e_.icg(), ocg = e_.ocg();
    const int64_t rin = icg * bt_, rout = ocg * bt_;
    real_in_.clear(), real_out_.clear(), spec_in_.clear(), spec_out_.clear(), spec_tmp_.clear();
    for (int t = 0; t < nthreads_; ++t) {
      real_in_.emplace_back(Dims{rin * n});
      real_out_.emplace_back(Dims{rout * n});
      spec_in_.emplace_back(Dims{2 * f * rin});
      spec_out_.emplace_back(Dims{2 * f * rout});
      spec_tmp_.emplace_back(Dims{2 * f * std::max(rin, rout)});
    }
    const int dims[2] = {int(geo_.nh), int(geo_.nw)};
    {
      fwd_.reset(), inv_.reset();  // destroying a plan takes the lock too: not under it
      std::lock_guard<std::mutex> lock(planner_mutex());
      // Patches [b][nh][nw] <-> spectra [b][f] (b = channel * bt + tile), contiguous: FFTW_ESTIMATE
      // plans that write or read [f][b] directly were up to 5x slower (30x30, measured), so the
      // GEMMs' [f][b] layout comes from separate transposes.
      fwd_.reset(fftwf_plan_many_dft_r2c(2, dims, int(rin), real_in_[0].data(), nullptr, 1, int(n),
                                         cplx(spec_tmp_[0]), nullptr, 1, int(f), FFTW_ESTIMATE));
      inv_.reset(fftwf_plan_many_dft_c2r(2, dims, int(rout), cplx(spec_tmp_[0]), nullptr, 1, int(f),
                                         real_out_[0].data(), nullptr, 1, int(n), FFTW_ESTIMATE));
    }
    if (!fwd_ || !inv_) throw RuntimeError("cpu/fft: FFTW could not plan " + e_.str());
    // The filters' spectra and their transform's buffers and plan: planned once, as oneDNN and
    // cuDNN plan theirs, not in weights() (every training step; allocating the 53 MB of AlexNet
    // conv2's spectra and planning again there cost 240 ms of a 308 ms step, Zen 5 family 26).
    wspec_ = Tensor({2 * e_.g * f * ocg * icg});
    filt_patches_.clear(), filt_specs_.clear();
    filt_tmp_.assign(nthreads_ * e_.kh * e_.kw, 0.0f);
    for (int t = 0; t < nthreads_; ++t) {
      filt_patches_.emplace_back(Dims{kFilters * n});
      filt_specs_.emplace_back(Dims{2 * kFilters * f});
    }
    {
      filt_.reset();
      std::lock_guard<std::mutex> lock(planner_mutex());
      filt_.reset(fftwf_plan_many_dft_r2c(2, dims, int(kFilters), filt_patches_[0].data(), nullptr,
                                          1, int(n), cplx(filt_specs_[0]), nullptr, 1, int(f),
                                          FFTW_ESTIMATE));
    }
    if (!filt_)
      throw RuntimeError("cpu/fft: FFTW could not plan the filter spectra of " + e_.str());
  }

  // The weights' spectra (the plans and workspaces depend on the shape only).
  void weights() override {
    const float* w = wei_ ? wei_->data() : nullptr;
    const int64_t icg = d_.icg(), ocg = d_.ocg(), kk = d_.kh * d_.kw;
    if (dir_ == Dir::fwd)
      transform_filters([=](int64_t g, int64_t o, int64_t c, float*) {
        return w + ((g * ocg + o) * icg + c) * kk;
      });
    if (dir_ == Dir::bwd_d)
      transform_filters([&](int64_t g, int64_t o, int64_t c, float* tmp) {
        bwd_as_fwd::flipped_filter(d_, w, g, o, c, tmp);
        return static_cast<const float*>(tmp);
      });
  }

  void run_dir() override {
    if (dir_ == Dir::bwd_w) return bww_.run(src_->data(), diff_dst_->data(), dst_.data());
    SerialBlasScope serial_blas;  // one cgemm per OpenMP thread
    const int64_t items = e_.g * blocks_;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nthreads_)
    for (int64_t it = 0; it < items; ++it) {
      const int t = omp_get_thread_num();
      block(it / blocks_, it % blocks_, t);
    }
  }

  size_t workspace_bytes() const override {
    if (dir_ == Dir::bwd_w) return bww_.workspace_bytes();
    size_t b = wspec_.bytes();
    b += filt_tmp_.size() * sizeof(float);
    for (const auto* v :
         {&real_in_, &real_out_, &spec_in_, &spec_out_, &spec_tmp_, &filt_patches_, &filt_specs_})
      for (const auto& x : *v) b += x.bytes();
    return b;
  }

 private:
  // Tile t of the group -> image, top-left output row/col.
  void tile_pos(int64_t t, int64_t* n, int64_t* y, int64_t* x) const {
    const int64_t per = geo_.tiles_h * geo_.tiles_w;
    *n = t / per;
    *y = (t % per) / geo_.tiles_w * geo_.th;
    *x = (t % per) % geo_.tiles_w * geo_.tw;
  }

  // W[g][f][o][c] = conj(FFT(w[g][o][c] zero-padded to nh x nw)) / (nh * nw): correlation, with
  // FFTW's unnormalised inverse folded in. Blocks of kFilters filters of a group, shared by the
  // threads: one batched r2c each, then every frequency's values of the block written as one
  // contiguous run. (One filter at a time on one thread, each frequency written to its own cache
  // line, took 525 ms for the 335 MB of spectra of a 1x1 512 -> 2048 layer.)
  // filter(g, o, c, tmp): e_'s kh x kw filter of output channel o, input channel c (group g), in
  // place or written to tmp (kh * kw floats).
  template <class Filter>
  void transform_filters(Filter&& filter) {
    const int64_t icg = e_.icg(), ocg = e_.ocg(), f = geo_.freqs(), n = geo_.nh * geo_.nw;
    const int64_t kk = e_.kh * e_.kw, pairs = ocg * icg;
    const int64_t per_group = (pairs + kFilters - 1) / kFilters, blocks = e_.g * per_group;
    const int nt = std::max(1, nthreads_);
    const float scale = 1.0f / float(n);
    auto* w = reinterpret_cast<std::complex<float>*>(wspec_.data());
    // FFTW's new-array execute is thread-safe; each thread's arrays are aligned like the plan's.
#pragma omp parallel for schedule(dynamic, 4) num_threads(nt)
    for (int64_t b = 0; b < blocks; ++b) {
      const int t = omp_get_thread_num();
      const int64_t g = b / per_group, pr0 = (b % per_group) * kFilters;
      const int64_t nb = std::min(kFilters, pairs - pr0);
      float* patch = filt_patches_[t].data();
      float* tmp = filt_tmp_.data() + t * kk;
      std::fill(patch, patch + kFilters * n, 0.0f);
      for (int64_t j = 0; j < nb; ++j) {
        const int64_t pr = pr0 + j;
        const float* k = filter(g, pr / icg, pr % icg, tmp);
        for (int64_t i = 0; i < e_.kh; ++i)
          for (int64_t x = 0; x < e_.kw; ++x) patch[j * n + i * geo_.nw + x] = k[i * e_.kw + x];
      }
      fftwf_execute_dft_r2c(filt_.get(), patch, cplx(filt_specs_[t]));
      const auto* s = reinterpret_cast<const std::complex<float>*>(filt_specs_[t].data());
      for (int64_t q = 0; q < f; ++q) {
        std::complex<float>* out = w + (g * f + q) * pairs + pr0;
        for (int64_t j = 0; j < nb; ++j) out[j] = std::conj(s[j * f + q]) * scale;
      }
    }
  }

  void block(int64_t g, int64_t blk, int t) {
    const int64_t icg = e_.icg(), ocg = e_.ocg(), f = geo_.freqs(), nh = geo_.nh, nw = geo_.nw;
    const int64_t n = nh * nw, b = bt_, t0 = blk * b;
    // Patches: [c][tile] ; tiles past the end stay zero (computed, never stored).
    float* rin = real_in_[t].data();
    for (int64_t c = 0; c < icg; ++c)
      for (int64_t k = 0; k < b; ++k) {
        float* patch = rin + (c * b + k) * n;
        if (t0 + k >= tiles_) {
          std::memset(patch, 0, n * sizeof(float));
          continue;
        }
        int64_t im, y, x;
        tile_pos(t0 + k, &im, &y, &x);
        const float* plane = in_ + (im * e_.ic + g * icg + c) * e_.ih * e_.iw;
        fft::copy_patch(plane, e_.ih, e_.iw, y - e_.ph, x - e_.pw, nh, nw, nh, nw, patch);
      }
    fftwf_execute_dft_r2c(fwd_.get(), rin, cplx(spec_tmp_[t]));
    fft::transpose_complex(spec_tmp_[t].data(), icg * b, f, spec_in_[t].data());
    // Per frequency: Y[f] (ocg x b) = W[f] (ocg x icg) * X[f] (icg x b).
    const std::complex<float> one(1, 0), zero(0, 0);
    const auto* w = reinterpret_cast<const std::complex<float>*>(wspec_.data()) + g * f * ocg * icg;
    const auto* xs = reinterpret_cast<const std::complex<float>*>(spec_in_[t].data());
    auto* ys = reinterpret_cast<std::complex<float>*>(spec_out_[t].data());
    for (int64_t q = 0; q < f; ++q)
      cblas_cgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(ocg), int(b), int(icg), &one,
                  w + q * ocg * icg, int(icg), xs + q * icg * b, int(b), &zero, ys + q * ocg * b,
                  int(b));
    float* rout = real_out_[t].data();
    fft::transpose_complex(spec_out_[t].data(), f, ocg * b, spec_tmp_[t].data());
    fftwf_execute_dft_c2r(inv_.get(), cplx(spec_tmp_[t]), rout);
    // Crop: the first th x tw outputs of each tile are valid (no wrap-around).
    for (int64_t k = 0; k < b && t0 + k < tiles_; ++k) {
      int64_t im, y, x;
      tile_pos(t0 + k, &im, &y, &x);
      const int64_t rows = std::min(geo_.th, e_.oh - y), cols = std::min(geo_.tw, e_.ow - x);
      for (int64_t o = 0; o < ocg; ++o) {
        const float* r = rout + (o * b + k) * n;
        float* dst = dst_.data() + ((im * e_.oc + g * ocg + o) * e_.oh + y) * e_.ow + x;
        for (int64_t i = 0; i < rows; ++i) std::memcpy(dst + i * e_.ow, r + i * nw, cols * 4);
      }
    }
  }

  ConvDesc e_;                 // the forward problem run: d_, or bwd_d's (bwd_as_fwd::desc)
  const float* in_ = nullptr;  // its input: src or diff_dst
  fft::BwdWeights bww_;        // bwd_w
  fft::Geometry geo_;
  int nthreads_ = 1;
  int64_t bt_ = 1, tiles_ = 0, blocks_ = 0;
  static constexpr int64_t kFilters = 64;  // filters per batched transform
  Tensor wspec_;
  std::vector<Tensor> filt_patches_, filt_specs_;  // per thread
  std::vector<float> filt_tmp_;                    // per thread, a flipped filter (bwd_d)
  Plan filt_;
  std::vector<Tensor> real_in_, real_out_, spec_in_, spec_out_, spec_tmp_;  // per thread
  Plan fwd_, inv_;
};

}  // namespace

std::unique_ptr<ConvImpl> make_conv_fft() {
  return std::make_unique<FftConv>();
}

}  // namespace pb
