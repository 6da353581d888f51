// The oneDNN fused network plan (onednn_fused.cpp: inference and the plan; onednn_fused_train.cpp:
// training). Internal to those two files.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kernels/core/error.h"
#include "kernels/net/executor_impl.h"
#include "kernels/vendor_onednn.h"

namespace pb::onednn_fused {

using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;

inline memory::dims dims_of(int64_t mb, const Shape& s) {
  return s.h == 1 && s.w == 1 ? memory::dims{mb, s.c} : memory::dims{mb, s.c, s.h, s.w};
}
inline memory::desc plain(const memory::dims& d) {
  return memory::desc(d, dt::f32, d.size() == 2 ? tag::nc : tag::nchw);
}
inline memory::desc any(const memory::dims& d) {
  return memory::desc(d, dt::f32, tag::any);
}
inline memory::desc vec(int64_t n) {
  return memory::desc({n}, dt::f32, tag::x);
}
// Activations in oneDNN's channel blocks (16 with AVX-512, 8 below: onednn::blocked_act_tag)
// where the channels allow, else its choice: for forward_inference `any` picks channels-last
// (brgconv), measured 2.0x slower on VGG-16 and 1.23x on ResNet-50 at batch 16 on a Zen 5 than
// the blocked layout.
inline memory::desc act(const memory::dims& x) {
  const tag t = onednn::blocked_act_tag(x[1]);
  return t != tag::undef ? memory::desc(x, dt::f32, t) : any(x);
}
inline memory::dims conv_wei_dims(const ConvDesc& d) {
  return d.g > 1 ? memory::dims{d.g, d.ocg(), d.icg(), d.kh, d.kw}
                 : memory::dims{d.oc, d.ic, d.kh, d.kw};
}
inline memory::desc conv_wei_user(const ConvDesc& d) {
  return memory::desc(conv_wei_dims(d), dt::f32, d.g > 1 ? tag::goihw : tag::oihw);
}
struct ConvGeometry {
  memory::dims src, dst, strides, dil, pad_l, pad_r;
  explicit ConvGeometry(const ConvDesc& d)
      : src{d.mb, d.ic, d.ih, d.iw},
        dst{d.mb, d.oc, d.oh, d.ow},
        strides{d.sh, d.sw},
        dil{d.dh, d.dw},
        pad_l{d.ph, d.pw},
        // A negative end pad (unused trailing rows) gives the same output size as 0.
        pad_r{std::max<int64_t>(0, d.pad_b()), std::max<int64_t>(0, d.pad_r())} {}
};
// With own_layouts, the activations' layouts are oneDNN's choice too (see no_ref).
inline dnnl::convolution_forward::desc conv_fwd_desc(const ConvDesc& d, dnnl::prop_kind prop,
                                                     bool bias, bool own_layouts = false) {
  const ConvGeometry g(d);
  return dnnl::convolution_forward::desc(
      prop, dnnl::algorithm::convolution_auto, own_layouts ? any(g.src) : act(g.src),
      any(conv_wei_dims(d)), bias ? vec(d.oc) : memory::desc(),
      own_layouts ? any(g.dst) : act(g.dst), g.strides, g.dil, g.pad_l, g.pad_r);
}
// A convolution's primitive in the plan's blocked layouts, unless oneDNN has only its reference
// implementation for them and a JIT one in layouts of its own choosing (the activations then
// reordered to and from them, in the step): `make(false)` and `make(true)` build the two. On an
// AVX2 Zen 3, AlexNet-CIFAR's 2x2 and 4x4 layers in nChw8c took ref:any backward weights, 140-
// 310 ms each, where gemm:jit in plain layouts took 1-2 ms; its 11x11 stride-4 first layer
// ref:any forward, 21-28 ms.
template <class Make>
auto no_ref(Make&& make) {
  auto is_ref = [](const auto& pd) { return std::string(pd.impl_info_str()).rfind("ref", 0) == 0; };
  auto pd = make(false);
  if (!is_ref(pd)) return pd;
  auto own = make(true);
  return is_ref(own) ? pd : own;
}
// Our fully connected weights over an input of dims `src` (any rank): column-major out x in
// (in = c*h*w in NCHW order), element (o, i) at i * out + o.
inline memory::desc fc_wei_user(const memory::dims& src, int64_t out) {
  memory::dims wei_d = src;
  wei_d[0] = out;
  memory::dims strides(wei_d.size());
  memory::dim stride = out;
  for (size_t k = wei_d.size(); k-- > 1;) strides[k] = stride, stride *= wei_d[k];
  strides[0] = 1;
  return memory::desc(wei_d, dt::f32, strides);
}
inline dnnl::algorithm pool_alg(const PoolDesc& d) {
  return d.alg == PoolAlg::max     ? dnnl::algorithm::pooling_max
         : d.alg == PoolAlg::avg_p ? dnnl::algorithm::pooling_avg_include_padding
                                   : dnnl::algorithm::pooling_avg_exclude_padding;
}
inline float* data(const Tensor* t) {
  return const_cast<float*>(t->data());
}

// A layer with no fused form here (the composed plan stays): why.
struct NoFusedForm {
  std::string why;
};

// One fused call: primitives run in order, each with its arguments.
struct FusedCall : Call {
  std::vector<std::pair<dnnl::primitive, std::unordered_map<int, memory>>> steps;
  std::vector<std::vector<float>> keep;  // folded weights and biases, scale and shift
  size_t held = 0;                       // bytes of the memories it owns
  void run() override {
    for (auto& [p, args] : steps) p.execute(onednn::stream(), args);
    onednn::stream().wait();
  }
  size_t bytes() const override { return held; }
};

class Fuser {
 public:
  Fuser(Executor::Impl& ex) : ex_(ex), net_(ex.net), train_(ex.opt.train) {
    consumers_.assign(net_.layers.size(), {});
    for (size_t l = 0; l < net_.layers.size(); ++l)
      for (int i : net_.layers[l].inputs) consumers_[i].push_back(static_cast<int>(l));
    value_.assign(net_.layers.size(), memory());
    saved_.resize(net_.layers.size());
    grads_.resize(net_.layers.size());
  }

