// Shared base of the host-memory convolution implementations: keeps the inputs, owns the output
// and answers supports() for the forward direction (backward ones come with the backward issue).
#pragma once

#include <vector>

#include "kernels/conv/conv.h"

namespace pb {

class HostConv : public ConvImpl {
 public:
  Support supports(const ConvDesc& d, Dir dir) const override {
    if (dir != Dir::fwd) return Support::no(name() + " runs fwd only (backward: a later issue)");
    return supports_fwd(d);
  }
  // Inputs {src, wei}; output dst (NCHW).
  void prepare(const ConvDesc& d, Dir, const std::vector<const Tensor*>& in) override {
    d_ = d;
    src_ = in[0];
    wei_ = in[1];
    dst_ = Tensor(d.dst_dims());
    prepare_more();
  }
  std::vector<Tensor> result() override {
    std::vector<Tensor> out;
    out.push_back(dst_.clone());
    return out;
  }

 protected:
  virtual Support supports_fwd(const ConvDesc&) const { return Support::yes(); }
  virtual void prepare_more() {}
  ConvDesc d_;
  const Tensor* src_ = nullptr;
  const Tensor* wei_ = nullptr;
  Tensor dst_;
};

}  // namespace pb
