// All-reduce problem descriptor: n<elements>[n"name"], e.g. n16777217n"deepbench:16M".
#pragma once

#include <cstdint>
#include <string>

#include "kernels/core/impl.h"

namespace pb {

struct AllreduceDesc {
  int64_t n = 0;  // float32 elements per rank; 0 is allowed (an empty all-reduce)
  std::string name;

  static AllreduceDesc parse(const std::string& text);  // throws InputError naming the field
  std::string str() const;                              // parse(str()) == *this
  void validate() const;
  bool operator==(const AllreduceDesc& o) const { return n == o.n && name == o.name; }

  // No FLOP count: the additions are a by-product; all-reduce is judged by bandwidth.
  double flops(Dir = Dir::fwd) const { return 0; }
  // This rank's input read and output written.
  double bytes(Dir = Dir::fwd) const { return 8.0 * static_cast<double>(n); }
};

}  // namespace pb
