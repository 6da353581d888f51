// onednn/auto and onednn/winograd: oneDNN's convolution in all three directions as the vendor
// baseline, in every data type oneDNN has (desc.h's dt). Inputs and outputs are converted between
// NCHW/goihw and the formats oneDNN prefers in explicit phases (weights(), reorder_in(),
// reorder_out()), so each timing contract times them as it times every other implementation's
// conversions. A reduced type's activations are converted to it in plan() (never timed, as every
// implementation does), its weights by the weights() reorder from the fp32 goihw tensor straight
// into oneDNN's layout and type; u8s8's scales are output scales per channel and the source's
// zero point oneDNN's. A network's post-ops (set_post_ops: bias, batch-norm and ReLU, not a
// residual add) become oneDNN's own on the forward (see PostOpForm).
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <unordered_map>

#include "kernels/conv/conv.h"
#include "kernels/core/error.h"
#include "kernels/core/post_ops.h"
#include "kernels/core/quant.h"
#include "kernels/vendor_onednn.h"

namespace pb {

namespace {

using dnnl::algorithm;
using dnnl::memory;
using tag = memory::format_tag;

using mdt = memory::data_type;

memory::desc plain_md(const Dims& dims, mdt type = mdt::f32) {
  return memory::desc(memory::dims(dims.begin(), dims.end()), type,
                      dims.size() == 5   ? tag::goihw
                      : dims.size() == 1 ? tag::x
                                         : tag::nchw);
}
memory::desc any_md(const Dims& dims, mdt type) {
  return memory::desc(memory::dims(dims.begin(), dims.end()), type, tag::any);
}

// The element types of src, wei, dst and bias as the forward sees them, for the tensors of
// direction `dir`: the two inputs in the input type, the direction's output (and bwd_w's bias
// gradient) in the output type.
struct ArgTypes {
  mdt src, wei, dst, bias;
};
ArgTypes arg_types(const ConvDesc& d, Dir dir) {
  const mdt src = onednn::data_type(d.dt.in, true), wei = onednn::data_type(d.dt.in, false),
            out = onednn::data_type(d.dt.out);
  if (dir == Dir::bwd_d) return {out, wei, src, out};
  if (dir == Dir::bwd_w) return {src, out, src, out};
  return {src, wei, out, out};
}

// u8s8: dst = scale[oc] * sum(wei * (src - zero)), scale = wei_scale * src_scale (/ dst_scale
// for an s8 output). `q` null: ones (the descriptor is the same whatever the values).
// `factor` (per output channel, or null): a batch-norm's scale folded into them (PostOpForm).
std::vector<float> quant_scales(const ConvDesc& d, const QuantParams& q, const float* factor) {
  std::vector<float> scales(d.oc);
  const float div = d.dt.out == DataType::out_s8 ? q.dst_scale : 1.0f;
  for (int64_t o = 0; o < d.oc; ++o)
    scales[o] = q.wei_scale[o] * q.src_scale / div * (factor ? factor[o] : 1.0f);
  return scales;
}
dnnl::primitive_attr quant_attr(const ConvDesc& d, const QuantParams* q,
                                const float* factor = nullptr) {
  dnnl::primitive_attr attr;
  if (!d.dt.integer()) return attr;
  std::vector<float> scales(d.oc, 1.0f);
  int32_t zero = 1;
  if (q) {
    scales = quant_scales(d, *q, factor);
    zero = q->src_zero;
  }
  attr.set_output_scales(1 << 1, scales);  // per dst dimension 1: the output channel
  if (zero != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {zero});
  return attr;
}

// A network's post-ops (post_ops.h) on oneDNN's convolution as a framework folds an inference
// batch-norm into it: the scale into the weights (fp32, bf16: their reorder scales each output
// channel) or into u8s8's output scales, the shift as the convolution's bias (u8s8: divided by
// the output scale, which oneDNN applies to the bias too), ReLU as an eltwise post-op. Measured
// on ResNet-50's res2 1x1 layer (16x256x56x56 -> 64) on this machine (Zen 5): bias + ReLU cost
// 2-13% over the plain convolution, where binary mul and add post-ops cost 20-45%, more than the
// executor's pass after it. No residual: a full-tensor binary add of it makes oneDNN 2.6 fall
// back to its reference or gemm convolution (10x slower in fp32, 600x in u8s8 on a 3x3 layer),
// and its sum post-op wants the residual in the output first, in the output's layout (blocked or
// channels-last, where the residual is NCHW): that transposing reorder took 5.4 ms for the
// 16x256x56x56 residual in u8s8, more than the whole pass it would save.
struct PostOpForm {
  bool scale = false, shift = false, relu = false;
  explicit PostOpForm(const PostOps* p = nullptr) {
    if (p) scale = p->scale, shift = p->shift, relu = p->relu;
  }
  bool any() const { return scale || shift || relu; }
};

// The primitive for one (desc, direction) and the oneDNN argument ids of its inputs/outputs.
struct Built {
  dnnl::primitive prim;
  std::vector<std::pair<int, memory::desc>> inputs;  // in the order conv.h lists them
  struct Output {
    int arg;
    memory::desc md;
    Dims dims;
  };
  std::vector<Output> outputs;  // in the order conv.h lists them
  std::string impl;             // the forward's oneDNN implementation
  memory::desc bias;            // the forward's bias (zero: none)
};

// `post`: the forward with those post-ops, u8s8's output scales times `factor`.
Built build(const ConvDesc& d, Dir dir, algorithm alg, const QuantParams* q = nullptr,
            const PostOpForm& post = PostOpForm(), const float* factor = nullptr) {
  auto& eng = onednn::engine();
  const memory::dims strides{d.sh, d.sw}, dil{d.dh, d.dw}, pad_l{d.ph, d.pw};
  // A negative end pad (unused trailing rows when the stride does not divide) gives the same
  // output size as 0 with the floor in the formula; oneDNN wants it non-negative.
  const memory::dims pad_r{std::max<int64_t>(0, d.pad_b()), std::max<int64_t>(0, d.pad_r())};
  const ArgTypes t = arg_types(d, dir);
  const auto src = any_md(d.src_dims(), t.src), wei = any_md(d.wei_dims(), t.wei),
             dst = any_md(d.dst_dims(), t.dst);
  // u8s8 is inference; the others may hint a backward, whose hint is the forward in the input
  // type throughout (a bf16 backward's f32 output is its own choice, not the forward's).
  const auto prop =
      d.dt.integer() ? dnnl::prop_kind::forward_inference : dnnl::prop_kind::forward_training;
  const ArgTypes h = dir == Dir::fwd ? t : arg_types(d, Dir::fwd);
  const mdt in = onednn::data_type(d.dt.in, true);
  auto forward = [&](dnnl::prop_kind p, const memory::desc& s, const memory::desc& o,
                     const dnnl::primitive_attr& attr, const memory::desc& bias) {
    return dnnl::convolution_forward::primitive_desc(
        dnnl::convolution_forward::desc(p, alg, s,
                                        dir == Dir::fwd ? wei : any_md(d.wei_dims(), h.wei), bias,
                                        o, strides, dil, pad_l, pad_r),
        attr, eng);
  };
  dnnl::convolution_forward::primitive_desc fwd =
      forward(prop, dir == Dir::fwd ? src : any_md(d.src_dims(), in),
              dir == Dir::fwd ? dst : any_md(d.dst_dims(), in), quant_attr(d, q), memory::desc());
  if (post.any()) {
    // Post-ops are inference's: with forward_training oneDNN 2.6 takes them only in its
    // reference convolution. In the activation layouts the forward without them chose: with
    // forward_inference `any` picks channels-last brgconv in bf16, where the blocked layout
    // forward_training picks ran ResNet-50's 1x1 layers 1.5-1.8x faster on this machine (Zen 5).
    dnnl::primitive_attr attr = quant_attr(d, q, factor);
    dnnl::post_ops po;
    if (post.relu) po.append_eltwise(1.0f, algorithm::eltwise_relu, 0.0f, 0.0f);
    attr.set_post_ops(po);
    fwd = forward(dnnl::prop_kind::forward_inference, fwd.src_desc(), fwd.dst_desc(), attr,
                  post.shift ? plain_md({d.oc}) : memory::desc());
  }
  Built b;
  b.impl = fwd.impl_info_str();
  if (dir == Dir::fwd) {
    b.prim = dnnl::convolution_forward(fwd);
    b.inputs = {{DNNL_ARG_SRC, fwd.src_desc()}, {DNNL_ARG_WEIGHTS, fwd.weights_desc()}};
    b.bias = fwd.bias_desc();
    b.outputs = {{DNNL_ARG_DST, fwd.dst_desc(), d.dst_dims()}};
  } else if (dir == Dir::bwd_d) {
    dnnl::convolution_backward_data::primitive_desc pd(
        dnnl::convolution_backward_data::desc(alg, src, wei, dst, strides, dil, pad_l, pad_r), eng,
        fwd);
    b.prim = dnnl::convolution_backward_data(pd);
    b.inputs = {{DNNL_ARG_DIFF_DST, pd.diff_dst_desc()}, {DNNL_ARG_WEIGHTS, pd.weights_desc()}};
    b.outputs = {{DNNL_ARG_DIFF_SRC, pd.diff_src_desc(), d.src_dims()}};
  } else if (dir == Dir::bwd_w) {
    dnnl::convolution_backward_weights::primitive_desc pd(
        dnnl::convolution_backward_weights::desc(alg, src, wei, plain_md({d.oc}, t.bias), dst,
                                                 strides, dil, pad_l, pad_r),
        eng, fwd);
    b.prim = dnnl::convolution_backward_weights(pd);
    b.inputs = {{DNNL_ARG_SRC, pd.src_desc()}, {DNNL_ARG_DIFF_DST, pd.diff_dst_desc()}};
    b.outputs = {{DNNL_ARG_DIFF_WEIGHTS, pd.diff_weights_desc(), d.wei_dims()},
                 {DNNL_ARG_DIFF_BIAS, pd.diff_bias_desc(), {d.oc}}};
  } else {
    throw Unsupported("oneDNN conv: direction " + dir_str(dir) + " is not run separately");
  }
  return b;
}

class OnednnConv : public ConvImpl {
 public:
  OnednnConv(std::string name, algorithm alg) : name_(std::move(name)), alg_(alg) {}
  std::string name() const override { return name_; }

