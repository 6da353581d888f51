// cpu/fft backward weights: per block of overlap-save tiles, r2c of the src patches (nh x nw) and
// of the diff_dst tiles (th x tw, zero-padded), then per frequency acc += X_src * X_dd^H (cgemm
// over the block's tiles); at the end, a pruned inverse DFT evaluates only the kh x kw lags.
#include "kernels/conv/cpu/fft_bwd_weights.h"

#include <cblas.h>
#include <omp.h>

#include <cmath>
#include <complex>
#include <cstring>

#include "kernels/core/error.h"
#include "kernels/core/threads.h"

namespace pb {
namespace fft {

namespace {

// Spectra of one block within this budget: large blocks give each cgemm a long sum over tiles
// per pass over the accumulator.
constexpr double kBlockBytes = 48.0 * (1 << 20);
// (c, o) pairs per chunk of the lag stage: its partial sums (nh x kw and kh x kw per pair) in L2.
constexpr int64_t kPairs = 256;

}  // namespace

Support BwdWeights::supports(const ConvDesc& d) {
  if (d.sh != 1 || d.sw != 1)
    return Support::no("cpu/fft bwd_w needs stride 1, got " + std::to_string(d.sh) + "x" +
                       std::to_string(d.sw));
  if (d.dh != 0 || d.dw != 0) return Support::no("cpu/fft bwd_w needs dilation 0 (dense)");
  if (filter_bytes(d, choose_geometry(d)) > 2.0 * (1 << 30))
    return Support::no("cpu/fft bwd_w: the accumulated spectra would need over 2 GiB");
  return Support::yes();
}

void BwdWeights::prepare(const ConvDesc& d, int nthreads) {
  d_ = d;
  nthreads_ = nthreads;
  geo_ = choose_geometry(d);
  tiles_ = geo_.tiles(d);
  const int64_t f = geo_.freqs(), n = geo_.nh * geo_.nw, nfx = geo_.nw / 2 + 1;
  const int64_t icg = d.icg(), ocg = d.ocg(), chans = icg + ocg;
  // Blocks of equal size, an even number of tiles each (16-byte aligned spectra for FFTW).
  int64_t bt = std::max<int64_t>(2, int64_t(kBlockBytes / (8.0 * chans * f)));
  blocks_ = (tiles_ + bt - 1) / bt;
  bt_ = ((tiles_ + blocks_ - 1) / blocks_ + 1) / 2 * 2;
  spec_ = Tensor({2 * f * chans * bt_});
  acc_ = Tensor({2 * f * icg * ocg});
  work_.clear();
  for (int t = 0; t < nthreads_; ++t)
    work_.emplace_back(Dims{std::max(bt_ * (n + 2 * f), 2 * (geo_.nh + d.kh) * d.kw * kPairs)});
  const int dims[2] = {int(geo_.nh), int(geo_.nw)};
  plan_.reset();  // destroying a plan takes the lock too: not under it
  {
    std::lock_guard<std::mutex> lock(planner_mutex());
    // bt patches [k][nh][nw] of one channel -> spectra [k][f], contiguous: with FFTW_ESTIMATE
    // this is several times faster on 30x30 than writing [f][k] directly (measured), so the
    // transpose to [f][k] is a separate pass.
    plan_.reset(fftwf_plan_many_dft_r2c(2, dims, int(bt_), work_[0].data(), nullptr, 1, int(n),
                                        cplx(spec_), nullptr, 1, int(f), FFTW_ESTIMATE));
  }
  if (!plan_) throw RuntimeError("cpu/fft: FFTW could not plan bwd_w of " + d.str());
  // The lag (ky, kx) of a real signal from its half spectrum: (1 / n) Re sum_fy e^(2 pi i fy
  // ky / nh) sum_fx c_fx e^(2 pi i fx kx / nw) X[fy][fx], c_fx = 2 except for fx = 0 and nw / 2
  // (their conjugate partners are in the half spectrum already).
  wx_ = Tensor({2 * d.kw * nfx});
  wy_ = Tensor({2 * d.kh * geo_.nh});
  const double pi2 = 2 * std::acos(-1.0);
  for (int64_t kx = 0; kx < d.kw; ++kx)
    for (int64_t fx = 0; fx < nfx; ++fx) {
      const double c = (fx == 0 || 2 * fx == geo_.nw) ? 1.0 : 2.0, a = pi2 * fx * kx / geo_.nw;
      wx_[2 * (kx * nfx + fx)] = float(c * std::cos(a) / double(n));
      wx_[2 * (kx * nfx + fx) + 1] = float(c * std::sin(a) / double(n));
    }
  for (int64_t ky = 0; ky < d.kh; ++ky)
    for (int64_t fy = 0; fy < geo_.nh; ++fy) {
      const double a = pi2 * fy * ky / geo_.nh;
      wy_[2 * (ky * geo_.nh + fy)] = float(std::cos(a));
      wy_[2 * (ky * geo_.nh + fy) + 1] = float(std::sin(a));
    }
}

size_t BwdWeights::workspace_bytes() const {
  size_t b = spec_.bytes() + acc_.bytes() + wx_.bytes() + wy_.bytes();
  for (const Tensor& t : work_) b += t.bytes();
  return b;
}

void BwdWeights::run(const float* src, const float* diff_dst, float* diff_wei) {
  SerialBlasScope serial_blas;  // one cgemm per OpenMP thread
  for (int64_t g = 0; g < d_.g; ++g) {
    for (int64_t b = 0; b < blocks_; ++b) {
      const int64_t t0 = b * bt_, nt = std::min(bt_, tiles_ - t0);
      transform_block(g, t0, nt, src, diff_dst);
      accumulate(nt, b == 0);
    }
    lags(g, diff_wei);
  }
}

// Spectra of tiles [t0, t0 + nt) of group g: channel c < icg is src channel c (the nh x nw patch
// under the tile's outputs), channel icg + o is diff_dst channel o (the th x tw tile, zero to nh x
// nw: the correlation's lags 0..k-1 then never wrap). Tiles past nt stay zero.
void BwdWeights::transform_block(int64_t g, int64_t t0, int64_t nt, const float* src,
                                 const float* dd) {
  const ConvDesc& d = d_;
  const int64_t icg = d.icg(), ocg = d.ocg(), nh = geo_.nh, nw = geo_.nw, n = nh * nw;
  const int64_t f = geo_.freqs(), per = geo_.tiles_h * geo_.tiles_w;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nthreads_)
  for (int64_t ch = 0; ch < icg + ocg; ++ch) {
    float* patches = work_[omp_get_thread_num()].data();
    const bool is_src = ch < icg;
    for (int64_t k = 0; k < bt_; ++k) {
      float* p = patches + k * n;
      if (k >= nt) {
        std::memset(p, 0, n * sizeof(float));
        continue;
      }
      const int64_t t = t0 + k, im = t / per;
      const int64_t y = (t % per) / geo_.tiles_w * geo_.th, x = (t % per) % geo_.tiles_w * geo_.tw;
      if (is_src)
        copy_patch(src + (im * d.ic + g * icg + ch) * d.ih * d.iw, d.ih, d.iw, y - d.ph, x - d.pw,
                   nh, nw, nh, nw, p);
      else
        copy_patch(dd + (im * d.oc + g * ocg + ch - icg) * d.oh * d.ow, d.oh, d.ow, y, x, geo_.th,
                   geo_.tw, nh, nw, p);
    }
    float* buf = patches + bt_ * n;
    fftwf_execute_dft_r2c(plan_.get(), patches, reinterpret_cast<fftwf_complex*>(buf));
    transpose_complex(buf, bt_, f, spec_.data() + 2 * ch * f * bt_);
  }
}

// acc[q] (icg x ocg) (+)= S[q] (icg x nt) * D[q]^H (nt x ocg) for every frequency q (rows f * bt
// apart in spec_): each
// frequency belongs to one thread, and blocks come in order, so the sums are deterministic.
void BwdWeights::accumulate(int64_t nt, bool first) {
  const int64_t icg = d_.icg(), ocg = d_.ocg(), f = geo_.freqs(), ld = f * bt_;
  const std::complex<float> one(1, 0), beta(first ? 0.f : 1.f, 0);
  const auto* s = reinterpret_cast<const std::complex<float>*>(spec_.data());
  auto* acc = reinterpret_cast<std::complex<float>*>(acc_.data());
#pragma omp parallel for schedule(static) num_threads(nthreads_)
  for (int64_t q = 0; q < f; ++q)
    cblas_cgemm(CblasRowMajor, CblasNoTrans, CblasConjTrans, int(icg), int(ocg), int(nt), &one,
                s + q * bt_, int(ld), s + (icg * f + q) * bt_, int(ld), &beta, acc + q * icg * ocg,
                int(ocg));
}

// diff_wei[g][o][c][ky][kx] from acc by the pruned inverse DFT (see prepare), per chunk of kPairs
// (c, o) pairs, as two small complex GEMMs: T[fy][kx] = wx (kw x nfx) * acc[fy] (nfx x pairs),
// then R = wy (kh x nh) * T (nh x kw pairs), whose real part is the lags.
void BwdWeights::lags(int64_t g, float* diff_wei) {
  const int64_t icg = d_.icg(), ocg = d_.ocg(), pairs = icg * ocg, nh = geo_.nh;
  const int64_t nfx = geo_.nw / 2 + 1, kh = d_.kh, kw = d_.kw, kk = kh * kw;
  const int64_t chunks = (pairs + kPairs - 1) / kPairs;
  const std::complex<float> one(1, 0), zero(0, 0);
  const auto* acc = reinterpret_cast<const std::complex<float>*>(acc_.data());
  const auto* wx = reinterpret_cast<const std::complex<float>*>(wx_.data());
  const auto* wy = reinterpret_cast<const std::complex<float>*>(wy_.data());
#pragma omp parallel for schedule(dynamic, 1) num_threads(nthreads_)
  for (int64_t ch = 0; ch < chunks; ++ch) {
    auto* t = reinterpret_cast<std::complex<float>*>(work_[omp_get_thread_num()].data());
    auto* r = t + nh * kw * kPairs;
    const int64_t p0 = ch * kPairs, np = std::min(kPairs, pairs - p0);
    for (int64_t fy = 0; fy < nh; ++fy)
      cblas_cgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(kw), int(np), int(nfx), &one, wx,
                  int(nfx), acc + fy * nfx * pairs + p0, int(pairs), &zero, t + fy * kw * kPairs,
                  int(kPairs));
    cblas_cgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(kh), int(kw * kPairs), int(nh), &one,
                wy, int(nh), t, int(kw * kPairs), &zero, r, int(kw * kPairs));
    for (int64_t p = p0; p < p0 + np; ++p) {
      float* out = diff_wei + ((g * ocg + p % ocg) * icg + p / ocg) * kk;
      for (int64_t k = 0; k < kk; ++k) out[k] = r[k * kPairs + p - p0].real();
    }
  }
}

}  // namespace fft
}  // namespace pb