  // The fused forward calls (training: then backward() gives the backward ones), or empty with
  // *why set when a layer has no fused form here.
  std::vector<std::unique_ptr<Call>> plan(std::string* why);
  // Training: the backward calls, in order (after the loss's).
  std::vector<std::unique_ptr<Call>> take_backward() { return std::move(bwd_calls_); }
  // Layout conversions per step, and how many of them convert weights or weight gradients.
  int reorders() const { return reorders_; }
  int weight_reorders() const { return wei_reorders_; }

 private:
  static dnnl::engine& eng() { return onednn::engine(); }
  float* host(size_t l) { return const_cast<float*>(ex_.st[l].act->data()); }
  [[noreturn]] static void refuse(const Layer& L, const std::string& w) {
    throw NoFusedForm{L.name + ": " + w + " has no fused oneDNN form"};
  }
  dnnl::prop_kind prop() const {
    return train_ ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
  }

  void forward();
  // The value a layer's output has: its own, or that of the layer it was fused into.
  const memory& value_of(size_t l) const {
    while (!value_[l] && alias_.count(l)) l = alias_.at(l);
    return value_[l];
  }
  // The single consumer of l when it has exactly one, else -1.
  int only_consumer(size_t l) const { return consumers_[l].size() == 1 ? consumers_[l][0] : -1; }
  int only_consumer_of_kind(size_t l, LayerKind k) const {
    const int c = only_consumer(l);
    return c >= 0 && net_.layers[c].kind == k ? c : -1;
  }
  int relu_after(size_t l) const {
    const int c = only_consumer_of_kind(l, LayerKind::act);
    return c >= 0 && net_.layers[c].act.func == ActFunc::relu ? c : -1;
  }
  std::unique_ptr<FusedCall> start_call(const std::string& layer, const std::string& phase) {
    auto c = std::make_unique<FusedCall>();
    c->info.layer = layer, c->info.phase = phase, c->info.prim = "onednn", c->info.impl = kImpl;
    return c;
  }
  // A reorder run by the call every step; `weights`: of weights or their gradients.
  void add_reorder(FusedCall& c, const memory& from, const memory& to, bool weights = false) {
    c.steps.push_back({dnnl::reorder(from, to), {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}}});
    ++reorders_;
    wei_reorders_ += weights;
  }
  // `v` in layout `want`: v itself, or a reorder into a new memory added to the call.
  memory as(FusedCall& c, const memory& v, const memory::desc& want, bool weights = false) {
    if (v.get_desc() == want) return v;
    memory m(want, eng());
    c.held += want.get_size();
    add_reorder(c, v, m, weights);
    return m;
  }
  memory own(FusedCall& c, const memory::desc& md) {
    c.held += md.get_size();
    return memory(md, eng());
  }
  // Weights in our layout (`md` over host data), reordered once into `want`, owned by the call.
  memory weights_into(FusedCall& c, const memory::desc& md, const float* data,
                      const memory::desc& want);