  Support supports(const ConvDesc& d, Dir dir) const override {
    Support dt = dt_direction(d, dir);
    if (!dt) return dt;
    if (std::string why = onednn::u8s8_unsupported(d.dt.in); !why.empty()) return Support::no(why);
    // Found by the conformance test (edge asym_pad_b1): oneDNN 2.6's Winograd backward-data
    // returns wrong values when the end padding differs from the start padding.
    if (alg_ == algorithm::convolution_winograd && dir == Dir::bwd_d &&
        (d.pad_b() != d.ph || d.pad_r() != d.pw))
      return Support::no("oneDNN 2.6 Winograd bwd_d is wrong with asymmetric padding");
    try {
      build(d, dir, alg_);
      return Support::yes();
    } catch (const dnnl::error& e) {
      if (e.status != dnnl_unimplemented) onednn::rethrow(e, "oneDNN conv " + name_);
      if (!d.dt.is_f32())
        return Support::no("oneDNN " + onednn::version() + " has no dt " + d.dt.str() + " " +
                           dir_str(dir) + " " + name_ + " convolution on this CPU (" + e.what() +
                           ")");
      return Support::no("oneDNN rejects " + dir_str(dir) + " " + d.str() + ": " + e.what());
    } catch (const Unsupported& e) {
      return Support::no(e.what());
    }
  }

