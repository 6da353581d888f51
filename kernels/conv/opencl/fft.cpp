// ocl/fft: FFT convolution (overlap-save tiles, stride 1, any groups, padding and dilation) on
// OpenCL. Per chunk of images, fft.cl transforms NH x NW input tiles to half spectra (r2c), one
// gemm_tiled_batched launch multiplies over the input channels for every (group, frequency), and
// fft.cl transforms back (c2r) and crops. The complex products Y_f = W_f X_f (ocg x icg times
// icg x tiles) are real GEMMs that reuse the tuned tiled kernel: three (3M) or one on the real
// embedding [[Wr, -Wi], [Wi, Wr]] [Xr; Xi] (M = 2 ocg, K = 2 icg), see use_gauss().
// Own radix-2 kernels, not clFFT: no new dependency, clFFT is untested on PoCL, and fusing the
// tile gather/crop and the GEMM layout into the transforms saves two passes over the data.
// The filters' spectra are a filter map on the device, a direct DFT of the taps (coefficients
// computed in fp64, stored in fp32; accumulation in fp64 where the device has it) (conjugated: the
// convolution is a cross-correlation; scaled by 1 / (NH NW) for the unnormalised inverse). Dilation
// only spreads the filter's taps within the FFT size, so it costs nothing extra.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernels/conv/opencl/ocl_conv.h"

namespace pb {
namespace {

// FFT sizes and tiles: NH x NW transforms, th x tw valid outputs per tile.
struct FftGeometry {
  int64_t nh = 0, nw = 0, th = 0, tw = 0, tiles_h = 0, tiles_w = 0;
  int64_t freqs() const { return nh * (nw / 2 + 1); }
};

// fft.cl handles sizes 8..64, but PoCL takes ~130 s to build a 64-point variant (~60 s for
// 32 x 32) and 32 loses little (a 56 x 56 layer: within 6% of 16 x 64 by the cost model).
constexpr int64_t kMaxFft = 32;
// Bytes of the filters' spectra in their real-embedded form: g * freqs * (2 icg) * (2 ocg) floats.
constexpr double kMaxFilterBytes = 1024.0 * (1 << 20);

int64_t eff_kh(const ConvDesc& d) {
  return (d.kh - 1) * (d.dh + 1) + 1;
}
int64_t eff_kw(const ConvDesc& d) {
  return (d.kw - 1) * (d.dw + 1) + 1;
}

double filter_bytes(const ConvDesc& d, const FftGeometry& geo) {
  return 16.0 * d.g * geo.freqs() * d.icg() * d.ocg();
}

// The largest size the geometry search considers: 16 unless PRIMBENCH_OCL_FFT_MAX says 32.
// PoCL builds a 16-point variant in ~15-25 s, a 16 x 32 or 32 x 32 one in 35-60 s (cached on
// disk afterwards); capping at 16 kept a cold default tools/bench run within its 10 minutes.
int64_t preferred_max_fft() {
  static const int64_t v = [] {
    const char* e = std::getenv("PRIMBENCH_OCL_FFT_MAX");
    return e && std::string(e) == "32" ? int64_t{32} : int64_t{16};
  }();
  return v;
}

// Power-of-two sizes from max(8, k) up to the first that covers the whole padded extent, within
// the preferred maximum (or the smallest size that holds the kernel, if larger).
std::vector<int64_t> fft_candidates(int64_t out, int64_t k) {
  std::vector<int64_t> v;
  const int64_t top = std::max(preferred_max_fft(), k);
  for (int64_t n = 8; n <= kMaxFft; n *= 2) {
    if (n > top && !v.empty()) break;
    if (n < k) continue;
    v.push_back(n);
    if (n >= out + k - 1) break;
  }
  return v;
}

// Minimises GEMM flops (8 per complex MAC; the tiles, the GEMM's N, rounded up to its 64-column
// tile) plus FFT work (~2.5 n log2 n per transform, weighted for its lower efficiency), preferring
// geometries whose filter spectra fit kMaxFilterBytes.
FftGeometry choose_geometry(const ConvDesc& d) {
  constexpr double kFftWeight = 4.0;
  FftGeometry best;
  double best_cost = 0;
  const int64_t kh = eff_kh(d), kw = eff_kw(d);
  for (int64_t nh : fft_candidates(d.oh, kh))
    for (int64_t nw : fft_candidates(d.ow, kw)) {
      FftGeometry g;
      g.nh = nh, g.nw = nw, g.th = nh - kh + 1, g.tw = nw - kw + 1;
      g.tiles_h = (d.oh + g.th - 1) / g.th, g.tiles_w = (d.ow + g.tw - 1) / g.tw;
      const double n = double(nh) * nw;
      const double tiles = double(ocl::round_up(d.mb * g.tiles_h * g.tiles_w, 64));
      const double mac = 8.0 * g.freqs() * d.icg() * d.ocg();
      const double fft = kFftWeight * 2.5 * n * std::log2(n) * (d.icg() + d.ocg());
      const double cost = d.g * tiles * (mac + fft);
      const bool fits = filter_bytes(d, g) <= kMaxFilterBytes;
      const bool best_fits = best.nh && filter_bytes(d, best) <= kMaxFilterBytes;
      if (!best.nh || (fits && !best_fits) || (fits == best_fits && cost < best_cost))
        best = g, best_cost = cost;
    }
  return best;
}

// 3M (three real GEMMs of ocg x icg: 6 flops per complex MAC) or one GEMM on the real embedding
// (2 ocg x 2 icg: 8 flops): whichever needs fewer GEMM tiles (64 rows of M x 128 of K, the
// tiled kernel's TSM and TSK). Measured on PoCL: the embedding wins at 64 channels, 3M at 256.
bool use_gauss(const ConvDesc& d) {
  auto up = [](int64_t x, int64_t to) { return (x + to - 1) / to; };
  const int64_t ocg = d.ocg(), icg = d.icg();
  return 3 * up(ocg, 64) * up(icg, 128) < up(2 * ocg, 64) * up(2 * icg, 128);
}

class ConvOclFft : public OclConv {
 public:
  std::string name() const override { return "ocl/fft"; }

