// Activation descriptor: <func>_mb16ic64ih56iw56n"name", func one of relu, sigmoid, tanh,
// softmax (over the channel axis) or xent (softmax + cross-entropy loss). NCHW fp32.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/core/impl.h"

namespace pb {

enum class ActFunc { relu, sigmoid, tanh, softmax, xent };
std::string act_func_str(ActFunc f);  // the descriptor flag: "relu", ..., "xent"

// Omitted: ih = 1, iw = ih (softmax_mb16ic1000 is a batch of 1000-class logit vectors).
struct ActDesc {
  ActFunc func = ActFunc::relu;
  int64_t mb = 0, ic = 0, ih = 1, iw = 1;
  std::string name;

  static ActDesc parse(const std::string& text);  // derives omitted fields, then validate()
  std::string str() const;                        // parse(str()) == *this
  void validate() const;                          // throws InputError naming the field
  bool operator==(const ActDesc& o) const;

  int64_t hw() const { return ih * iw; }
  int64_t size() const { return mb * ic * ih * iw; }
  int64_t positions() const { return mb * ih * iw; }  // softmax vectors (and labels)
  bool eltwise() const {
    return func == ActFunc::relu || func == ActFunc::sigmoid || func == ActFunc::tanh;
  }

  double flops(Dir = Dir::fwd) const { return 0; }  // memory-bound: measured in bytes
  // Inputs read + outputs written (see act.h for what they are per direction).
  double bytes(Dir dir = Dir::fwd) const;
};

// The cross-entropy's labels (positions() of them) must be class indices: integers in [0, ic).
// Throws InputError naming "labels", the position and the value otherwise (implementations
// would index out of bounds).
void check_labels(const ActDesc& d, const float* labels);

}  // namespace pb
