// Local response normalisation across channels (AlexNet, GoogLeNet v1), benchdnn's lrn
// grammar: mb16ic96ih55iw55ls5_alpha0.0001_beta0.75_k2 n"name". NCHW fp32.
//   dst[n][c][h][w] = src[n][c][h][w] / (k + alpha / ls * sum of src[n][c'][h][w]^2)^beta
// over the ls channels c' centred on c (clipped at the edges), as oneDNN, Caffe and PyTorch
// define it (AlexNet's paper writes alpha without the division by ls).
#pragma once

#include <cstdint>
#include <string>

#include "kernels/core/impl.h"

namespace pb {

// Omitted: iw = ih, ls = 5, alpha = 1e-4, beta = 0.75, k = 1.
struct LrnDesc {
  int64_t mb = 0, ic = 0, ih = 1, iw = 1, ls = 5;
  double alpha = 1e-4, beta = 0.75, k = 1;
  std::string name;

  static LrnDesc parse(const std::string& text);  // derives omitted fields, then validate()
  std::string str() const;                        // parse(str()) == *this
  void validate() const;                          // throws InputError naming the field
  bool operator==(const LrnDesc& o) const;

  int64_t size() const { return mb * ic * ih * iw; }
  int64_t hw() const { return ih * iw; }
  int64_t half() const { return (ls - 1) / 2; }  // channels on each side of the centre

  // Per element: ls multiply-adds for the sum, then the power and the division (counted as
  // benchdnn does not: LRN is memory-bound, measured in bytes).
  double flops(Dir = Dir::fwd) const { return 0; }
  // fwd: src read, dst written; bwd: src and diff_dst read, diff_src written.
  double bytes(Dir dir = Dir::fwd) const {
    return 4.0 * static_cast<double>(size()) * (dir == Dir::fwd ? 2 : 3);
  }
};

}  // namespace pb
