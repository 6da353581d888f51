// onednn/auto and onednn/winograd: oneDNN's convolution in all three directions as the vendor
// baseline. As benchdnn does, inputs are reordered to oneDNN's preferred formats in prepare()
// and only the convolution primitive is timed; the output is reordered back in result().
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
      return Support::no("oneDNN rejects " + dir_str(dir) + " " + d.str() + ": " + e.what());
    } catch (const Unsupported& e) {
      return Support::no(e.what());
    }
  }

  void prepare(const ConvDesc& d, Dir dir, const std::vector<const Tensor*>& in) override {
    try {
      b_ = build(d, dir, alg_);
      auto& eng = onednn::engine();
      args_.clear();
      reorders_.clear();
      views_.clear();
      ws_ = 0;
      // Inputs in NCHW/goihw are read in place; others are reordered here and in refresh().
      for (size_t i = 0; i < b_.inputs.size(); ++i) {
        const auto& [arg, md] = b_.inputs[i];
        memory user(plain_md(in[i]->dims()), eng, const_cast<float*>(in[i]->data()));
        if (md == user.get_desc()) {
          args_[arg] = user;
          continue;
        }
        memory mine(md, eng);
        reorders_.emplace_back(user, mine);
        args_[arg] = mine;
        ws_ += md.get_size();
      }
      refresh();
      // Outputs in NCHW/goihw are written straight into host tensors (output_view()).
      for (const auto& o : b_.outputs) {
        if (o.md == plain_md(o.dims)) {
          views_.emplace_back(o.dims);
          args_[o.arg] = memory(o.md, eng, views_.back().data());
        } else {
          views_.emplace_back();
          args_[o.arg] = memory(o.md, eng);
        }
      }
    } catch (const dnnl::error& e) {
      throw Unsupported("oneDNN conv " + name_ + ": " + e.what());
    }
  }
  bool refresh() override {
    for (auto& [user, mine] : reorders_)
      dnnl::reorder(user, mine).execute(onednn::stream(), user, mine);
    onednn::stream().wait();
    return true;
  }
  const Tensor* output_view(size_t i) const override {
    return i < views_.size() && views_[i].size() ? &views_[i] : nullptr;
  }
  void run() override { b_.prim.execute(onednn::stream(), args_); }
  void sync() override { onednn::stream().wait(); }
  std::vector<Tensor> result() override {
    std::vector<Tensor> v;
    for (const auto& o : b_.outputs) {
      Tensor out(o.dims);
      memory user(plain_md(out.dims()), onednn::engine(), out.data());
      memory& mine = args_.at(o.arg);
      dnnl::reorder(mine, user).execute(onednn::stream(), mine, user);
      onednn::stream().wait();
      v.push_back(std::move(out));
    }
    return v;
  }
  // Copies of the inputs and output in oneDNN's blocked formats, when they differ from NCHW.
  size_t workspace_bytes() const override {
    size_t ws = ws_;
    for (const auto& o : b_.outputs)
      if (o.md != plain_md(o.dims)) ws += o.md.get_size();
    return ws;
  }

 private:
  std::string name_;
  algorithm alg_;
  Built b_;
  std::unordered_map<int, memory> args_;
  std::vector<std::pair<memory, memory>> reorders_;  // (NCHW input, oneDNN's layout)
  std::vector<Tensor> views_;                        // host outputs, or empty when blocked
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
