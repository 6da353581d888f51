// Shared base of the host-memory convolution implementations: keeps the inputs of the direction,
// owns its outputs, answers supports() per direction (DirConv) and adds the bias gradient to
// every bwd_w run.
#pragma once

#include <vector>

#include "kernels/conv/conv.h"
#include "kernels/core/channel_sums.h"

namespace pb {

class HostConv : public DirConv {
 public:
  // Inputs per direction (conv.h): fwd {src, wei}, bwd_d {diff_dst, wei}, bwd_w {src, diff_dst};
  // the output dst_ is dst, diff_src or diff_wei (NCHW / goihw).
  void plan(const ConvDesc& d, Dir dir, const std::vector<const Tensor*>& in) override {
    d_ = d;
    dir_ = dir;
    src_ = wei_ = diff_dst_ = nullptr;
    if (dir == Dir::bwd_d) {
      diff_dst_ = in[0], wei_ = in[1];
      dst_ = Tensor(d.src_dims());
    } else if (dir == Dir::bwd_w) {
      src_ = in[0], diff_dst_ = in[1];
      dst_ = Tensor(d.wei_dims());
      diff_bias_ = Tensor({d.oc});
    } else {
      src_ = in[0], wei_ = in[1];
      dst_ = Tensor(d.dst_dims());
    }
    prepare_more();
  }
  // The timed work: the direction's convolution, then (bwd_w) the bias gradient.
  void run() final {
    run_dir();
    if (dir_ == Dir::bwd_w)
      channel_sums(diff_dst_->data(), d_.mb, d_.oc, d_.oh * d_.ow, diff_bias_.data());
  }
  const Tensor* output_view(size_t i) const override {
    return i == 0 ? &dst_ : i == 1 && dir_ == Dir::bwd_w ? &diff_bias_ : nullptr;
  }
  std::vector<Tensor> result() override {
    std::vector<Tensor> out;
    out.push_back(dst_.clone());
    if (dir_ == Dir::bwd_w) out.push_back(diff_bias_.clone());
    return out;
  }

 protected:
  virtual void prepare_more() {}  // plan() of the algorithm: what depends on the shape only
  virtual void run_dir() = 0;     // computes dst_ for dir_
  ConvDesc d_;
  Dir dir_ = Dir::fwd;
  const Tensor* src_ = nullptr;       // fwd, bwd_w
  const Tensor* wei_ = nullptr;       // fwd, bwd_d
  const Tensor* diff_dst_ = nullptr;  // bwd_d, bwd_w
  Tensor dst_;                        // the direction's output: dst, diff_src or diff_wei
  Tensor diff_bias_;                  // bwd_w: oc
};

}  // namespace pb
