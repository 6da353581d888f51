// Backend onednn: the network as a framework would hand it to oneDNN. Activations stay in the
// layouts oneDNN's primitives prefer (blocked) from one oneDNN layer to the next, with a reorder
// only where the next primitive wants another layout.
// - Inference: convolution + bias + folded inference batch-norm + ReLU + residual sum run as one
//   primitive with post-ops, fully connected + bias + ReLU as one inner product. Weights are
//   folded and reordered once, at plan time.
// - Training: each layer's forward_training primitive keeps what its backward needs (pooling's
//   workspace, batch-norm's statistics; batch-norm + ReLU as one primitive with fuse_norm_relu);
//   the backward runs oneDNN's backward-data and backward-weights primitives in the same layouts,
//   gradients of a value with several consumers summed there. The weights live in the canonical
//   layout the SGD update writes, so every step reorders them into the primitives' layouts and
//   the weight gradients back (timed, counted), as a framework's training step does.
// Replaces the composed calls of every layer but the loss (and, training, the SGD update): see
// Executor::Impl::fuse_onednn.
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

namespace pb {

namespace {

using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;

memory::dims dims_of(int64_t mb, const Shape& s) {
  return s.h == 1 && s.w == 1 ? memory::dims{mb, s.c} : memory::dims{mb, s.c, s.h, s.w};
}
memory::desc plain(const memory::dims& d) {
  return memory::desc(d, dt::f32, d.size() == 2 ? tag::nc : tag::nchw);
}
memory::desc any(const memory::dims& d) {
  return memory::desc(d, dt::f32, tag::any);
}
memory::desc vec(int64_t n) {
  return memory::desc({n}, dt::f32, tag::x);
}
// Activations in oneDNN's 16-channel blocks where the channels allow, else its choice: for
// forward_inference `any` picks channels-last (brgconv), measured 2.0x slower on VGG-16 and 1.23x
// on ResNet-50 at batch 16 on this machine (Zen 5) than the blocked layout.
memory::desc act(const memory::dims& x) {
  return x[1] % 16 == 0 ? memory::desc(x, dt::f32, tag::nChw16c) : any(x);
}
memory::dims conv_wei_dims(const ConvDesc& d) {
  return d.g > 1 ? memory::dims{d.g, d.ocg(), d.icg(), d.kh, d.kw}
                 : memory::dims{d.oc, d.ic, d.kh, d.kw};
}
memory::desc conv_wei_user(const ConvDesc& d) {
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
dnnl::convolution_forward::desc conv_fwd_desc(const ConvDesc& d, dnnl::prop_kind prop, bool bias) {
  const ConvGeometry g(d);
  return dnnl::convolution_forward::desc(prop, dnnl::algorithm::convolution_auto, act(g.src),
                                         any(conv_wei_dims(d)), bias ? vec(d.oc) : memory::desc(),
                                         act(g.dst), g.strides, g.dil, g.pad_l, g.pad_r);
}
// Our fully connected weights over an input of dims `src` (any rank): column-major out x in
// (in = c*h*w in NCHW order), element (o, i) at i * out + o.
memory::desc fc_wei_user(const memory::dims& src, int64_t out) {
  memory::dims wei_d = src;
  wei_d[0] = out;
  memory::dims strides(wei_d.size());
  memory::dim stride = out;
  for (size_t k = wei_d.size(); k-- > 1;) strides[k] = stride, stride *= wei_d[k];
  strides[0] = 1;
  return memory::desc(wei_d, dt::f32, strides);
}
dnnl::algorithm pool_alg(const PoolDesc& d) {
  return d.alg == PoolAlg::max     ? dnnl::algorithm::pooling_max
         : d.alg == PoolAlg::avg_p ? dnnl::algorithm::pooling_avg_include_padding
                                   : dnnl::algorithm::pooling_avg_exclude_padding;
}
float* data(const Tensor* t) {
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
  std::vector<std::unique_ptr<Call>> plan(std::string* why) {
    try {
      forward();
    } catch (const NoFusedForm& e) {
      *why = e.why;
      return {};
    }
    // The network's result (the loss layer's input, or the last layer) into its host tensor.
    size_t last = net_.layers.size() - 1;
    if (net_.has_loss()) last = net_.layers[last].inputs[0];
    memory out(plain(dims_of(net_.mb, net_.layers[last].out)), eng(), host(last));
    memory v = value_of(last);
    if (v.get_desc() != out.get_desc()) {
      auto c = start_call(net_.layers[last].name, "to_nchw");
      add_reorder(*c, v, out);
      calls_.push_back(std::move(c));
    } else {  // already in the canonical layout: the last primitive writes the host tensor
      v.set_data_handle(out.get_data_handle());
    }
    if (train_) {
      try {
        backward();
      } catch (const NoFusedForm& e) {
        *why = e.why;
        return {};
      }
    }
    return std::move(calls_);
  }
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

  void forward() {
    for (size_t l = 0; l < net_.layers.size(); ++l) {
      const Layer& L = net_.layers[l];
      if (done_.count(l) || L.kind == LayerKind::loss) continue;
      switch (L.kind) {
        case LayerKind::input:
          value_[l] = memory(plain(dims_of(net_.mb, L.out)), eng(), host(l));
          break;
        case LayerKind::conv:
          train_ ? conv_train(l) : conv(l);
          break;
        case LayerKind::fc:
          train_ ? fc_train(l) : fc(l);
          break;
        case LayerKind::pool:
          pool(l);
          break;
        case LayerKind::bnorm:
          train_ ? bnorm_train(l) : bnorm(l);
          break;
        case LayerKind::act:
          if (L.act.func != ActFunc::relu) refuse(L, "activation other than ReLU");
          relu(l);
          break;
        case LayerKind::add:
          add(l);
          break;
        case LayerKind::concat:
          concat(l);
          break;
        case LayerKind::lrn:
          lrn(l);
          break;
        case LayerKind::dropout:  // inference: the identity; training: oneDNN has none
          if (train_) refuse(L, "dropout (oneDNN has no dropout primitive)");
          value_[l] = value_of(L.inputs[0]);
          break;
        default:
          refuse(L, "layer kind " + std::string(layer_kind_str(L.kind)));
      }
    }
  }
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
                      const memory::desc& want) {
    memory user(md, eng(), const_cast<float*>(data));
    memory m = own(c, want);
    dnnl::reorder(user, m).execute(onednn::stream(), user, m);
    onednn::stream().wait();
    return m;
  }

  // What follows a producer at layer l, fused into it: batch-norm (folded into the weights),
  // then a residual add whose other operand is ready (a sum post-op), then ReLU. Returns the
  // last layer fused; fills the BN fold, post-ops and the add's other operand.
  struct Tail {
    int bn = -1, add = -1, relu = -1, last = -1;
    memory residual;
  };
  Tail tail(size_t l, bool allow_bn) {
    Tail t;
    t.last = static_cast<int>(l);
    if (allow_bn) {
      const int b = only_consumer_of_kind(t.last, LayerKind::bnorm);
      if (b >= 0) t.bn = t.last = b;
      // A batch-norm with its own ReLU: the ReLU comes before whatever follows (a residual sum
      // fused after it would run before the ReLU), so the tail ends there.
      if (b >= 0 && net_.layers[b].bnorm.relu) {
        t.relu = b;
        return t;
      }
    }
    const int a = only_consumer_of_kind(t.last, LayerKind::add);
    if (a >= 0) {
      const Layer& A = net_.layers[a];
      const int other = A.inputs[0] == t.last ? A.inputs[1] : A.inputs[0];
      if (other != t.last && value_of(other)) t.add = t.last = a, t.residual = value_of(other);
    }
    const int r = relu_after(t.last);
    if (r >= 0) t.relu = t.last = r;
    return t;
  }
  dnnl::post_ops post_ops(const Tail& t) const {
    dnnl::post_ops po;
    if (t.add >= 0) po.append_sum(1.0f);
    if (t.relu >= 0) po.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    return po;
  }
  // Per output channel: w' = w * g / sqrt(var + eps), b' = (b - mean) * g / sqrt(var + eps) + beta.
  void fold(const Tail& t, int64_t oc, int64_t per_oc, const Tensor& w, const Tensor* b,
            std::vector<float>* wf, std::vector<float>* bf) const {
    wf->assign(w.data(), w.data() + w.size());
    bf->assign(oc, 0.0f);
    if (b)
      for (int64_t o = 0; o < oc; ++o) (*bf)[o] = (*b)[o];
    if (t.bn < 0) return;
    const auto& s = ex_.st[t.bn];
    const BnormDesc& d = net_.layers[t.bn].bnorm;
    for (int64_t o = 0; o < oc; ++o) {
      const auto [g, off] = s.bn_fold(d, o, (*bf)[o]);
      for (int64_t k = 0; k < per_oc; ++k) (*wf)[o * per_oc + k] *= static_cast<float>(g);
      (*bf)[o] = static_cast<float>(off);
    }
  }
  // The fused tail's layers are computed: their value is the producer's.
  void finish(size_t l, const Tail& t, memory dst, std::unique_ptr<FusedCall> c) {
    value_[l] = dst;
    for (int k : {t.bn, t.add, t.relu})
      if (k >= 0 && k != static_cast<int>(l)) alias_[k] = l, done_.insert(k);
    std::string phase = "fwd";
    if (t.bn >= 0) phase += "+bn";
    if (t.add >= 0) phase += "+add";
    if (t.relu >= 0) phase += "+relu";
    c->info.phase = phase;
    calls_.push_back(std::move(c));
  }
  // The sum post-op adds into dst: the residual goes there first (a copy, or a reorder).
  void seed_residual(FusedCall& c, const Tail& t, const memory& dst) {
    if (t.add < 0) return;
    c.steps.push_back(
        {dnnl::reorder(t.residual, dst), {{DNNL_ARG_FROM, t.residual}, {DNNL_ARG_TO, dst}}});
    if (t.residual.get_desc() != dst.get_desc()) ++reorders_;
  }

  void conv(size_t l) {
    const Layer& L = net_.layers[l];
    const ConvDesc& d = L.conv;
    const Tail t = tail(l, true);
    auto c = start_call(L.name, "fwd");
    dnnl::primitive_attr attr;
    attr.set_post_ops(post_ops(t));
    dnnl::convolution_forward::primitive_desc pd(
        conv_fwd_desc(d, dnnl::prop_kind::forward_inference, true), attr, eng());
    std::vector<float> wf, bf;
    fold(t, d.oc, d.icg() * d.kh * d.kw, ex_.st[l].w, L.bias ? &ex_.st[l].b : nullptr, &wf, &bf);
    c->keep.push_back(std::move(wf));
    c->keep.push_back(std::move(bf));
    memory wei = weights_into(*c, conv_wei_user(d), c->keep[0].data(), pd.weights_desc());
    memory bias(vec(d.oc), eng(), c->keep[1].data());
    memory src = as(*c, value_of(L.inputs[0]), pd.src_desc());
    memory dst = own(*c, pd.dst_desc());
    seed_residual(*c, t, dst);
    c->steps.push_back({dnnl::convolution_forward(pd),
                        {{DNNL_ARG_SRC, src},
                         {DNNL_ARG_WEIGHTS, wei},
                         {DNNL_ARG_BIAS, bias},
                         {DNNL_ARG_DST, dst}}});
    finish(l, t, dst, std::move(c));
  }

  void fc(size_t l) {
    const Layer& L = net_.layers[l];
    const Tail t = tail(l, false);
    auto c = start_call(L.name, "fwd");
    const memory& x = value_of(L.inputs[0]);
    const memory::dims src_d = x.get_desc().dims();
    const memory::desc wei_user = fc_wei_user(src_d, L.fc_out);
    dnnl::primitive_attr attr;
    attr.set_post_ops(post_ops(t));
    dnnl::inner_product_forward::primitive_desc pd(
        dnnl::inner_product_forward::desc(dnnl::prop_kind::forward_inference, any(src_d),
                                          any(wei_user.dims()), vec(L.fc_out),
                                          any({net_.mb, L.fc_out})),
        attr, eng());
    std::vector<float> bf(L.fc_out, 0.0f);
    if (L.bias) std::memcpy(bf.data(), ex_.st[l].b.data(), bf.size() * 4);
    c->keep.push_back(std::move(bf));
    memory wei = weights_into(*c, wei_user, ex_.st[l].w.data(), pd.weights_desc());
    memory bias(vec(L.fc_out), eng(), c->keep[0].data());
    memory src = as(*c, x, pd.src_desc());
    memory dst = own(*c, pd.dst_desc());
    seed_residual(*c, t, dst);
    c->steps.push_back({dnnl::inner_product_forward(pd),
                        {{DNNL_ARG_SRC, src},
                         {DNNL_ARG_WEIGHTS, wei},
                         {DNNL_ARG_BIAS, bias},
                         {DNNL_ARG_DST, dst}}});
    finish(l, t, dst, std::move(c));
  }

  void pool(size_t l) {
    const Layer& L = net_.layers[l];
    const PoolDesc& d = L.pool;
    auto c = start_call(L.name, "fwd");
    const memory& x = value_of(L.inputs[0]);
    // The source as it is (blocked or not); oneDNN picks the destination's layout to match.
    dnnl::pooling_forward::primitive_desc pd(
        dnnl::pooling_forward::desc(prop(), pool_alg(d), x.get_desc(),
                                    any({d.mb, d.ic, d.oh, d.ow}), {d.sh, d.sw}, {d.kh, d.kw},
                                    {d.ph, d.pw}, {d.pad_b(), d.pad_r()}),
        eng());
    memory dst = own(*c, pd.dst_desc());
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, x}, {DNNL_ARG_DST, dst}};
    Saved& s = saved_[l];
    if (train_ && pd.workspace_desc().get_size())
      s.ws = args[DNNL_ARG_WORKSPACE] = own(*c, pd.workspace_desc());
    s.pool = pd, s.src = x;
    c->steps.push_back({dnnl::pooling_forward(pd), args});
    finish(l, Tail(), dst, std::move(c));
  }

