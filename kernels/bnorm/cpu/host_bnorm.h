// Shared base of the host-memory batch-norm implementations (cpu/native, onednn/auto): keeps the
// descriptor, direction and inputs (in bnorm.h's order), owns the outputs.
#pragma once

#include <vector>

#include "kernels/bnorm/bnorm.h"

namespace pb {

class HostBnorm : public BnormImpl {
 public:
  Support supports(const BnormDesc&, Dir dir) const override {
    return dir == Dir::fwd || dir == Dir::bwd ? Support::yes()
                                              : Support::no("bnorm runs fwd and bwd");
  }
  void plan(const BnormDesc& d, Dir dir, const std::vector<const Tensor*>& in) override {
    d_ = d;
    dir_ = dir;
    in_ = in;
    const bool bwd = dir == Dir::bwd;
    src_ = in[0];
    dy_ = bwd ? in[1] : nullptr;
    scale_ = in[bwd ? 2 : 1];
    shift_ = in[bwd ? 3 : 2];
    mean_ = in[bwd ? 4 : 3];
    var_ = in[bwd ? 5 : 4];
    out_.clear();
    out_.emplace_back(Dims{d.mb, d.ic, d.ih, d.iw});
    size_t vectors = bwd ? d.scale + d.shift : d.inference ? 0 : 4;
    for (size_t i = 0; i < vectors; ++i) out_.emplace_back(Dims{d.ic});
    prepare_more();
  }
  const Tensor* output_view(size_t i) const override {
    return i < out_.size() ? &out_[i] : nullptr;
  }
  std::vector<Tensor> result() override {
    std::vector<Tensor> v;
    for (const Tensor& t : out_) v.push_back(t.clone());
    return v;
  }

 protected:
  virtual void prepare_more() {}
  float gamma(int64_t c) const { return d_.scale ? (*scale_)[c] : 1.0f; }
  float beta(int64_t c) const { return d_.shift ? (*shift_)[c] : 0.0f; }
  // Running statistics from the batch's (training forward): r = (1-mom)*r + mom*batch, the
  // variance unbiased (n/(n-1)) when n > 1.
  void update_running(int64_t c, double mean, double var) {
    const double n = static_cast<double>(d_.reduce_size());
    out_[3][c] = static_cast<float>((1 - d_.mom) * (*mean_)[c] + d_.mom * mean);
    out_[4][c] =
        static_cast<float>((1 - d_.mom) * (*var_)[c] + d_.mom * (n > 1 ? var * n / (n - 1) : var));
  }
  BnormDesc d_;
  Dir dir_ = Dir::fwd;
  std::vector<const Tensor*> in_;
  const Tensor *src_ = nullptr, *dy_ = nullptr, *scale_ = nullptr, *shift_ = nullptr;
  const Tensor *mean_ = nullptr, *var_ = nullptr;
  std::vector<Tensor> out_;
};

}  // namespace pb
