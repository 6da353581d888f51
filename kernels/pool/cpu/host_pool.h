// Shared base of the host-memory pooling implementations (cpu/native, onednn/auto): keeps the
// descriptor, direction and inputs, owns the output.
#pragma once

#include <vector>

#include "kernels/pool/pool.h"

namespace pb {

class HostPool : public PoolImpl {
 public:
  Support supports(const PoolDesc&, Dir dir) const override {
    return dir == Dir::fwd || dir == Dir::bwd ? Support::yes()
                                              : Support::no("pool runs fwd and bwd");
  }
  void plan(const PoolDesc& d, Dir dir, const std::vector<const Tensor*>& in) override {
    d_ = d;
    dir_ = dir;
    src_ = in[0];
    dy_ = dir == Dir::fwd ? nullptr : in[1];
    out_ = dir == Dir::fwd ? Tensor({d.mb, d.ic, d.oh, d.ow}) : Tensor({d.mb, d.ic, d.ih, d.iw});
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
  PoolDesc d_;
  Dir dir_ = Dir::fwd;
  const Tensor* src_ = nullptr;
  const Tensor* dy_ = nullptr;
  Tensor out_;
};

}  // namespace pb
