// Backward data of a dense stride-1 convolution as a forward one (shared by cpu/winograd and
// cpu/fft): diff_src = diff_dst, padded by k-1-p, correlated with the 180-degree flipped filter.
#pragma once

#include <string>

#include "kernels/conv/desc.h"
#include "kernels/core/impl.h"
#include "kernels/core/tensor.h"

namespace pb {
namespace bwd_as_fwd {

// bwd_d(d) is fwd(desc(d)) only for stride 1 and dilation 0.
inline Support supports(const ConvDesc& d, const std::string& who) {
  if (d.sh != 1 || d.sw != 1)
    return Support::no(who + " bwd_d needs stride 1 (runs as a forward convolution), got " +
                       std::to_string(d.sh) + "x" + std::to_string(d.sw));
  if (d.dh != 0 || d.dw != 0) return Support::no(who + " bwd_d needs dilation 0 (dense)");
  return Support::yes();
}

// The forward problem: input diff_dst (oc channels, oh x ow), output diff_src (ic, ih x iw),
// top/left pads k-1-p. The end pads follow: k-1-pad_b and k-1-pad_r. ConvDesc::validate keeps
// every pad of d in [0, k-1], so these are in [0, k-1] too.
inline ConvDesc desc(const ConvDesc& d) {
  ConvDesc e = d;
  e.ic = d.oc, e.oc = d.ic;
  e.ih = d.oh, e.iw = d.ow, e.oh = d.ih, e.ow = d.iw;
  e.ph = d.kh - 1 - d.ph, e.pw = d.kw - 1 - d.pw;
  return e;
}

// wei'[g][c][o][y][x] = wei[g][o][c][kh-1-y][kw-1-x]: the filter of desc(d) (goihw of desc(d)).
inline Tensor filter(const ConvDesc& d, const Tensor& wei) {
  const ConvDesc e = desc(d);
  Tensor out(e.wei_dims());
  const int64_t icg = d.icg(), ocg = d.ocg(), kh = d.kh, kw = d.kw, kk = kh * kw;
  for (int64_t g = 0; g < d.g; ++g)
    for (int64_t o = 0; o < ocg; ++o)
      for (int64_t c = 0; c < icg; ++c) {
        const float* w = wei.data() + ((g * ocg + o) * icg + c) * kk;
        float* f = out.data() + ((g * icg + c) * ocg + o) * kk;
        for (int64_t i = 0; i < kk; ++i) f[i] = w[kk - 1 - i];
      }
  return out;
}

}  // namespace bwd_as_fwd
}  // namespace pb
