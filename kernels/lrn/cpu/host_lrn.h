// Shared base of the host-memory LRN implementations (cpu/native, onednn/auto): keeps the
// descriptor, direction and inputs, owns the output.
#pragma once

#include <vector>

#include "kernels/lrn/lrn.h"

namespace pb {

class HostLrn : public LrnImpl {
 public:
  Support supports(const LrnDesc&, Dir dir) const override {
    return dir == Dir::fwd || dir == Dir::bwd ? Support::yes()
                                              : Support::no("lrn runs fwd and bwd");
  }
  void plan(const LrnDesc& d, Dir dir, const std::vector<const Tensor*>& in) override {
    d_ = d;
    dir_ = dir;
    src_ = in[0];
    dy_ = dir == Dir::fwd ? nullptr : in[1];
    out_ = Tensor({d.mb, d.ic, d.ih, d.iw});
    prepare_more();
  }
  const Tensor* output_view(size_t i) const override { return i == 0 ? &out_ : nullptr; }
  std::vector<Tensor> result() override {
    std::vector<Tensor> v;
    v.push_back(out_.clone());
    return v;
  }

 protected:
  virtual void prepare_more() {}
  LrnDesc d_;
  Dir dir_ = Dir::fwd;
  const Tensor* src_ = nullptr;
  const Tensor* dy_ = nullptr;
  Tensor out_;
};

}  // namespace pb
