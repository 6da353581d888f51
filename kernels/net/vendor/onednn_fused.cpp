// Backend onednn, inference: the network as a framework would hand it to oneDNN. Activations stay
// in the layouts oneDNN's primitives prefer (blocked) from one oneDNN layer to the next, with a
// reorder only where the next primitive wants another layout; convolution + bias + folded
// inference batch-norm + ReLU + residual sum run as one primitive with post-ops, fully connected
// + bias + ReLU as one inner product. Weights are folded and reordered once, at plan time.
// Replaces the composed calls of every layer but the loss (see Executor::Impl::fuse_onednn).
#include <oneapi/dnnl/dnnl.hpp>

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
  Fuser(Executor::Impl& ex) : ex_(ex), net_(ex.net) {
    consumers_.assign(net_.layers.size(), {});
    for (size_t l = 0; l < net_.layers.size(); ++l)
      for (int i : net_.layers[l].inputs) consumers_[i].push_back(static_cast<int>(l));
    value_.assign(net_.layers.size(), memory());
  }

  // The fused calls, or empty with *why set when a layer has no fused form here.
  std::vector<std::unique_ptr<Call>> plan(std::string* why) {
    for (size_t l = 0; l < net_.layers.size(); ++l) {
      const Layer& L = net_.layers[l];
      if (done_.count(l) || L.kind == LayerKind::loss) continue;
      switch (L.kind) {
        case LayerKind::input:
          value_[l] = memory(plain(dims_of(net_.mb, L.out)), eng(), host(l));
          break;
        case LayerKind::conv:
          conv(l);
          break;
        case LayerKind::fc:
          fc(l);
          break;
        case LayerKind::pool:
          pool(l);
          break;
        case LayerKind::bnorm:
          bnorm(l);
          break;
        case LayerKind::act:
          if (L.act.func != ActFunc::relu) return fail(why, L, "activation other than ReLU");
          relu(l);
          break;
        case LayerKind::add:
          add(l);
          break;
        default:
          return fail(why, L, "layer kind " + std::string(layer_kind_str(L.kind)));
      }
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
    return std::move(calls_);
  }
  int reorders() const { return reorders_; }

 private:
  static dnnl::engine& eng() { return onednn::engine(); }
  float* host(size_t l) { return const_cast<float*>(ex_.st[l].act->data()); }
  std::vector<std::unique_ptr<Call>> fail(std::string* why, const Layer& L, const std::string& w) {
    *why = L.name + ": " + w + " has no fused oneDNN form";
    return {};
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
  void add_reorder(FusedCall& c, const memory& from, const memory& to) {
    c.steps.push_back({dnnl::reorder(from, to), {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}}});
    ++reorders_;
  }
  // `v` in layout `want`: v itself, or a reorder into a new memory added to the call.
  memory as(FusedCall& c, const memory& v, const memory::desc& want) {
    if (v.get_desc() == want) return v;
    memory m(want, eng());
    c.held += want.get_size();
    add_reorder(c, v, m);
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
      const double g = (d.scale ? s.scale[o] : 1.0) / std::sqrt(double(s.rvar[o]) + d.eps);
      for (int64_t k = 0; k < per_oc; ++k) (*wf)[o * per_oc + k] *= static_cast<float>(g);
      (*bf)[o] = static_cast<float>(((*bf)[o] - s.rmean[o]) * g + (d.shift ? s.shift[o] : 0.0));
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
    auto any = [](const memory::dims& x) { return memory::desc(x, dt::f32, tag::any); };
    // Activations in oneDNN's 16-channel blocks where the channels allow, else its choice: for
    // forward_inference `any` picks channels-last (brgconv), measured 2.0x slower on VGG-16 and
    // 1.23x on ResNet-50 at batch 16 on this machine (Zen 5) than the blocked layout.
    auto act = [&](const memory::dims& x) {
      return x[1] % 16 == 0 ? memory::desc(x, dt::f32, tag::nChw16c) : any(x);
    };
    const memory::dims src_d{d.mb, d.ic, d.ih, d.iw}, dst_d{d.mb, d.oc, d.oh, d.ow};
    memory::dims wei_d = d.g > 1 ? memory::dims{d.g, d.ocg(), d.icg(), d.kh, d.kw}
                                 : memory::dims{d.oc, d.ic, d.kh, d.kw};
    dnnl::primitive_attr attr;
    attr.set_post_ops(post_ops(t));
    const memory::dims pad_r{std::max<int64_t>(0, d.pad_b()), std::max<int64_t>(0, d.pad_r())};
    dnnl::convolution_forward::primitive_desc pd(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                        dnnl::algorithm::convolution_auto, act(src_d), any(wei_d),
                                        memory::desc({d.oc}, dt::f32, tag::x), act(dst_d),
                                        {d.sh, d.sw}, {d.dh, d.dw}, {d.ph, d.pw}, pad_r),
        attr, eng());
    std::vector<float> wf, bf;
    fold(t, d.oc, d.icg() * d.kh * d.kw, ex_.st[l].w, L.bias ? &ex_.st[l].b : nullptr, &wf, &bf);
    c->keep.push_back(std::move(wf));
    c->keep.push_back(std::move(bf));
    const memory::desc wei_user(wei_d, dt::f32, d.g > 1 ? tag::goihw : tag::oihw);
    memory wei = weights_into(*c, wei_user, c->keep[0].data(), pd.weights_desc());
    memory bias(memory::desc({d.oc}, dt::f32, tag::x), eng(), c->keep[1].data());
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
    memory::dims wei_d = src_d;
    wei_d[0] = L.fc_out;
    // Ours: column-major out x in (in = c*h*w in NCHW order): element (o, i) at i * out + o.
    memory::dims strides(wei_d.size());
    memory::dim stride = L.fc_out;
    for (size_t k = wei_d.size(); k-- > 1;) strides[k] = stride, stride *= wei_d[k];
    strides[0] = 1;
    const memory::desc wei_user(wei_d, dt::f32, strides);
    dnnl::primitive_attr attr;
    attr.set_post_ops(post_ops(t));
    dnnl::inner_product_forward::primitive_desc pd(
        dnnl::inner_product_forward::desc(
            dnnl::prop_kind::forward_inference, memory::desc(src_d, dt::f32, tag::any),
            memory::desc(wei_d, dt::f32, tag::any), memory::desc({L.fc_out}, dt::f32, tag::x),
            memory::desc({net_.mb, L.fc_out}, dt::f32, tag::any)),
        attr, eng());
    std::vector<float> bf(L.fc_out, 0.0f);
    if (L.bias) std::memcpy(bf.data(), ex_.st[l].b.data(), bf.size() * 4);
    c->keep.push_back(std::move(bf));
    memory wei = weights_into(*c, wei_user, ex_.st[l].w.data(), pd.weights_desc());
    memory bias(memory::desc({L.fc_out}, dt::f32, tag::x), eng(), c->keep[0].data());
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
    const auto alg = d.alg == PoolAlg::max     ? dnnl::algorithm::pooling_max
                     : d.alg == PoolAlg::avg_p ? dnnl::algorithm::pooling_avg_include_padding
                                               : dnnl::algorithm::pooling_avg_exclude_padding;
    // The source as it is (blocked or not); oneDNN picks the destination's layout to match.
    dnnl::pooling_forward::primitive_desc pd(
        dnnl::pooling_forward::desc(dnnl::prop_kind::forward_inference, alg, x.get_desc(),
                                    memory::desc({d.mb, d.ic, d.oh, d.ow}, dt::f32, tag::any),
                                    {d.sh, d.sw}, {d.kh, d.kw}, {d.ph, d.pw},
                                    {d.pad_b(), d.pad_r()}),
        eng());
    memory dst = own(*c, pd.dst_desc());
    c->steps.push_back({dnnl::pooling_forward(pd), {{DNNL_ARG_SRC, x}, {DNNL_ARG_DST, dst}}});
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
        dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference,
                                    dnnl::algorithm::eltwise_relu, x.get_desc(), 0.0f, 0.0f),
        eng());
    memory dst = own(*c, pd.dst_desc());
    c->steps.push_back({dnnl::eltwise_forward(pd), {{DNNL_ARG_SRC, x}, {DNNL_ARG_DST, dst}}});
    finish(l, Tail(), dst, std::move(c));
  }

  // A residual add not fused into a producer: a binary add, ReLU fused when it follows.
  void add(size_t l) {
    const Layer& L = net_.layers[l];
    Tail t;
    t.relu = relu_after(l);
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

  static constexpr const char* kImpl = "onednn/fused";
  Executor::Impl& ex_;
  const Network& net_;
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
    // Every composed call but the loss's is replaced; they stay alive (their outputs hold the
    // loss layer's input and the host views of intermediate values).
    std::vector<std::unique_ptr<Call>> loss;
    const std::string loss_layer = net.has_loss() ? net.layers.back().name : "";
    for (auto& c : calls) (c->info.layer == loss_layer ? loss : retired).push_back(std::move(c));
    calls = std::move(fused);
    for (auto& c : loss) calls.push_back(std::move(c));
    infos.clear();
    for (auto& c : calls) infos.push_back(c->info);
    reorders = f.reorders();
    return true;
  } catch (const dnnl::error& e) {
    if (e.status == dnnl_unimplemented) {
      *why = std::string("oneDNN has no fused form: ") + e.what();
      return false;
    }
    onednn::rethrow(e, "oneDNN fused inference plan");
  }
}

}  // namespace pb