  void plan(const ConvDesc& d, Dir dir, const std::vector<const Tensor*>& in) override {
    post_ = PostOpForm(), post_src_ = nullptr, target_ = nullptr;  // a new plan has none
    plan_with_post_ops(d, dir, in);
  }
  // Post-ops (impl.h) on the forward with an fp32 output, as oneDNN's own (PostOpForm): the
  // primitive is made again with them, writing into *dst.
  bool set_post_ops(const PostOps* p, Tensor* dst) override {
    if (dir_ != Dir::fwd || d_.dt.out != DataType::out_f32 || !p || p->res || !dst ||
        dst->dims() != d_.dst_dims())
      return false;
    const PostOpForm form(p);
    // u8s8's bias is divided by the output scale, which a zero batch-norm scale makes zero.
    if (d_.dt.integer() && form.scale && std::count(p->scale, p->scale + d_.oc, 0.0f)) return false;
    try {
      // Where oneDNN has the post-ops only in a reference implementation, the pass stays.
      const Built b = build(d_, dir_, alg_, nullptr, form);
      if (b.impl.rfind("ref", 0) == 0 && b_.impl.rfind("ref", 0) != 0) return false;
      // Nor where oneDNN cannot scale the weights into its layout (onednn/winograd's).
      if (form.scale && !d_.dt.integer())
        scaling_reorder(plain_md(d_.wei_dims()), b.inputs[1].second);
    } catch (const dnnl::error& e) {
      if (e.status == dnnl_unimplemented) return false;  // this primitive has no such post-ops
      onednn::rethrow(e, "oneDNN conv " + name_ + " with post-ops");
    }
    post_ = form, post_src_ = p, target_ = dst;
    if (form.scale) folded_.assign(p->scale, p->scale + d_.oc);
    plan_with_post_ops(d_, dir_, inputs_);
    weights();
    return true;
  }