  // Batch-norm not after a convolution: inference batch-norm in the source's layout.
  void bnorm(size_t l) {
    const Layer& L = net_.layers[l];
    const BnormDesc& d = L.bnorm;
    const int r = relu_after(l);
    auto c = start_call(L.name, "fwd");
    const memory& x = value_of(L.inputs[0]);
    auto flags = dnnl::normalization_flags::use_global_stats |
                 dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
    if (d.relu || r >= 0) flags |= dnnl::normalization_flags::fuse_norm_relu;
    dnnl::batch_normalization_forward::primitive_desc pd(
        dnnl::batch_normalization_forward::desc(dnnl::prop_kind::forward_inference, x.get_desc(),
                                                static_cast<float>(d.eps), flags),
        eng());
    auto& s = ex_.st[l];
    std::vector<float> scale(d.ic, 1.0f), shift(d.ic, 0.0f);
    for (int64_t k = 0; k < d.ic; ++k) {
      if (d.scale) scale[k] = s.scale[k];
      if (d.shift) shift[k] = s.shift[k];
    }
    c->keep.push_back(std::move(scale));
    c->keep.push_back(std::move(shift));
    const memory::desc vec({d.ic}, dt::f32, tag::x);
    memory dst = own(*c, pd.dst_desc());
    c->steps.push_back({dnnl::batch_normalization_forward(pd),
                        {{DNNL_ARG_SRC, x},
                         {DNNL_ARG_DST, dst},
                         {DNNL_ARG_SCALE, memory(vec, eng(), c->keep[0].data())},
                         {DNNL_ARG_SHIFT, memory(vec, eng(), c->keep[1].data())},
                         {DNNL_ARG_MEAN, memory(vec, eng(), s.rmean.data())},
                         {DNNL_ARG_VARIANCE, memory(vec, eng(), s.rvar.data())}}});
    Tail t;
    t.relu = r;
    finish(l, t, dst, std::move(c));
  }

