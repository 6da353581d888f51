// Shared base of the host-memory convolution implementations: keeps the inputs of the direction,
// owns its outputs, answers supports() per direction (DirConv) and adds the bias gradient to
// every bwd_w run. For a reduced data type (desc.h's dt) it also keeps the activation inputs'
// copies in the type (made in plan(), never timed, as every implementation does), the weights'
// copy (made by typed_weights() in the algorithm's weights()), u8s8's quantisation parameters
// and the output in its type.
#pragma once

#include <vector>

#include "kernels/conv/conv.h"
#include "kernels/core/channel_sums.h"
#include "kernels/core/quant.h"

namespace pb {

class HostConv : public DirConv {
 public:
  // Inputs per direction (conv.h): fwd {src, wei}, bwd_d {diff_dst, wei}, bwd_w {src, diff_dst};
  // the output dst_ is dst, diff_src or diff_wei (NCHW / goihw).
  void plan(const ConvDesc& d, Dir dir, const std::vector<const Tensor*>& in) override {
    d_ = d;
    dir_ = dir;
    src_ = wei_ = diff_dst_ = nullptr;
    target_ = nullptr;
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
    typed_plan(in);
    prepare_more();
  }
  // The timed work: the direction's convolution, then (bwd_w) the bias gradient.
  void run() final {
    run_dir();
    if (dir_ == Dir::bwd_w) {
      channel_sums(diff_dst_->data(), d_.mb, d_.oc, d_.oh * d_.ow, diff_bias_.data());
      if (typed_out()) to_storage_out(diff_bias_.data(), d_.oc, d_.dt.out, bias_out_.data());
    }
  }
  // Post-ops (impl.h) where the algorithm takes them (takes_post_ops), on the forward with an
  // fp32 output: written into *dst from then on.
  bool set_post_ops(const PostOps* p, Tensor* dst) final {
    if (!takes_post_ops() || !redirect_output(dst)) return false;
    use_post_ops(p);
    return true;
  }
  // Every algorithm applies them through apply_post_ops or direct::scatter_tile_post.
  bool post_ops_write_typed_copy() const final { return true; }
  // A reduced output type lives in its typed buffer: no fp32 view.
  const Tensor* output_view(size_t i) const override {
    if (typed_out()) return nullptr;
    return i == 0 ? &out_tensor() : i == 1 && dir_ == Dir::bwd_w ? &diff_bias_ : nullptr;
  }
  // A network's real-valued activations into the type again (impl.h): src (fwd, bwd_w) or
  // diff_dst (bwd_d, bwd_w); the weights are weights()'s.
  bool quantise(size_t i) override {
    if (!typed()) return false;
    const Tensor* t = dir_ == Dir::bwd_w ? (i == 0   ? src_
                                            : i == 1 ? diff_dst_
                                                     : nullptr)
                      : i == 0           ? (dir_ == Dir::bwd_d ? diff_dst_ : src_)
                                         : nullptr;
    if (!t) return false;
    if (i == 0 && typed_src_) return true;  // read_typed_input's buffer holds it
    quantise_storage(*t, d_.dt.in, true, q_.src_scale, q_.src_zero, &act_[i]);
    return true;
  }
  // The forward's source from a typed buffer of its size (impl.h); its own copy is freed. An
  // algorithm that keeps src_typed()'s pointer takes the new one in typed_source_moved().
  bool read_typed_input(size_t i, const std::vector<uint8_t>* buf) override {
    if (!typed() || dir_ != Dir::fwd || i != 0 || !typed_src_ok(buf)) return false;
    typed_src_ = buf;
    std::vector<uint8_t>().swap(act_[0]);
    typed_source_moved();
    return true;
  }
  std::vector<Tensor> result() override {
    std::vector<Tensor> out;
    out.push_back(out_tensor().clone());
    if (dir_ == Dir::bwd_w) out.push_back(diff_bias_.clone());
    if (typed_out()) {
      from_storage(out_.data(), d_.dt.out, out[0].size(), out[0].data());
      if (dir_ == Dir::bwd_w) from_storage(bias_out_.data(), d_.dt.out, d_.oc, out[1].data());
    }
    return out;
  }

