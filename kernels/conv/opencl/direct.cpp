// ocl/direct: direct convolution on OpenCL, register-blocked over channels x one explicit
// float8/float16 vector of columns per work-item: forward (direct.cl), bwd_d and bwd_w
// (direct_bwd.cl; bwd_w sums per-chunk partials in order, no atomics). Any shape.
// Measured on PoCL 3.1 (2-core Zen 4): relying on PoCL's implicit vectorisation across
// work-items (one output pixel per work-item) ran at ~4 GFLOP/s; explicit vectors ~29.
#include <algorithm>
#include <cstring>
#include <sstream>

#include "kernels/conv/opencl/ocl_conv.h"

namespace pb {
namespace {

// Tunables of direct.cl.
struct DirectParams {
  int ocb = 16, vw = 16, wx = 1, wy = 4;
  // The vector width (8 or 16 output columns) that wastes fewer lanes on rows of `ow`.
  static int pick_vw(int64_t ow) { return (ow + 15) / 16 * 16 <= (ow + 7) / 8 * 8 ? 16 : 8; }
  std::string options() const {
    std::ostringstream o;
    o << "-cl-mad-enable -DOCB=" << ocb << " -DVW=" << vw << " -DWX=" << wx << " -DWY=" << wy;
    return o.str();
  }
};

// Tunables of direct_bwd.cl.
struct DirectBwdParams {
  int icb = 16, ob = 4, tb = 4, vw = 16, wx = 1, wy = 4;
  int64_t chunk_px = 1024;  // bwd_w: output pixels per partial-gradient chunk
  std::string options() const {
    std::ostringstream o;
    o << "-cl-mad-enable -DICB=" << icb << " -DOB=" << ob << " -DTB=" << tb << " -DVW=" << vw
      << " -DWX=" << wx << " -DWY=" << wy;
    return o.str();
  }
};

// Bytes of partial weight gradients bwd_w may keep (more chunks than fit are made longer).
constexpr size_t kPartialCap = size_t{64} << 20;

class ConvOclDirect : public OclConv {
 public:
  std::string name() const override { return "ocl/direct"; }

 protected:
  Support supports_bwd_d(const ConvDesc&) const override { return Support::yes(); }
  Support supports_bwd_w(const ConvDesc&) const override { return Support::yes(); }

  void prepare_bwd_d() override {
    const ConvDesc& d = d_;
    // Few input channels (a network's first layer): a smaller register block wastes less.
    b_.icb = d.icg() <= 4 ? 4 : d.icg() <= 8 ? 8 : b_.icb;
    const int64_t icb = b_.icb, nblk = (d.icg() + icb - 1) / icb, kk = d.kh * d.kw;
    // [g][icg block][kh][kw][ocg][icb], zero channels past icg.
    wei_ = ocl::Buffer(static_cast<size_t>(d.g * nblk * kk * d.ocg() * icb) * sizeof(float));
    FilterMap m = copy_map(d.ocg() * icb);
    m.sg = nblk * kk * d.ocg() * icb;
    for (int64_t o = 0; o < d.ocg(); ++o) m.ooff.push_back(o * icb);
    for (int64_t c = 0; c < d.icg(); ++c) m.coff.push_back(c / icb * kk * d.ocg() * icb + c % icb);
    add_filter_map(m, wei_);
    // The longest column phase sets the vector width and the work size along dimension 0.
    const int64_t nq = (d.iw + d.sw - 1) / d.sw;
    b_.vw = DirectParams::pick_vw(nq);
    cl_program prog = program("conv/direct_bwd.cl", b_.options());
    size_t global[3] = {static_cast<size_t>(d.sw * ((nq + b_.vw - 1) / b_.vw)),
                        static_cast<size_t>(d.ih), static_cast<size_t>(d.mb * d.g * nblk)};
    size_t local[3] = {static_cast<size_t>(b_.wx), static_cast<size_t>(b_.wy), 1};
    auto i = [](int64_t v) { return static_cast<cl_int>(v); };
    add_step(prog, "conv_direct_bwd_d", 3, global, local)
        .set_args(diff_dst_, wei_, diff_src_, i(d.g), i(d.icg()), i(d.ocg()), i(nblk * icb),
                  i(d.ih), i(d.iw), i(d.oh), i(d.ow), i(d.kh), i(d.kw), i(d.sh), i(d.sw), i(d.ph),
                  i(d.pw), i(d.dh + 1), i(d.dw + 1));
  }

