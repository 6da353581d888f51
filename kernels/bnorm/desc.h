// Batch-norm descriptor, benchdnn-like grammar: mb16ic64ih56iw56[eps<e>][mom<m>][_inf][_scale]
// [_shift][_relu]n"name". NCHW fp32; statistics per channel over (mb, ih, iw).
#pragma once

#include <cstdint>
#include <string>

#include "kernels/core/impl.h"

namespace pb {

// Flags: inf = inference (benchdnn's G, global stats: mean and variance are given) else
// training (batch statistics, running statistics updated with momentum `mom`: r = (1-mom)*r +
// mom*batch, the running variance taking the unbiased batch variance); scale, shift = use gamma,
// beta (else 1 and 0); relu = fused ReLU on the output. Omitted: iw = ih, ih = 1.
struct BnormDesc {
  int64_t mb = 0, ic = 0, ih = 1, iw = 1;
  bool inference = false, scale = false, shift = false, relu = false;
  double eps = 1e-5, mom = 0.1;
  std::string name;

  static BnormDesc parse(const std::string& text);  // derives omitted fields, then validate()
  std::string str() const;                          // parse(str()) == *this
  void validate() const;                            // throws InputError naming the field
  bool operator==(const BnormDesc& o) const;

  int64_t hw() const { return ih * iw; }
  int64_t size() const { return mb * ic * ih * iw; }
  int64_t reduce_size() const { return mb * ih * iw; }  // elements per channel

  double flops(Dir = Dir::fwd) const { return 0; }  // memory-bound: measured in bytes
  // fwd: src read, dst written (plus the per-channel vectors); bwd: src and diff_dst read,
  // diff_src written (plus per-channel vectors).
  double bytes(Dir dir = Dir::fwd) const;
};

}  // namespace pb
