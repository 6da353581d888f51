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

// The filter of desc(d) for its output channel o and input channel c of group g, kh*kw values:
// d's filter (c, o) flipped, f[y][x] = wei[g][c][o][kh-1-y][kw-1-x] (wei in d's goihw). Built
// per filter where the transforms read it, not as a new tensor every step.
inline void flipped_filter(const ConvDesc& d, const float* wei, int64_t g, int64_t o, int64_t c,
                           float* f) {
  const int64_t kk = d.kh * d.kw;
  const float* k = wei + ((g * d.ocg() + c) * d.icg() + o) * kk;
  for (int64_t i = 0; i < kk; ++i) f[i] = k[kk - 1 - i];
}

}  // namespace bwd_as_fwd
}  // namespace pb
