// Convolution descriptor, benchdnn grammar:
// mb16ic64ih56iw56oc64oh56ow56kh3kw3sh1sw1ph1pw1dh0dw0g1[dt=<type>]n"resnet50:res2_3x3". NCHW.
// dt (kernels/core/dtype.h): f32 (default); bf16, f16 (fp32 accumulation; output f32 or, with
// :bf16 / :f16, the input type; in every direction); u8s8 (inference, fwd): a u8 source with a
// per-tensor scale and zero point, s8 weights with one scale per output channel, int32
// accumulation, dst = wei_scale[oc] * src_scale * sum(wei * (src - src_zero)) over the taps
// inside the image (padding is a real zero), in f32 or, with :s8, as s8 in units of dst_scale
// (rounded to nearest even, saturated).
// Dilation is benchdnn's (0 = dense). Padding: ph/pw are top/left; bottom/right follow from the
// output size: pad_b = (oh-1)*sh + (kh-1)*(dh+1) + 1 - ih - ph (may differ from ph).
#pragma once

#include <cstdint>
#include <string>

#include "kernels/core/dtype.h"
#include "kernels/core/impl.h"

namespace pb {

struct ConvDesc {
  int64_t mb = 0, g = 1, ic = 0, oc = 0;  // batch, groups, input and output channels (total)
  int64_t ih = 0, iw = 0, oh = 0, ow = 0;
  int64_t kh = 0, kw = 0, sh = 1, sw = 1, ph = 0, pw = 0, dh = 0, dw = 0;
  DataType dt;
  std::string name;

  static ConvDesc parse(const std::string& text);  // derives omitted fields, then validate()
  std::string str() const;                         // parse(str()) == *this; omits derivable fields
  void validate() const;                           // throws InputError naming the field
  bool operator==(const ConvDesc& o) const;

  int64_t icg() const { return ic / g; }  // channels per group
  int64_t ocg() const { return oc / g; }
  int64_t pad_b() const { return (oh - 1) * sh + (kh - 1) * (dh + 1) + 1 - ih - ph; }
  int64_t pad_r() const { return (ow - 1) * sw + (kw - 1) * (dw + 1) + 1 - iw - pw; }
  int64_t src_size() const { return mb * ic * ih * iw; }     // src: mb x ic x ih x iw
  int64_t wei_size() const { return oc * icg() * kh * kw; }  // wei: g x ocg x icg x kh x kw
  int64_t dst_size() const { return mb * oc * oh * ow; }     // dst: mb x oc x oh x ow

  // Tensor shapes (weights are 5-D, goihw, only when grouped; the data layout is the same).
  Dims src_dims() const { return {mb, ic, ih, iw}; }
  Dims dst_dims() const { return {mb, oc, oh, ow}; }
  Dims wei_dims() const { return g > 1 ? Dims{g, ocg(), icg(), kh, kw} : Dims{oc, ic, kh, kw}; }

  // Direct-convolution FLOPs (2 per multiply-add), the same for every algorithm and direction,
  // so that fast algorithms show as effective FLOP/s.
  double flops(Dir = Dir::fwd) const { return 2.0 * mb * oc * oh * ow * icg() * kh * kw; }
  // Tensors read (in the input type) and written (in the output type) in that direction.
  double bytes(Dir dir = Dir::fwd) const;
};

}  // namespace pb
