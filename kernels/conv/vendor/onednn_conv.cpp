// onednn/auto and onednn/winograd: oneDNN's convolution in all three directions as the vendor
// baseline. Inputs and outputs are converted between NCHW/goihw and the formats oneDNN prefers in
// explicit phases (weights(), reorder_in(), reorder_out()), so each timing contract times them
// as it times every other implementation's conversions.
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <unordered_map>

#include "kernels/conv/conv.h"
#include "kernels/core/error.h"
#include "kernels/vendor_onednn.h"

namespace pb {

namespace {

using dnnl::algorithm;
using dnnl::memory;
using tag = memory::format_tag;

memory::desc plain_md(const Dims& dims) {
  return memory::desc(memory::dims(dims.begin(), dims.end()), memory::data_type::f32,
                      dims.size() == 5   ? tag::goihw
                      : dims.size() == 1 ? tag::x
                                         : tag::nchw);
}
memory::desc any_md(const Dims& dims) {
  return memory::desc(memory::dims(dims.begin(), dims.end()), memory::data_type::f32, tag::any);
}

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
};

Built build(const ConvDesc& d, Dir dir, algorithm alg) {
  auto& eng = onednn::engine();
  const memory::dims strides{d.sh, d.sw}, dil{d.dh, d.dw}, pad_l{d.ph, d.pw};
  // A negative end pad (unused trailing rows when the stride does not divide) gives the same
  // output size as 0 with the floor in the formula; oneDNN wants it non-negative.
  const memory::dims pad_r{std::max<int64_t>(0, d.pad_b()), std::max<int64_t>(0, d.pad_r())};
  const auto src = any_md(d.src_dims()), wei = any_md(d.wei_dims()), dst = any_md(d.dst_dims());
  dnnl::convolution_forward::primitive_desc fwd(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, alg, src, wei, dst,
                                      strides, dil, pad_l, pad_r),
      eng);
  Built b;
  if (dir == Dir::fwd) {
    b.prim = dnnl::convolution_forward(fwd);
    b.inputs = {{DNNL_ARG_SRC, fwd.src_desc()}, {DNNL_ARG_WEIGHTS, fwd.weights_desc()}};
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
        dnnl::convolution_backward_weights::desc(alg, src, wei, plain_md({d.oc}), dst, strides, dil,
                                                 pad_l, pad_r),
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
      return Support::no("oneDNN rejects " + dir_str(dir) + " " + d.str() + ": " + e.what());
    } catch (const Unsupported& e) {
      return Support::no(e.what());
    }
  }

  void plan(const ConvDesc& d, Dir dir, const std::vector<const Tensor*>& in) override {
    try {
      b_ = build(d, dir, alg_);
      auto& eng = onednn::engine();
      args_.clear();
      wei_reorders_.clear();
      act_reorders_.clear();
      out_reorders_.clear();
      views_.clear();
      views_.reserve(b_.outputs.size());
      ws_ = 0;
      // Inputs in NCHW/goihw are read in place; the others get a copy in oneDNN's layout, filled
      // by weights() (the weights) or reorder_in() (the activations).
      for (size_t i = 0; i < b_.inputs.size(); ++i) {
        const auto& [arg, md] = b_.inputs[i];
        memory user(plain_md(in[i]->dims()), eng, const_cast<float*>(in[i]->data()));
        if (md == user.get_desc()) {
          args_[arg] = user;
          continue;
        }
        memory mine(md, eng);
        (arg == DNNL_ARG_WEIGHTS ? wei_reorders_ : act_reorders_).push_back({user, mine});
        args_[arg] = mine;
        ws_ += md.get_size();
      }
      // Outputs are host tensors in NCHW/goihw (output_view()): written in place when oneDNN
      // picks that layout, else written in its own and converted by reorder_out().
      for (const auto& o : b_.outputs) {
        views_.emplace_back(o.dims);
        memory user(plain_md(o.dims), eng, views_.back().data());
        if (o.md == user.get_desc()) {
          args_[o.arg] = user;
          continue;
        }
        memory mine(o.md, eng);
        args_[o.arg] = mine;
        out_reorders_.push_back({mine, user});
        ws_ += o.md.get_size();
      }
    } catch (const dnnl::error& e) {
      onednn::rethrow(e, "oneDNN conv " + name_);
    }
  }
  void weights() override { execute(wei_reorders_); }
  void reorder_in() override { execute(act_reorders_); }
  void run() override { b_.prim.execute(onednn::stream(), args_); }
  void reorder_out() override { execute(out_reorders_); }
  void sync() override { onednn::stream().wait(); }
  const Tensor* output_view(size_t i) const override {
    return i < views_.size() ? &views_[i] : nullptr;
  }
  std::vector<Tensor> result() override {
    std::vector<Tensor> v;
    for (const Tensor& t : views_) v.push_back(t.clone());
    return v;
  }
  // Copies of the inputs and outputs in oneDNN's blocked formats, where they differ from NCHW.
  size_t workspace_bytes() const override { return ws_; }

 private:
  std::string name_;
  algorithm alg_;
  Built b_;
  // One layout conversion: a reorder primitive (created once, in plan) from one memory to another.
  struct Conversion {
    Conversion(const memory& from, const memory& to) : prim(from, to), from(from), to(to) {}
    dnnl::reorder prim;
    memory from, to;
  };
  static void execute(std::vector<Conversion>& conversions) {
    for (auto& c : conversions) c.prim.execute(onednn::stream(), c.from, c.to);
  }
  std::unordered_map<int, memory> args_;
  std::vector<Conversion> wei_reorders_;  // goihw weights -> oneDNN's layout
  std::vector<Conversion> act_reorders_;  // NCHW activations -> oneDNN's layout
  std::vector<Conversion> out_reorders_;  // oneDNN's layout -> NCHW/goihw outputs
  std::vector<Tensor> views_;             // the outputs, in NCHW/goihw
  size_t ws_ = 0;
};

}  // namespace

std::unique_ptr<ConvImpl> make_conv_onednn_auto() {
  return std::make_unique<OnednnConv>("onednn/auto", algorithm::convolution_auto);
}
std::unique_ptr<ConvImpl> make_conv_onednn_winograd() {
  return std::make_unique<OnednnConv>("onednn/winograd", algorithm::convolution_winograd);
}

}  // namespace pb