  // What follows a producer at layer l, fused into it: batch-norm (folded into the weights),
  // then a residual add whose other operand is ready (a sum post-op), then ReLU. Returns the
  // last layer fused; fills the BN fold, post-ops and the add's other operand.
  struct Tail {
    int bn = -1, add = -1, relu = -1, last = -1;
    memory residual;
  };
  Tail tail(size_t l, bool allow_bn);
  dnnl::post_ops post_ops(const Tail& t) const {
    dnnl::post_ops po;
    if (t.add >= 0) po.append_sum(1.0f);
    if (t.relu >= 0) po.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    return po;
  }
  // Per output channel: w' = w * g / sqrt(var + eps), b' = (b - mean) * g / sqrt(var + eps) + beta.
  void fold(const Tail& t, int64_t oc, int64_t per_oc, const Tensor& w, const Tensor* b,
            std::vector<float>* wf, std::vector<float>* bf) const;
  // The fused tail's layers are computed: their value is the producer's.
  void finish(size_t l, const Tail& t, memory dst, std::unique_ptr<FusedCall> c);
  // The sum post-op adds into dst: the residual goes there first (a copy, or a reorder).
  void seed_residual(FusedCall& c, const Tail& t, const memory& dst);
  void conv(size_t l);
  void fc(size_t l);
  void pool(size_t l);

  // Batch-norm not after a convolution: inference batch-norm in the source's layout.
  void bnorm(size_t l);
  void relu(size_t l);

  // A residual add not fused into a producer: a binary add, ReLU fused when it follows (in
  // inference: a training ReLU keeps its own forward and backward).
  void add(size_t l);

  // LRN across channels in the source's layout (training: with the workspace its backward reads).
  dnnl::lrn_forward::desc lrn_desc(dnnl::prop_kind prop, const LrnDesc& d,
                                   const memory::desc& md) const {
    return dnnl::lrn_forward::desc(prop, dnnl::algorithm::lrn_across_channels, md, d.ls,
                                   static_cast<float>(d.alpha), static_cast<float>(d.beta),
                                   static_cast<float>(d.k));
  }
  void lrn(size_t l);

  // Channel concatenation: oneDNN's concat, into 16-channel blocks where the channels allow (the
  // layout the next convolution wants), from the branches' layouts as they are.
  void concat(size_t l);

  // ---- Training: forward_training primitives that keep what their backward needs. ----

  // Weights in the canonical layout (what the SGD update writes), reordered into `want` by the
  // call every step; the host tensor itself when the layouts agree.
  memory weights_each_step(FusedCall& c, const memory::desc& user_md, const Tensor& w,
                           const memory::desc& want);
  void conv_train(size_t l);