  std::vector<std::pair<std::string, double>> extra_counters() const override {
    auto c = OclConv::extra_counters();
    c.emplace_back("fft_nh", double(geo_.nh));
    c.emplace_back("fft_nw", double(geo_.nw));
    c.emplace_back("fft_3m", gauss_ ? 1.0 : 0.0);
    return c;
  }

 protected:
  Support supports_fwd(const ConvDesc& d) const override {
    if (d.sh != 1 || d.sw != 1)
      return Support::no("ocl/fft needs stride 1, got " + std::to_string(d.sh) + "x" +
                         std::to_string(d.sw));
    if (eff_kh(d) > kMaxFft || eff_kw(d) > kMaxFft)
      return Support::no("ocl/fft: the (dilated) kernel must fit the largest FFT, " +
                         std::to_string(kMaxFft) + "x" + std::to_string(kMaxFft));
    if (filter_bytes(d, choose_geometry(d)) > kMaxFilterBytes)
      return Support::no("ocl/fft: filter spectra would need over 1 GiB");
    return Support::yes();
  }

  void prepare_fwd() override {
    const ConvDesc& d = d_;
    geo_ = choose_geometry(d);
    const int64_t nh = geo_.nh, nw = geo_.nw, nf = geo_.freqs();
    const int64_t icg = d.icg(), ocg = d.ocg();
    gauss_ = use_gauss(d);
    wei_ = ocl::Buffer(static_cast<size_t>(d.g * nf * (gauss_ ? 3 : 4) * icg * ocg) * 4);
    add_filter_map(spectra(), wei_);

    // Channels per work-item (fft.cl's vector width): the widest that wastes few lanes.
    auto vc = [](int64_t ch) { return ch >= 12 ? 16 : ch >= 6 ? 8 : 4; };
    auto prog = [&](int64_t v) {
      return program("conv/fft.cl",
                     "-cl-mad-enable -DNH=" + std::to_string(nh) + " -DNW=" + std::to_string(nw) +
                         " -DVC=" + std::to_string(v) + " -DGAUSS=" + (gauss_ ? "1" : "0"));
    };
    const int64_t vci = vc(icg), vco = vc(ocg);
    cl_program pin = prog(vci), pout = prog(vco);

    // Parts per frequency: Re and Im, plus Re + Im for the 3M products.
    const int64_t parts = gauss_ ? 3 : 2;
    const int64_t per_img = geo_.tiles_h * geo_.tiles_w;
    const size_t per_image = static_cast<size_t>(nf * per_img * parts * std::max(d.ic, d.oc)) * 4;
    const int64_t nb = std::clamp<int64_t>(kOclConvWorkspaceCap / per_image, 1, d.mb);
    x_ = workspace(static_cast<size_t>(nf * parts * d.ic * nb * per_img) * 4);
    y_ = workspace(static_cast<size_t>(nf * parts * d.oc * nb * per_img) * 4);
    auto i = [](int64_t v) { return static_cast<cl_int>(v); };
    auto l = [](int64_t v) { return static_cast<cl_long>(v); };
    const size_t one[3] = {1, 1, 1};
    for (int64_t n0 = 0; n0 < d.mb; n0 += nb) {
      const int64_t T = std::min(nb, d.mb - n0) * per_img;
      // fft.cl's layout: frequency stride fs, part stride ps, tile stride ld (channels: 1).
      const int64_t xfs = parts * icg * T, xps = gauss_ ? icg * T : icg,
                    xld = gauss_ ? icg : 2 * icg;
      const int64_t yfs = parts * ocg * T, yps = gauss_ ? ocg * T : ocg,
                    yld = gauss_ ? ocg : 2 * ocg;
      size_t gin[3] = {static_cast<size_t>(T), static_cast<size_t>((icg + vci - 1) / vci),
                       static_cast<size_t>(d.g)};
      add_step(pin, "fft_input", 3, gin, one)
          .set_args(src_, l(n0 * d.ic * d.ih * d.iw), x_, l(xfs), l(xps), i(xld), i(geo_.tiles_h),
                    i(geo_.tiles_w), i(geo_.th), i(geo_.tw), i(d.ic), i(icg), i(d.ih), i(d.iw),
                    i(d.ph), i(d.pw));
      if (gauss_)  // per (group, frequency, part): Y_p^T (ocg x T) = W_p (ocg x icg) X_p^T
        add_gemm({ocg, T, icg, &wei_, 0, ocg, ocg * icg, &x_, 0, icg, icg * T, 3 * d.g * nf, &y_, 0,
                  ocg, ocg * T, 3 * d.g * nf});
      else  // per (group, frequency): Y^T (2 ocg x T) = [[Wr, -Wi], [Wi, Wr]] [Xr; Xi]^T
        add_gemm({2 * ocg, T, 2 * icg, &wei_, 0, 2 * ocg, 4 * icg * ocg, &x_, 0, 2 * icg,
                  2 * icg * T, d.g * nf, &y_, 0, 2 * ocg, 2 * ocg * T, d.g * nf});
      size_t gout[3] = {static_cast<size_t>(T), static_cast<size_t>((ocg + vco - 1) / vco),
                        static_cast<size_t>(d.g)};
      add_step(pout, "fft_output", 3, gout, one)
          .set_args(y_, dst_, l(n0 * d.oc * d.oh * d.ow), l(yfs), l(yps), i(yld), i(geo_.tiles_h),
                    i(geo_.tiles_w), i(geo_.th), i(geo_.tw), i(d.oc), i(ocg), i(d.oh), i(d.ow));
    }
  }

