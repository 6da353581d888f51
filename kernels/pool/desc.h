// Pooling descriptor, benchdnn grammar: mb16ic64ih112iw112oh56ow56kh3kw3sh2sw2ph1pw1_max n"name".
// NCHW fp32. Algorithms: max, avgp (average including padding), avgnp (excluding padding).
#pragma once

#include <cstdint>
#include <string>

#include "kernels/core/impl.h"

namespace pb {

enum class PoolAlg { max, avg_p, avg_np };
std::string pool_alg_str(PoolAlg a);  // "max", "avgp", "avgnp" (the descriptor flags)

// Padding: ph/pw are top/left; bottom/right follow from the output size,
// pad_b = (oh-1)*sh + kh - ih - ph (may differ from ph, or be negative: trailing rows unused).
// Omitted fields: iw = ih, kw = kh, sh = sw = 1 (sw = sh), ph = pw = 0 (pw = ph),
// oh = (ih + 2ph - kh)/sh + 1 (floor), ow likewise. Global pooling is kh = ih, kw = iw.
struct PoolDesc {
  int64_t mb = 0, ic = 0, ih = 0, iw = 0, oh = 0, ow = 0;
  int64_t kh = 0, kw = 0, sh = 1, sw = 1, ph = 0, pw = 0;
  PoolAlg alg = PoolAlg::max;
  std::string name;

  static PoolDesc parse(const std::string& text);  // derives omitted fields, then validate()
  std::string str() const;                         // parse(str()) == *this
  void validate() const;                           // throws InputError naming the field
  bool operator==(const PoolDesc& o) const;

  int64_t pad_b() const { return (oh - 1) * sh + kh - ih - ph; }
  int64_t pad_r() const { return (ow - 1) * sw + kw - iw - pw; }
  int64_t src_size() const { return mb * ic * ih * iw; }
  int64_t dst_size() const { return mb * ic * oh * ow; }
  // Bytes per element of the max-pooling argmax workspace: a window index, 1 byte when the
  // window has at most 256 elements, else 4.
  int ws_elem_bytes() const { return kh * kw <= 256 ? 1 : 4; }

  double flops(Dir = Dir::fwd) const { return 0; }  // memory-bound: measured in bytes
  // fwd: src read, dst written. bwd: diff_dst read, diff_src written, plus the argmax
  // workspace read for max pooling.
  double bytes(Dir dir = Dir::fwd) const;
};

}  // namespace pb