  void relu(size_t l) {
    const Layer& L = net_.layers[l];
    auto c = start_call(L.name, "fwd");
    const memory& x = value_of(L.inputs[0]);
    dnnl::eltwise_forward::primitive_desc pd(
        dnnl::eltwise_forward::desc(prop(), dnnl::algorithm::eltwise_relu, x.get_desc(), 0.0f,
                                    0.0f),
        eng());
    saved_[l].relu = pd, saved_[l].src = x;
    memory dst = own(*c, pd.dst_desc());
    c->steps.push_back({dnnl::eltwise_forward(pd), {{DNNL_ARG_SRC, x}, {DNNL_ARG_DST, dst}}});
    finish(l, Tail(), dst, std::move(c));
  }

  // A residual add not fused into a producer: a binary add, ReLU fused when it follows (in
  // inference: a training ReLU keeps its own forward and backward).
  void add(size_t l) {
    const Layer& L = net_.layers[l];
    Tail t;
    if (!train_) t.relu = relu_after(l);
    auto c = start_call(L.name, "fwd");
    const memory& a = value_of(L.inputs[0]);
    memory b = as(*c, value_of(L.inputs[1]), a.get_desc());
    dnnl::primitive_attr attr;
    attr.set_post_ops(post_ops(t));
    dnnl::binary::primitive_desc pd(
        dnnl::binary::desc(dnnl::algorithm::binary_add, a.get_desc(), a.get_desc(), a.get_desc()),
        attr, eng());
    memory dst = own(*c, pd.dst_desc());
    c->steps.push_back(
        {dnnl::binary(pd), {{DNNL_ARG_SRC_0, a}, {DNNL_ARG_SRC_1, b}, {DNNL_ARG_DST, dst}}});
    finish(l, t, dst, std::move(c));
  }