 private:
  // Weights per (group, frequency), W = conj(FFT(w)) / (nh nw) with w zero-padded (and dilated)
  // to nh x nw; column-major. 3M: three ocg x icg matrices Wr, Wr + Wi, Wi - Wr (for the parts
  // Re + Im, Im, Re of X). Real embedding: one 2 ocg x 2 icg matrix [[Wr, -Wi], [Wi, Wr]].
  // As a filter map: each part of each frequency is a real combination of the taps (the DFT's
  // cosines and sines, from fp64).
  FilterMap spectra() const {
    const ConvDesc& d = d_;
    const int64_t nh = geo_.nh, nw = geo_.nw, w2 = nw / 2 + 1, nf = geo_.freqs();
    const int64_t icg = d.icg(), ocg = d.ocg(), kh = d.kh, kw = d.kw;
    const double pi = std::acos(-1.0), scale = 1.0 / double(nh * nw);
    const int64_t per_f = (gauss_ ? 3 : 4) * icg * ocg;
    // (coefficient of Re W, of Im W, offset in the frequency's block) per part.
    struct Part {
      double re, im;
      int64_t off;
    };
    // Real embedding: (o, c): Wr; (o, icg + c): -Wi; (ocg + o, c): Wi; (ocg + o, icg + c): Wr.
    const std::vector<Part> parts =
        gauss_ ? std::vector<Part>{{1, 0, 0}, {1, 1, icg * ocg}, {-1, 1, 2 * icg * ocg}}
               : std::vector<Part>{
                     {1, 0, 0}, {0, -1, icg * 2 * ocg}, {0, 1, ocg}, {1, 0, icg * 2 * ocg + ocg}};
    FilterMap m;
    m.a = nf * static_cast<int64_t>(parts.size());
    m.sg = nf * per_f;
    m.dense = true;  // the parts tile each frequency's block, the frequencies the group's
    for (int64_t k1 = 0; k1 < nh; ++k1)
      for (int64_t k2 = 0; k2 < w2; ++k2)
        for (const Part& p : parts) {
          for (int64_t i = 0; i < kh; ++i)
            for (int64_t j = 0; j < kw; ++j) {
              // W = scale * sum w e^{+i theta} (the conjugate): Re cos, Im sin.
              const double theta = 2 * pi *
                                   (double((k1 * i * (d.dh + 1)) % nh) / double(nh) +
                                    double((k2 * j * (d.dw + 1)) % nw) / double(nw));
              m.coef.push_back(
                  static_cast<float>(scale * (p.re * std::cos(theta) + p.im * std::sin(theta))));
            }
          m.aoff.push_back((k1 * w2 + k2) * per_f + p.off);
        }
    for (int64_t o = 0; o < ocg; ++o) m.ooff.push_back(o);
    for (int64_t c = 0; c < icg; ++c) m.coff.push_back(c * (gauss_ ? ocg : 2 * ocg));
    return m;
  }

  FftGeometry geo_;
  bool gauss_ = false;
  ocl::Buffer x_, y_;
};

}  // namespace

std::unique_ptr<ConvImpl> make_conv_ocl_fft() {
  return std::make_unique<ConvOclFft>();
}

}  // namespace pb