  void prepare_bwd_w() override {
    const ConvDesc& d = d_;
    const int64_t nrows = d.mb * d.oh, wsize = d.wei_size();
    // Chunks of about chunk_px output pixels, each summed into its own partial gradient.
    int64_t rows = std::clamp<int64_t>((b_.chunk_px + d.ow - 1) / d.ow, 1, nrows);
    const int64_t max_parts =
        std::max<int64_t>(1, static_cast<int64_t>(kPartialCap / (sizeof(float) * wsize)));
    rows = std::max(rows, (nrows + max_parts - 1) / max_parts);
    const int64_t parts = (nrows + rows - 1) / rows;
    if (parts > 1) part_ = workspace(static_cast<size_t>(parts * wsize) * sizeof(float));
    b_.vw = DirectParams::pick_vw(d.ow);
    // Copies with whole-vector rows: src split by column phase, diff_dst padded to owp.
    const int64_t owp = ocl::round_up(d.ow, b_.vw), wq = owp + (d.kw - 1) * (d.dw + 1) / d.sw;
    xs_ = workspace(static_cast<size_t>(d.mb * d.ic * d.ih * d.sw * wq) * sizeof(float));
    ddp_ = workspace(static_cast<size_t>(d.mb * d.oc * d.oh * owp) * sizeof(float));
    cl_program prog = program("conv/direct_bwd.cl", b_.options());
    auto i = [](int64_t v) { return static_cast<cl_int>(v); };
    size_t one[2] = {1, 1}, gx[2] = {static_cast<size_t>(d.ih), static_cast<size_t>(d.mb * d.ic)};
    add_step(prog, "split_src", 2, gx, one)
        .set_args(src_, xs_, i(d.ih), i(d.iw), i(d.sw), i(d.pw), i(wq));
    size_t gd[2] = {static_cast<size_t>(d.oh), static_cast<size_t>(d.mb * d.oc)};
    add_step(prog, "pad_dd", 2, gd, one).set_args(diff_dst_, ddp_, i(d.oh), i(d.ow), i(owp));
    size_t global[3] = {static_cast<size_t>((d.icg() * d.kw + b_.tb - 1) / b_.tb),
                        static_cast<size_t>((d.ocg() + b_.ob - 1) / b_.ob * d.kh),
                        static_cast<size_t>(d.g * parts)};
    size_t local[3] = {static_cast<size_t>(b_.wx), 1, 1};
    add_step(prog, "conv_direct_bwd_w", 3, global, local)
        .set_args(xs_, ddp_, parts > 1 ? part_ : diff_wei_, i(d.g), i(d.icg()), i(d.ocg()), i(d.ih),
                  i(d.oh), i(owp), i(d.kh), i(d.kw), i(d.sh), i(d.sw), i(d.ph), i(d.dh + 1),
                  i(d.dw + 1), i(wq), i(rows), i(nrows));
    if (parts > 1) add_sum_partials(part_, parts, wsize, diff_wei_);
  }

  void prepare_fwd() override {
    const ConvDesc& d = d_;
    const int64_t ocgp = ocl::round_up(d.ocg(), p_.ocb), kk = d.kh * d.kw, ksz = d.icg() * kk;
    // Weights padded to ocgp channels per group with zeros.
    wei_ = ocl::Buffer(static_cast<size_t>(d.g * ocgp * ksz) * sizeof(float));
    FilterMap m = copy_map(1);
    m.sg = ocgp * ksz;
    for (int64_t o = 0; o < d.ocg(); ++o) m.ooff.push_back(o * ksz);
    for (int64_t c = 0; c < d.icg(); ++c) m.coff.push_back(c * kk);
    add_filter_map(m, wei_);
    p_.vw = DirectParams::pick_vw(d.ow);
    cl_program prog = program("conv/direct.cl", p_.options());
    size_t global[3] = {static_cast<size_t>((d.ow + p_.vw - 1) / p_.vw), static_cast<size_t>(d.oh),
                        static_cast<size_t>(d.mb * d.g * ocgp / p_.ocb)};
    size_t local[3] = {static_cast<size_t>(p_.wx), static_cast<size_t>(p_.wy), 1};
    ocl::Kernel& k = add_step(prog, "conv_direct", 3, global, local);
    auto i = [](int64_t v) { return static_cast<cl_int>(v); };
    k.set_args(src_, wei_, dst_, i(d.g), i(d.icg()), i(d.ocg()), i(ocgp), i(d.ih), i(d.iw), i(d.oh),
               i(d.ow), i(d.kh), i(d.kw), i(d.sh), i(d.sw), i(d.ph), i(d.pw), i(d.dh + 1),
               i(d.dw + 1));
  }

 private:
  DirectParams p_;
  DirectBwdParams b_;
  ocl::Buffer part_, xs_, ddp_;
};

}  // namespace

std::unique_ptr<ConvImpl> make_conv_ocl_direct() {
  return std::make_unique<ConvOclDirect>();
}

}  // namespace pb