 protected:
  virtual void prepare_more() {}  // plan() of the algorithm: what depends on the shape only
  // Whether the algorithm applies post-ops to this plan's output, and from now on these (called
  // once the output is redirected); prepare_more() drops them (a new plan writes its own output).
  virtual bool takes_post_ops() const { return false; }
  virtual void use_post_ops(const PostOps*) {}
  virtual void run_dir() = 0;  // computes dst_ (or, for a reduced output type, out_) for dir_

  bool typed() const { return !d_.dt.is_f32(); }
  bool typed_out() const { return d_.dt.out != DataType::out_f32; }
  // Called when src_typed() moved (read_typed_input), for an algorithm that keeps the pointer.
  virtual void typed_source_moved() {}
  // The activation inputs in the type (src for fwd and bwd_w, diff_dst for bwd_d and bwd_w).
  const void* src_typed() const { return typed_src_ ? typed_src_->data() : act_[0].data(); }
  const void* diff_dst_typed() const { return act_[dir_ == Dir::bwd_w ? 1 : 0].data(); }
  // The weights in the type, into `w` (an algorithm's weights() calls it, then repacks).
  void typed_weights(std::vector<uint8_t>* w) const { to_storage(*wei_, d_.dt.in, false, w); }
  // Where run_dir() writes the direction's output: dst_ (f32) or its typed buffer.
  void* out_data() { return typed_out() ? static_cast<void*>(out_.data()) : out_tensor().data(); }
  // The fp32 output: dst_, or the caller's tensor after redirect_output.
  Tensor& out_tensor() { return target_ ? *target_ : dst_; }
  const Tensor& out_tensor() const { return target_ ? *target_ : dst_; }
  // The forward's fp32 output goes to *dst from now on, and dst_'s memory is freed. False
  // (nothing changes) for another direction, a reduced output type, or another shape.
  bool redirect_output(Tensor* dst) {
    if (dir_ != Dir::fwd || typed_out() || !dst || dst->dims() != dst_.dims()) return false;
    target_ = dst;
    dst_ = Tensor();
    return true;
  }

  ConvDesc d_;
  Dir dir_ = Dir::fwd;
  const Tensor* src_ = nullptr;       // fwd, bwd_w
  const Tensor* wei_ = nullptr;       // fwd, bwd_d
  const Tensor* diff_dst_ = nullptr;  // bwd_d, bwd_w
  Tensor dst_;                        // the direction's output: dst, diff_src or diff_wei
  Tensor diff_bias_;                  // bwd_w: oc
  QuantParams q_;                     // u8s8 (all ones otherwise)
  Tensor* target_ = nullptr;          // redirect_output's tensor

 private:
  // A source buffer read_typed_input can take: the size of the source in the type.
  bool typed_src_ok(const std::vector<uint8_t>* buf) const {
    return buf && src_ && static_cast<double>(buf->size()) == src_->size() * d_.dt.in_bytes();
  }
  void typed_plan(const std::vector<const Tensor*>& in) {
    typed_src_ = nullptr;
    q_ = d_.dt.integer() ? QuantParams::from(in, 2) : QuantParams();
    for (auto& a : act_) a.clear();
    out_.clear();
    bias_out_.clear();
    if (!typed()) return;
    if (dir_ == Dir::bwd_d) {
      to_storage(*diff_dst_, d_.dt.in, true, &act_[0]);
    } else {
      to_storage(*src_, d_.dt.in, true, &act_[0]);
      if (dir_ == Dir::bwd_w) to_storage(*diff_dst_, d_.dt.in, true, &act_[1]);
    }
    if (typed_out()) {
      out_.resize(static_cast<size_t>(d_.dt.out_bytes() * dst_.size()));
      if (dir_ == Dir::bwd_w) bias_out_.resize(static_cast<size_t>(d_.dt.out_bytes() * d_.oc));
    }
  }
  std::vector<uint8_t> act_[2], out_, bias_out_;
  const std::vector<uint8_t>* typed_src_ = nullptr;  // read_typed_input's buffer
};

}  // namespace pb
