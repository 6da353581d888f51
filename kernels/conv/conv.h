// Convolution: the implementation interface, the registry and the factories of every
// implementation. NCHW fp32; weights g x ocg x icg x kh x kw (see desc.h).
#pragma once

#include <memory>
#include <string>

#include "kernels/conv/desc.h"
#include "kernels/core/impl.h"
#include "kernels/core/problem.h"

namespace pb {

// Inputs and outputs per direction (the forward has no bias term; a network adds it as its own
// step, and bwd_w returns its gradient):
//   fwd:   {src, wei}      -> {dst}
//   bwd_d: {diff_dst, wei} -> {diff_src}
//   bwd_w: {src, diff_dst} -> {diff_wei, diff_bias}   diff_bias: oc, diff_dst summed over
//                                                       images and pixels
using ConvImpl = Impl<ConvDesc>;

// The data type's own limit, the same for every implementation: u8s8 is inference (fwd only).
Support dt_direction(const ConvDesc& d, Dir dir);

// The shared supports() of the CPU and OpenCL bases: the data type (dt_direction, then the
// implementation's dt_unsupported), then one check per direction (fwd runs unless an algorithm
// says otherwise, bwd_d and bwd_w only where it says so); `bwd` is not run as one.
class DirConv : public ConvImpl {
 public:
  Support supports(const ConvDesc& d, Dir dir) const override {
    if (!d.dt.is_f32()) {
      Support s = dt_direction(d, dir);
      if (!s) return s;
      const std::string why = dt_unsupported(d, dir);
      if (!why.empty()) return Support::no(why);
    }
    switch (dir) {
      case Dir::fwd:
        return supports_fwd(d);
      case Dir::bwd_d:
        return supports_bwd_d(d);
      case Dir::bwd_w:
        return supports_bwd_w(d);
      default:
        return Support::no(name() + " runs fwd, bwd_d or bwd_w separately");
    }
  }

 protected:
  // Why this implementation does not run d's data type in `dir` ("" when it does); called for
  // dt != f32.
  virtual std::string dt_unsupported(const ConvDesc&, Dir) const {
    return name() + " runs dt=f32 only";
  }
  virtual Support supports_fwd(const ConvDesc&) const { return Support::yes(); }
  virtual Support supports_bwd_d(const ConvDesc&) const {
    return Support::no(name() + " runs fwd only (no bwd_d)");
  }
  virtual Support supports_bwd_w(const ConvDesc&) const {
    return Support::no(name() + " runs fwd only (no bwd_w)");
  }
};

const Registry<ConvDesc>& conv_registry();
PrimitiveInfo conv_primitive();

std::unique_ptr<ConvImpl> make_conv_direct();
std::unique_ptr<ConvImpl> make_conv_im2col();
std::unique_ptr<ConvImpl> make_conv_winograd_f2();
std::unique_ptr<ConvImpl> make_conv_winograd_f4();
std::unique_ptr<ConvImpl> make_conv_fft();
std::unique_ptr<ConvImpl> make_conv_ocl_direct();
std::unique_ptr<ConvImpl> make_conv_ocl_im2col();
std::unique_ptr<ConvImpl> make_conv_ocl_implicit_gemm();
std::unique_ptr<ConvImpl> make_conv_ocl_fft();
std::unique_ptr<ConvImpl> make_conv_ocl_winograd_f2();
std::unique_ptr<ConvImpl> make_conv_ocl_winograd_f4();
std::unique_ptr<ConvImpl> make_conv_onednn_auto();
std::unique_ptr<ConvImpl> make_conv_onednn_winograd();

}  // namespace pb