  // LRN across channels in the source's layout (training: with the workspace its backward reads).
  dnnl::lrn_forward::desc lrn_desc(dnnl::prop_kind prop, const LrnDesc& d,
                                   const memory::desc& md) const {
    return dnnl::lrn_forward::desc(prop, dnnl::algorithm::lrn_across_channels, md, d.ls,
                                   static_cast<float>(d.alpha), static_cast<float>(d.beta),
                                   static_cast<float>(d.k));
  }
  void lrn(size_t l) {
    const Layer& L = net_.layers[l];
    auto c = start_call(L.name, "fwd");
    Saved& s = saved_[l];
    s.src = value_of(L.inputs[0]);
    s.lrn = dnnl::lrn_forward::primitive_desc(lrn_desc(prop(), L.lrn, s.src.get_desc()), eng());
    memory dst = own(*c, s.lrn.dst_desc());
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, s.src}, {DNNL_ARG_DST, dst}};
    if (train_ && s.lrn.workspace_desc().get_size())
      s.ws = args[DNNL_ARG_WORKSPACE] = own(*c, s.lrn.workspace_desc());
    c->steps.push_back({dnnl::lrn_forward(s.lrn), args});
    finish(l, Tail(), dst, std::move(c));
  }

  // Channel concatenation: oneDNN's concat, into 16-channel blocks where the channels allow (the
  // layout the next convolution wants), from the branches' layouts as they are.
  void concat(size_t l) {
    const Layer& L = net_.layers[l];
    auto c = start_call(L.name, "fwd");
    std::vector<memory::desc> mds;
    std::unordered_map<int, memory> args;
    for (size_t k = 0; k < L.inputs.size(); ++k) {
      const memory& v = value_of(L.inputs[k]);
      mds.push_back(v.get_desc());
      args[DNNL_ARG_MULTIPLE_SRC + static_cast<int>(k)] = v;
    }
    const memory::dims dst_d{net_.mb, L.out.c, L.out.h, L.out.w};
    const memory::desc want =
        L.out.c % 16 == 0 ? memory::desc(dst_d, dt::f32, tag::nChw16c) : plain(dst_d);
    dnnl::concat::primitive_desc pd(want, 1, mds, eng());
    memory dst = own(*c, pd.dst_desc());
    args[DNNL_ARG_DST] = dst;
    c->steps.push_back({dnnl::concat(pd), args});
    finish(l, Tail(), dst, std::move(c));
  }

  // ---- Training: forward_training primitives that keep what their backward needs. ----

  // Weights in the canonical layout (what the SGD update writes), reordered into `want` by the
  // call every step; the host tensor itself when the layouts agree.
  memory weights_each_step(FusedCall& c, const memory::desc& user_md, const Tensor& w,
                           const memory::desc& want) {
    return as(c, memory(user_md, eng(), data(&w)), want, true);
  }

  void conv_train(size_t l) {
    const Layer& L = net_.layers[l];
    auto c = start_call(L.name, "fwd");
    Saved& s = saved_[l];
    s.conv = dnnl::convolution_forward::primitive_desc(
        conv_fwd_desc(L.conv, dnnl::prop_kind::forward_training, L.bias), eng());
    s.wei = weights_each_step(*c, conv_wei_user(L.conv), ex_.st[l].w, s.conv.weights_desc());
    s.src = as(*c, value_of(L.inputs[0]), s.conv.src_desc());
    memory dst = own(*c, s.conv.dst_desc());
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, s.src}, {DNNL_ARG_WEIGHTS, s.wei}, {DNNL_ARG_DST, dst}};
    if (L.bias) args[DNNL_ARG_BIAS] = memory(vec(L.conv.oc), eng(), data(&ex_.st[l].b));
    c->steps.push_back({dnnl::convolution_forward(s.conv), args});
    finish(l, Tail(), dst, std::move(c));
  }

  // Fully connected in training as a framework's linear layer runs it: oneDNN's matmul on the
  // weights in the layout the SGD update writes (our column-major out x in is the row-major
  // in x out matrix B of y = x B + b), the input flattened to mb x in in NCHW order. An inner
  // product would want blocked weights, reordered every step (2 x 151 MB for AlexNet's fc6):
  // measured 0.57x the composed plan's fc6, whose matmul reads them in place.
  void fc_train(size_t l) {
    const Layer& L = net_.layers[l];
    auto c = start_call(L.name, "fwd");
    Saved& s = saved_[l];
    const memory& x = value_of(L.inputs[0]);
    const int64_t in = L.in.size(), out = L.fc_out, mb = net_.mb;
    // The input in NCHW, then viewed as mb x in.
    const memory nchw = as(*c, x, plain(x.get_desc().dims()));
    s.src = memory(memory::desc({mb, in}, dt::f32, tag::ab), eng(), nchw.get_data_handle());
    s.wei = memory(memory::desc({in, out}, dt::f32, tag::ab), eng(), data(&ex_.st[l].w));
    const memory::desc dst_md({mb, out}, dt::f32, tag::ab);
    const memory::desc bias_md = L.bias ? memory::desc({1, out}, dt::f32, tag::ab) : memory::desc();
    dnnl::matmul::primitive_desc pd(
        dnnl::matmul::desc(s.src.get_desc(), s.wei.get_desc(), bias_md, dst_md), eng());
    memory dst = own(*c, dst_md);
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, s.src}, {DNNL_ARG_WEIGHTS, s.wei}, {DNNL_ARG_DST, dst}};
    if (L.bias) args[DNNL_ARG_BIAS] = memory(bias_md, eng(), data(&ex_.st[l].b));
    c->steps.push_back({dnnl::matmul(pd), args});
    finish(l, Tail(), dst, std::move(c));
  }

  // Training batch-norm on the batch's statistics, with the ReLU that follows fused in (its
  // backward reads the workspace oneDNN keeps of where the output was positive).
  void bnorm_train(size_t l) {
    const Layer& L = net_.layers[l];
    const BnormDesc& d = L.bnorm;
    if (!d.scale || !d.shift) refuse(L, "training batch-norm without both scale and shift");
    Tail t;
    if (!train_) t.relu = relu_after(l);
    auto c = start_call(L.name, "fwd");
    Saved& s = saved_[l];
    s.src = value_of(L.inputs[0]);
    s.bn_flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
    if (d.relu || t.relu >= 0) s.bn_flags |= dnnl::normalization_flags::fuse_norm_relu;
    s.bn = dnnl::batch_normalization_forward::primitive_desc(
        dnnl::batch_normalization_forward::desc(dnnl::prop_kind::forward_training, s.src.get_desc(),
                                                static_cast<float>(d.eps), s.bn_flags),
        eng());
    memory dst = own(*c, s.bn.dst_desc());
    s.mean = own(*c, s.bn.mean_desc());
    s.var = own(*c, s.bn.variance_desc());
    const auto& st = ex_.st[l];
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, s.src},
        {DNNL_ARG_DST, dst},
        {DNNL_ARG_SCALE, memory(vec(d.ic), eng(), data(&st.scale))},
        {DNNL_ARG_SHIFT, memory(vec(d.ic), eng(), data(&st.shift))},
        {DNNL_ARG_MEAN, s.mean},
        {DNNL_ARG_VARIANCE, s.var}};
    if (s.bn.workspace_desc().get_size())
      s.ws = args[DNNL_ARG_WORKSPACE] = own(*c, s.bn.workspace_desc());
    c->steps.push_back({dnnl::batch_normalization_forward(s.bn), args});
    finish(l, t, dst, std::move(c));
  }

  // ---- Training: the backward, layer by layer in reverse, in the forward's layouts. ----

  size_t root(size_t l) const {
    while (alias_.count(l)) l = alias_.at(l);
    return l;
  }
  // A gradient arriving at layer `to`'s output (none for the network's input).
  void give(size_t to, const memory& g) {
    if (net_.layers[to].kind != LayerKind::input) grads_[root(to)].push_back(g);
  }
  // The gradient at layer l's output: its one contribution, or their sum in the first one's
  // layout (computed by call c); an empty memory when none arrives.
  memory grad(size_t l, FusedCall& c) {
    std::vector<memory>& parts = grads_[l];
    if (parts.size() <= 1) return parts.empty() ? memory() : parts[0];
    const memory::desc md = parts[0].get_desc();
    std::vector<memory::desc> mds(parts.size(), md);
    std::unordered_map<int, memory> args;
    for (size_t k = 0; k < parts.size(); ++k)
      args[DNNL_ARG_MULTIPLE_SRC + static_cast<int>(k)] = as(c, parts[k], md);
    memory sum = own(c, md);
    args[DNNL_ARG_DST] = sum;
    dnnl::sum::primitive_desc pd(md, std::vector<float>(parts.size(), 1.0f), mds, eng());
    c.steps.push_back({dnnl::sum(pd), args});
    return sum;
  }
  // A host tensor the backward writes (a weight gradient the SGD update reads).
  memory host_out(const memory::desc& md, const Tensor* t) {
    if (!t || static_cast<size_t>(t->bytes()) != md.get_size())
      throw RuntimeError("oneDNN fused training: a weight gradient has no host tensor of " +
                         std::to_string(md.get_size()) + " bytes");
    return memory(md, eng(), data(t));
  }
  void backward() {
    const size_t loss = net_.layers.size() - 1;
    const size_t in = net_.layers[loss].inputs[0];
    if (consumers_[in].size() != 1 || ex_.st[in].contrib.size() != 1)
      refuse(net_.layers[in], "a loss input with other consumers");
    give(in,
         memory(plain(dims_of(net_.mb, net_.layers[in].out)), eng(), data(ex_.st[in].contrib[0])));
    for (size_t l = loss; l-- > 0;) {
      const Layer& L = net_.layers[l];
      if (done_.count(l) || L.kind == LayerKind::input) continue;
      auto c = start_call(L.name, "bwd");
      const memory g = grad(l, *c);
      if (!g) continue;
      switch (L.kind) {
        case LayerKind::conv:
          conv_bwd(l, g, std::move(c));
          break;
        case LayerKind::fc:
          fc_bwd(l, g, std::move(c));
          break;
        case LayerKind::pool:
          pool_bwd(l, g, std::move(c));
          break;
        case LayerKind::bnorm:
          bnorm_bwd(l, g, std::move(c));
          break;
        case LayerKind::act:
          relu_bwd(l, g, std::move(c));
          break;
        case LayerKind::add:  // the gradient passes to both operands unchanged
          give(L.inputs[0], g);
          give(L.inputs[1], g);
          if (!c->steps.empty()) bwd_calls_.push_back(std::move(c));  // its sum
          break;
        case LayerKind::concat:
          concat_bwd(l, g, std::move(c));
          break;
        case LayerKind::lrn:
          lrn_bwd(l, g, std::move(c));
          break;
        default:
          refuse(L, "layer kind " + std::string(layer_kind_str(L.kind)));
      }
    }
  }
  bool wants_dx(const Layer& L) const { return net_.layers[L.inputs[0]].kind != LayerKind::input; }
  void push_bwd(std::unique_ptr<FusedCall> c, const std::string& phase) {
    c->info.phase = phase;
    bwd_calls_.push_back(std::move(c));
  }
  // The weight gradient into its host tensor: written there directly when oneDNN's layout is
  // the canonical one, else through a reorder after the primitive.
  memory diff_weights(FusedCall& c, const memory::desc& want, const memory::desc& user_md,
                      const Tensor* dw, memory* user) {
    *user = host_out(user_md, dw);
    return want == user_md ? *user : own(c, want);
  }

  void conv_bwd(size_t l, const memory& g, std::unique_ptr<FusedCall> c) {
    const Layer& L = net_.layers[l];
    const ConvDesc& d = L.conv;
    const ConvGeometry geo(d);
    Saved& s = saved_[l];
    const auto& st = ex_.st[l];
    dnnl::convolution_backward_weights::primitive_desc wpd(
        dnnl::convolution_backward_weights::desc(
            dnnl::algorithm::convolution_auto, s.conv.src_desc(), any(conv_wei_dims(d)),
            L.bias ? vec(d.oc) : memory::desc(), s.conv.dst_desc(), geo.strides, geo.dil, geo.pad_l,
            geo.pad_r),
        eng(), s.conv);
    const memory gw = as(*c, g, wpd.diff_dst_desc());
    memory dw_user;
    memory dw = diff_weights(*c, wpd.diff_weights_desc(), conv_wei_user(d), st.dw, &dw_user);
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, s.src}, {DNNL_ARG_DIFF_DST, gw}, {DNNL_ARG_DIFF_WEIGHTS, dw}};
    if (L.bias) args[DNNL_ARG_DIFF_BIAS] = host_out(vec(d.oc), st.db);
    c->steps.push_back({dnnl::convolution_backward_weights(wpd), args});
    if (dw != dw_user) add_reorder(*c, dw, dw_user, true);
    push_bwd(std::move(c), "bwd_w");
    if (!wants_dx(L)) return;
    auto cd = start_call(L.name, "bwd_d");
    dnnl::convolution_backward_data::primitive_desc dpd(
        dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_auto, s.conv.src_desc(),
                                              any(conv_wei_dims(d)), s.conv.dst_desc(), geo.strides,
                                              geo.dil, geo.pad_l, geo.pad_r),
        eng(), s.conv);
    const memory gd = gw.get_desc() == dpd.diff_dst_desc() ? gw : as(*cd, g, dpd.diff_dst_desc());
    const memory wei = as(*cd, s.wei, dpd.weights_desc(), true);
    memory dx = own(*cd, dpd.diff_src_desc());
    cd->steps.push_back(
        {dnnl::convolution_backward_data(dpd),
         {{DNNL_ARG_DIFF_DST, gd}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DIFF_SRC, dx}}});
    give(L.inputs[0], dx);
    push_bwd(std::move(cd), "bwd_d");
  }

  // dB = x^T dy (into the host gradient the SGD update reads), db = dy summed over the batch,
  // dx = dy B^T (viewed back as the input's NCHW shape).
  void fc_bwd(size_t l, const memory& g, std::unique_ptr<FusedCall> c) {
    const Layer& L = net_.layers[l];
    Saved& s = saved_[l];
    const auto& st = ex_.st[l];
    const int64_t in = L.in.size(), out = L.fc_out, mb = net_.mb;
    const memory gd = as(*c, g, memory::desc({mb, out}, dt::f32, tag::ab));
    const memory xt(memory::desc({in, mb}, dt::f32, tag::ba), eng(), s.src.get_data_handle());
    const memory dw = host_out(memory::desc({in, out}, dt::f32, tag::ab), st.dw);
    c->steps.push_back(
        {dnnl::matmul(dnnl::matmul::primitive_desc(
             dnnl::matmul::desc(xt.get_desc(), gd.get_desc(), dw.get_desc()), eng())),
         {{DNNL_ARG_SRC, xt}, {DNNL_ARG_WEIGHTS, gd}, {DNNL_ARG_DST, dw}}});
    if (L.bias) {
      const memory db = host_out(memory::desc({1, out}, dt::f32, tag::ab), st.db);
      dnnl::reduction::primitive_desc rpd(
          dnnl::reduction::desc(dnnl::algorithm::reduction_sum, gd.get_desc(), db.get_desc(), 0, 0),
          eng());
      c->steps.push_back({dnnl::reduction(rpd), {{DNNL_ARG_SRC, gd}, {DNNL_ARG_DST, db}}});
    }
    push_bwd(std::move(c), "bwd_w");
    if (!wants_dx(L)) return;
    auto cd = start_call(L.name, "bwd_d");
    const memory gd2 = gd.get_desc() == g.get_desc() ? g : as(*cd, g, gd.get_desc());
    const memory bt(memory::desc({out, in}, dt::f32, tag::ba), eng(), s.wei.get_data_handle());
    const memory dx = own(*cd, memory::desc({mb, in}, dt::f32, tag::ab));
    cd->steps.push_back(
        {dnnl::matmul(dnnl::matmul::primitive_desc(
             dnnl::matmul::desc(gd2.get_desc(), bt.get_desc(), dx.get_desc()), eng())),
         {{DNNL_ARG_SRC, gd2}, {DNNL_ARG_WEIGHTS, bt}, {DNNL_ARG_DST, dx}}});
    // In the input value's own shape (a pool's 4-d output, 1x1 or not), in NCHW.
    give(L.inputs[0],
         memory(plain(value_of(L.inputs[0]).get_desc().dims()), eng(), dx.get_data_handle()));
    push_bwd(std::move(cd), "bwd_d");
  }

  void pool_bwd(size_t l, const memory& g, std::unique_ptr<FusedCall> c) {
    const Layer& L = net_.layers[l];
    if (!wants_dx(L)) return;
    const PoolDesc& d = L.pool;
    Saved& s = saved_[l];
    dnnl::pooling_backward::primitive_desc pd(
        dnnl::pooling_backward::desc(pool_alg(d), s.src.get_desc(), s.pool.dst_desc(), {d.sh, d.sw},
                                     {d.kh, d.kw}, {d.ph, d.pw}, {d.pad_b(), d.pad_r()}),
        eng(), s.pool);
    memory dx = own(*c, pd.diff_src_desc());
    std::unordered_map<int, memory> args{{DNNL_ARG_DIFF_DST, as(*c, g, pd.diff_dst_desc())},
                                         {DNNL_ARG_DIFF_SRC, dx}};
    if (s.ws) args[DNNL_ARG_WORKSPACE] = s.ws;
    c->steps.push_back({dnnl::pooling_backward(pd), args});
    give(L.inputs[0], dx);
    push_bwd(std::move(c), "bwd");
  }

  void bnorm_bwd(size_t l, const memory& g, std::unique_ptr<FusedCall> c) {
    const Layer& L = net_.layers[l];
    const BnormDesc& d = L.bnorm;
    Saved& s = saved_[l];
    const auto& st = ex_.st[l];
    dnnl::batch_normalization_backward::primitive_desc pd(
        dnnl::batch_normalization_backward::desc(dnnl::prop_kind::backward, s.src.get_desc(),
                                                 s.src.get_desc(), static_cast<float>(d.eps),
                                                 s.bn_flags),
        eng(), s.bn);
    memory dx = own(*c, pd.diff_src_desc());
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, s.src},
        {DNNL_ARG_MEAN, s.mean},
        {DNNL_ARG_VARIANCE, s.var},
        {DNNL_ARG_DIFF_DST, as(*c, g, pd.diff_dst_desc())},
        {DNNL_ARG_SCALE, memory(vec(d.ic), eng(), data(&st.scale))},
        {DNNL_ARG_SHIFT, memory(vec(d.ic), eng(), data(&st.shift))},
        {DNNL_ARG_DIFF_SRC, dx},
        {DNNL_ARG_DIFF_SCALE, host_out(vec(d.ic), st.dscale)},
        {DNNL_ARG_DIFF_SHIFT, host_out(vec(d.ic), st.dshift)}};
    if (s.ws) args[DNNL_ARG_WORKSPACE] = s.ws;
    c->steps.push_back({dnnl::batch_normalization_backward(pd), args});
    if (wants_dx(L)) give(L.inputs[0], dx);
    push_bwd(std::move(c), s.ws ? "bwd+relu" : "bwd");
  }

  // Each branch's gradient: its channels of the concatenation's, a view of them copied out (in
  // the gradient's layout; from NCHW where a slice does not fall on the layout's blocks).
  void concat_bwd(size_t l, const memory& g, std::unique_ptr<FusedCall> c) {
    const Layer& L = net_.layers[l];
    memory whole = g;
    int64_t off = 0;
    for (int i : L.inputs) {
      const Shape& s = net_.layers[i].out;
      const memory::dims d{net_.mb, s.c, s.h, s.w}, at{0, off, 0, 0};
      off += s.c;
      if (net_.layers[i].kind == LayerKind::input) continue;
      memory::desc sub;
      try {
        sub = whole.get_desc().submemory_desc(d, at);
      } catch (const dnnl::error&) {  // not on the blocks: slice the canonical layout instead
        whole = as(*c, g, plain(whole.get_desc().dims()));
        sub = whole.get_desc().submemory_desc(d, at);
      }
      memory view(sub, eng(), whole.get_data_handle());
      const bool blocked =
          whole.get_desc() == memory::desc(whole.get_desc().dims(), dt::f32, tag::nChw16c);
      memory part =
          own(*c, memory::desc(d, dt::f32, blocked && s.c % 16 == 0 ? tag::nChw16c : tag::nchw));
      c->steps.push_back({dnnl::reorder(view, part), {{DNNL_ARG_FROM, view}, {DNNL_ARG_TO, part}}});
      give(i, part);
    }
    push_bwd(std::move(c), "bwd");
  }

  void lrn_bwd(size_t l, const memory& g, std::unique_ptr<FusedCall> c) {
    const Layer& L = net_.layers[l];
    if (!wants_dx(L)) return;
    const LrnDesc& d = L.lrn;
    Saved& s = saved_[l];
    dnnl::lrn_backward::primitive_desc pd(
        dnnl::lrn_backward::desc(dnnl::algorithm::lrn_across_channels, s.src.get_desc(),
                                 s.src.get_desc(), d.ls, static_cast<float>(d.alpha),
                                 static_cast<float>(d.beta), static_cast<float>(d.k)),
        eng(), s.lrn);
    memory dx = own(*c, pd.diff_src_desc());
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, s.src},
                                         {DNNL_ARG_DIFF_DST, as(*c, g, pd.diff_dst_desc())},
                                         {DNNL_ARG_DIFF_SRC, dx}};
    if (s.ws) args[DNNL_ARG_WORKSPACE] = s.ws;
    c->steps.push_back({dnnl::lrn_backward(pd), args});
    give(L.inputs[0], dx);
    push_bwd(std::move(c), "bwd");
  }

  void relu_bwd(size_t l, const memory& g, std::unique_ptr<FusedCall> c) {
    const Layer& L = net_.layers[l];
    if (!wants_dx(L)) return;
    Saved& s = saved_[l];
    dnnl::eltwise_backward::primitive_desc pd(
        dnnl::eltwise_backward::desc(dnnl::algorithm::eltwise_relu, s.src.get_desc(),
                                     s.src.get_desc(), 0.0f, 0.0f),
        eng(), s.relu);
    memory dx = own(*c, pd.diff_src_desc());
    c->steps.push_back({dnnl::eltwise_backward(pd),
                        {{DNNL_ARG_SRC, s.src},
                         {DNNL_ARG_DIFF_DST, as(*c, g, pd.diff_dst_desc())},
                         {DNNL_ARG_DIFF_SRC, dx}}});
    give(L.inputs[0], dx);
    push_bwd(std::move(c), "bwd");
  }

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

}  // namespace