  // Fully connected in training as a framework's linear layer runs it: oneDNN's matmul on the
  // weights in the layout the SGD update writes (our column-major out x in is the row-major
  // in x out matrix B of y = x B + b), the input flattened to mb x in in NCHW order. An inner
  // product would want blocked weights, reordered every step (2 x 151 MB for AlexNet's fc6):
  // measured 0.57x the composed plan's fc6, whose matmul reads them in place.
  void fc_train(size_t l);

  // Training batch-norm on the batch's statistics, with the ReLU that follows fused in (its
  // backward reads the workspace oneDNN keeps of where the output was positive).
  void bnorm_train(size_t l);

  // ---- Training: the backward, layer by layer in reverse, in the forward's layouts. ----

  size_t root(size_t l) const {
    while (alias_.count(l)) l = alias_.at(l);
    return l;
  }
  // A gradient arriving at layer `to`'s output (none for the network's input).
  void give(size_t to, const memory& g);
  // The gradient at layer l's output: its one contribution, or their sum in the first one's
  // layout (computed by call c); an empty memory when none arrives.
  memory grad(size_t l, FusedCall& c);
  // A host tensor the backward writes (a weight gradient the SGD update reads).
  memory host_out(const memory::desc& md, const Tensor* t);
  void backward();
  bool wants_dx(const Layer& L) const { return net_.layers[L.inputs[0]].kind != LayerKind::input; }
  void push_bwd(std::unique_ptr<FusedCall> c, const std::string& phase) {
    c->info.phase = phase;
    bwd_calls_.push_back(std::move(c));
  }
  // The weight gradient into its host tensor: written there directly when oneDNN's layout is
  // the canonical one, else through a reorder after the primitive.
  memory diff_weights(FusedCall& c, const memory::desc& want, const memory::desc& user_md,
                      const Tensor* dw, memory* user);
  void conv_bwd(size_t l, const memory& g, std::unique_ptr<FusedCall> c);

  // dB = x^T dy (into the host gradient the SGD update reads), db = dy summed over the batch,
  // dx = dy B^T (viewed back as the input's NCHW shape).
  void fc_bwd(size_t l, const memory& g, std::unique_ptr<FusedCall> c);
  void pool_bwd(size_t l, const memory& g, std::unique_ptr<FusedCall> c);
  void bnorm_bwd(size_t l, const memory& g, std::unique_ptr<FusedCall> c);

  // Each branch's gradient: its channels of the concatenation's, a view of them copied out (in
  // the gradient's layout; from NCHW where a slice does not fall on the layout's blocks).
  void concat_bwd(size_t l, const memory& g, std::unique_ptr<FusedCall> c);
  void lrn_bwd(size_t l, const memory& g, std::unique_ptr<FusedCall> c);
  void relu_bwd(size_t l, const memory& g, std::unique_ptr<FusedCall> c);

  // What a layer's forward keeps for its backward.
  struct Saved {
    memory src, wei, ws, mean, var;  // the forward's source and weights in its layouts
    dnnl::convolution_forward::primitive_desc conv;
    dnnl::pooling_forward::primitive_desc pool;
    dnnl::batch_normalization_forward::primitive_desc bn;
    dnnl::normalization_flags bn_flags{};
    dnnl::eltwise_forward::primitive_desc relu;
    dnnl::lrn_forward::primitive_desc lrn;
  };

  static constexpr const char* kImpl = "onednn/fused";
  Executor::Impl& ex_;
  const Network& net_;
  const bool train_;
  std::vector<Saved> saved_;
  std::vector<std::vector<memory>> grads_;  // per layer: the gradients arriving at its output
  std::vector<std::unique_ptr<Call>> bwd_calls_;
  int wei_reorders_ = 0;
  std::vector<std::vector<int>> consumers_;
  std::vector<memory> value_;
  std::unordered_map<size_t, size_t> alias_;  // fused layer -> the layer computing its value
  std::unordered_set<size_t> done_;
  std::vector<std::unique_ptr<Call>> calls_;
  int reorders_ = 0;
};

}  // namespace pb::onednn_fused