 private:
  void plan_with_post_ops(const ConvDesc& d, Dir dir, const std::vector<const Tensor*>& in) {
    try {
      d_ = d, dir_ = dir;
      inputs_ = in;
      const QuantParams q = QuantParams::from(in, 2);
      b_ = build(d, dir, alg_, d.dt.integer() ? &q : nullptr, post_,
                 post_.scale && d.dt.integer() ? folded_.data() : nullptr);
      auto& eng = onednn::engine();
      args_.clear();
      wei_reorders_.clear();
      act_reorders_.clear();
      out_reorders_.clear();
      views_.clear();
      views_.reserve(b_.outputs.size());
      typed_.clear();
      typed_.reserve(b_.inputs.size() + b_.outputs.size());
      quantised_.clear();
      src_user_ = memory();
      q_ = q;
      out_users_.clear();
      ws_ = 0;
      // Inputs in NCHW/goihw are read in place; the others get a copy in oneDNN's layout, filled
      // by weights() (the weights) or reorder_in() (the activations). A reduced type's
      // activations are first converted to it here (a typed NCHW copy, untimed); its weights are
      // converted by the weights() reorder.
      for (size_t i = 0; i < b_.inputs.size(); ++i) {
        const auto& [arg, md] = b_.inputs[i];
        const bool weights = arg == DNNL_ARG_WEIGHTS;
        memory user = weights || d.dt.is_f32()
                          ? memory(plain_md(in[i]->dims()), eng, const_cast<float*>(in[i]->data()))
                          : typed_user(*in[i], md.data_type());
        if (i == 0 && !weights && !d.dt.is_f32()) src_user_ = user;
        if (weights && fold_into_weights()) {  // scaled into a copy of their own by weights()
          args_[arg] = memory(md, eng);
          scaled_weights_ = {user, args_[arg]};
          ws_ += md.get_size();
          continue;
        }
        if (md == user.get_desc()) {
          args_[arg] = user;
          continue;
        }
        memory mine(md, eng);
        (weights ? wei_reorders_ : act_reorders_).push_back({user, mine});
        args_[arg] = mine;
        ws_ += md.get_size();
      }
      // Outputs are host tensors in NCHW/goihw (output_view()): written in place when oneDNN
      // picks that layout, else written in its own and converted by reorder_out(). A reduced
      // output type's lives in a typed NCHW buffer that result() reads.
      for (const auto& o : b_.outputs) {
        // set_post_ops's *dst is the forward's output; its own is freed.
        target_ ? views_.emplace_back() : views_.emplace_back(o.dims);
        const mdt type = o.md.data_type();
        const memory::desc plain = plain_md(o.dims, type);
        float* out = target_ ? target_->data() : views_.back().data();
        memory user(plain, eng, type == mdt::f32 ? static_cast<void*>(out) : typed_buffer(plain));
        out_users_.push_back(user);
        if (o.md == user.get_desc()) {
          args_[o.arg] = user;
          continue;
        }
        memory mine(o.md, eng);
        args_[o.arg] = mine;
        out_reorders_.push_back({mine, user});
        ws_ += o.md.get_size();
      }
      if (post_.any()) plan_post_ops();
    } catch (const dnnl::error& e) {
      onednn::rethrow(e, "oneDNN conv " + name_);
    }
  }
  // fp32 and bf16 fold the batch-norm's scale into the weights; u8s8 into its output scales.
  bool fold_into_weights() const { return post_.scale && !d_.dt.integer(); }
  // The bias the shift becomes, and the reorder that scales the weights (weights() runs it).
  void plan_post_ops() {
    auto& eng = onednn::engine();
    if (post_.shift) {
      bias_.assign(d_.oc, 0.0f);
      args_[DNNL_ARG_BIAS] = memory(b_.bias, eng, bias_.data());
    }
    if (!fold_into_weights()) return;
    scale_reorder_ = dnnl::reorder(
        scaling_reorder(scaled_weights_.first.get_desc(), scaled_weights_.second.get_desc()));
  }
  // A weights reorder that scales each output channel by a run-time factor.
  dnnl::reorder::primitive_desc scaling_reorder(const memory::desc& from,
                                                const memory::desc& to) const {
    dnnl::primitive_attr attr;
    // Per output channel: dimension 0 of oihw, 0 and 1 of goihw (the channel g * ocg + o).
    attr.set_output_scales(d_.g > 1 ? 3 : 1, {DNNL_RUNTIME_F32_VAL});
    auto& eng = onednn::engine();
    return dnnl::reorder::primitive_desc(eng, from, eng, to, attr);
  }
  // This run's bias; a batch-norm scale that changed since it was folded is folded again (the
  // weights reordered, or u8s8's primitive made again with the new output scales: only when the
  // parameters change). u8s8's new primitive has the same layouts (the scales' values do not
  // choose them), so its memories, with this run's quantised source in them, stay.
  void start_post_ops() {
    const PostOps& p = *post_src_;
    if (post_.scale && !std::equal(folded_.begin(), folded_.end(), p.scale)) {
      folded_.assign(p.scale, p.scale + d_.oc);
      if (!d_.dt.integer()) {
        weights();
      } else {
        if (std::count(folded_.begin(), folded_.end(), 0.0f))
          throw RuntimeError("oneDNN conv " + name_ + ": post-ops with a zero scale in u8s8");
        Built b = build(d_, dir_, alg_, &q_, post_, folded_.data());
        if (b.inputs != b_.inputs || b.outputs[0].md != b_.outputs[0].md)
          throw RuntimeError("oneDNN conv " + name_ + ": new output scales changed the layouts");
        b_.prim = b.prim;
      }
    }
    if (!post_.shift) return;
    if (!d_.dt.integer()) {
      std::copy(p.shift, p.shift + d_.oc, bias_.begin());
      return;
    }
    // oneDNN's u8s8: dst = scale * (sum + bias).
    const std::vector<float> scales = quant_scales(d_, q_, post_.scale ? folded_.data() : nullptr);
    for (int64_t c = 0; c < d_.oc; ++c) bias_[c] = p.shift[c] / scales[c];
  }