bool Executor::Impl::fuse_onednn(std::string* why) {
  try {
    Fuser f(*this);
    std::vector<std::unique_ptr<Call>> fused = f.plan(why);
    if (fused.empty()) return false;
    // Every composed call but the loss's (training: and the SGD updates, which read the host
    // gradients the fused backward writes) is replaced. Those whose outputs the fused plan
    // writes or reads stay alive: the loss layer's input, and in training the weight gradients;
    // the others (every intermediate activation and workspace) are freed. A plan made again
    // (new weights) replaces the previous fused calls likewise.
    std::unordered_set<const Tensor*> used;
    const size_t out_layer = net.has_loss() ? net.layers.back().inputs[0] : net.layers.size() - 1;
    used.insert(st[out_layer].act);
    if (opt.train)
      for (const State& s : st)
        for (const Tensor* t : {s.dw, s.db, s.dscale, s.dshift, s.dr}) used.insert(t);
    std::vector<std::unique_ptr<Call>> loss, sgd;
    const std::string loss_layer = net.has_loss() ? net.layers.back().name : "";
    for (auto& c : calls) {
      const std::vector<const Tensor*> outs = c->outputs();
      if (c->info.layer == loss_layer)
        loss.push_back(std::move(c));
      else if (opt.train && c->info.phase == "sgd")
        sgd.push_back(std::move(c));
      else if (std::any_of(outs.begin(), outs.end(),
                           [&](const Tensor* t) { return used.count(t); }))
        retired.push_back(std::move(c));
    }
    calls.clear();  // the rest are freed here
    calls = std::move(fused);
    for (auto& c : loss) calls.push_back(std::move(c));
    for (auto& c : f.take_backward()) calls.push_back(std::move(c));
    for (auto& c : sgd) calls.push_back(std::move(c));
    infos.clear();
    for (auto& c : calls) infos.push_back(c->info);
    reorders = f.reorders();
    weight_reorders = f.weight_reorders();
    return true;
  } catch (const dnnl::error& e) {
    if (e.status == dnnl_unimplemented) {
      *why = std::string("oneDNN has no fused form: ") + e.what();
      return false;
    }
    onednn::rethrow(
        e, std::string("oneDNN fused ") + (opt.train ? "training" : "inference") + " plan");
  }
}

}  // namespace pb