 public:
  void weights() override {
    onednn::convert(wei_reorders_);
    if (!fold_into_weights()) return;
    memory scales(memory::desc({d_.oc}, mdt::f32, tag::x), onednn::engine(), folded_.data());
    const auto& [from, to] = scaled_weights_;
    scale_reorder_.execute(
        onednn::stream(),
        {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}, {DNNL_ARG_ATTR_OUTPUT_SCALES, scales}});
    onednn::stream().wait();
  }
  void reorder_in() override { onednn::convert(act_reorders_); }
  void run() override {
    if (post_src_) start_post_ops();
    b_.prim.execute(onednn::stream(), args_);
  }
  void reorder_out() override { onednn::convert(out_reorders_); }
  void sync() override { onednn::stream().wait(); }
  // A network's real-valued activations into the type again (impl.h), in place in the typed
  // copies the user memories read; the weights are weights()'s reorder.
  bool quantise(size_t i) override {
    for (const auto& [t, k] : quantised_)
      if (t == in_at(i)) {
        quantise_storage(*t, d_.dt.in, true, q_.src_scale, q_.src_zero, &typed_[k]);
        return true;
      }
    return false;
  }
  // The forward's typed source from a buffer of its size (impl.h): its NCHW user memory reads
  // the buffer in place of its own typed copy, which goes (reorder_in still converts it to
  // oneDNN's layout, timed as before).
  bool read_typed_input(size_t i, const std::vector<uint8_t>* buf) override {
    if (dir_ != Dir::fwd || d_.dt.is_f32() || i != 0 || !buf || !src_user_) return false;
    for (auto it = quantised_.begin(); it != quantised_.end(); ++it) {
      if (it->first != in_at(0) || typed_[it->second].size() != buf->size()) continue;
      src_user_.set_data_handle(const_cast<uint8_t*>(buf->data()));
      std::vector<uint8_t>().swap(typed_[it->second]);
      quantised_.erase(it);
      return true;
    }
    return false;
  }
  // A reduced output type has no fp32 view.
  const Tensor* output_view(size_t i) const override {
    if (i >= views_.size() || d_.dt.out != DataType::out_f32) return nullptr;
    return i == 0 && target_ ? target_ : &views_[i];
  }
  std::vector<Tensor> result() override {
    std::vector<Tensor> v;
    for (size_t i = 0; i < views_.size(); ++i) {
      v.push_back(i == 0 && target_ ? target_->clone() : views_[i].clone());
      if (d_.dt.out != DataType::out_f32)
        from_storage(out_users_[i].get_data_handle(), d_.dt.out, v.back().size(), v.back().data());
    }
    return v;
  }
  // Copies of the inputs and outputs in oneDNN's blocked formats, where they differ from NCHW.
  size_t workspace_bytes() const override { return ws_; }

 private:
  // A typed NCHW copy of an fp32 activation tensor (values exact in the type), as user memory.
  memory typed_user(const Tensor& t, mdt type) {
    typed_.emplace_back();
    quantised_.push_back({&t, typed_.size() - 1});
    to_storage(t, d_.dt.in, type == mdt::u8, &typed_.back());
    return memory(plain_md(t.dims(), type), onednn::engine(), typed_.back().data());
  }
  void* typed_buffer(const memory::desc& md) {
    typed_.emplace_back(md.get_size());
    return typed_.back().data();
  }

  std::string name_;
  algorithm alg_;
  ConvDesc d_;
  Dir dir_ = Dir::fwd;
  Built b_;
  std::unordered_map<int, memory> args_;
  std::vector<onednn::Conversion> wei_reorders_;  // goihw weights -> oneDNN's layout
  std::vector<onednn::Conversion> act_reorders_;  // NCHW activations -> oneDNN's layout
  std::vector<onednn::Conversion> out_reorders_;  // oneDNN's layout -> NCHW/goihw outputs
  std::vector<Tensor> views_;                     // the outputs, in NCHW/goihw
  std::vector<std::vector<uint8_t>> typed_;       // typed NCHW activations and outputs
  // The activation inputs with a typed copy (input tensor, its typed_ index), for quantise().
  std::vector<std::pair<const Tensor*, size_t>> quantised_;
  memory src_user_;  // a reduced type's forward: the source's typed NCHW user memory
  std::vector<const Tensor*> inputs_;
  const Tensor* in_at(size_t i) const { return i < inputs_.size() ? inputs_[i] : nullptr; }
  QuantParams q_;
  std::vector<memory> out_users_;  // the outputs' NCHW/goihw memories
  size_t ws_ = 0;
  // set_post_ops: the form, the caller's PostOps (read at each run) and output tensor.
  PostOpForm post_;
  const PostOps* post_src_ = nullptr;
  Tensor* target_ = nullptr;
  std::vector<float> folded_;                 // the scale folded into the weights or output scales
  std::vector<float> bias_;                   // the shift as oneDNN's bias
  std::pair<memory, memory> scaled_weights_;  // fp32 goihw -> oneDNN's, scaled by folded_
  dnnl::reorder scale_reorder_;
};

}  // namespace

std::unique_ptr<ConvImpl> make_conv_onednn_auto() {
  return std::make_unique<OnednnConv>("onednn/auto", algorithm::convolution_auto);
}
std::unique_ptr<ConvImpl> make_conv_onednn_winograd() {
  return std::make_unique<OnednnConv>("onednn/winograd", algorithm::convolution_winograd);
}

}  // namespace pb
