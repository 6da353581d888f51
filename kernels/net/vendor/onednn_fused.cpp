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
#include "kernels/net/vendor/onednn_fused.h"

namespace pb {

namespace onednn_fused {

std::vector<std::unique_ptr<Call>> Fuser::plan(std::string* why) {
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

void Fuser::forward() {
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

memory Fuser::weights_into(FusedCall& c, const memory::desc& md, const float* data,
                           const memory::desc& want) {
  memory user(md, eng(), const_cast<float*>(data));
  memory m = own(c, want);
  dnnl::reorder(user, m).execute(onednn::stream(), user, m);
  onednn::stream().wait();
  return m;
}

Fuser::Tail Fuser::tail(size_t l, bool allow_bn) {
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

void Fuser::fold(const Tail& t, int64_t oc, int64_t per_oc, const Tensor& w, const Tensor* b,
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

void Fuser::finish(size_t l, const Tail& t, memory dst, std::unique_ptr<FusedCall> c) {
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

void Fuser::seed_residual(FusedCall& c, const Tail& t, const memory& dst) {
  if (t.add < 0) return;
  c.steps.push_back(
      {dnnl::reorder(t.residual, dst), {{DNNL_ARG_FROM, t.residual}, {DNNL_ARG_TO, dst}}});
  if (t.residual.get_desc() != dst.get_desc()) ++reorders_;
}

void Fuser::conv(size_t l) {
  const Layer& L = net_.layers[l];
  const ConvDesc& d = L.conv;
  const Tail t = tail(l, true);
  auto c = start_call(L.name, "fwd");
  dnnl::primitive_attr attr;
  attr.set_post_ops(post_ops(t));
  const auto pd = no_ref([&](bool own) {
    return dnnl::convolution_forward::primitive_desc(
        conv_fwd_desc(d, dnnl::prop_kind::forward_inference, true, own), attr, eng());
  });
  std::vector<float> wf, bf;
  fold(t, d.oc, d.icg() * d.kh * d.kw, ex_.st[l].w, L.bias ? &ex_.st[l].b : nullptr, &wf, &bf);
  c->keep.push_back(std::move(wf));
  c->keep.push_back(std::move(bf));
  memory wei = weights_into(*c, conv_wei_user(d), c->keep[0].data(), pd.weights_desc());
  memory bias(vec(d.oc), eng(), c->keep[1].data());
  memory src = as(*c, value_of(L.inputs[0]), pd.src_desc());
  memory dst = own(*c, pd.dst_desc());
  seed_residual(*c, t, dst);
  c->steps.push_back(
      {dnnl::convolution_forward(pd),
       {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_BIAS, bias}, {DNNL_ARG_DST, dst}}});
  finish(l, t, dst, std::move(c));
}

void Fuser::fc(size_t l) {
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
  c->steps.push_back(
      {dnnl::inner_product_forward(pd),
       {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_BIAS, bias}, {DNNL_ARG_DST, dst}}});
  finish(l, t, dst, std::move(c));
}

void Fuser::pool(size_t l) {
  const Layer& L = net_.layers[l];
  const PoolDesc& d = L.pool;
  auto c = start_call(L.name, "fwd");
  const memory& x = value_of(L.inputs[0]);
  // The source as it is (blocked or not); oneDNN picks the destination's layout to match.
  dnnl::pooling_forward::primitive_desc pd(
      dnnl::pooling_forward::desc(prop(), pool_alg(d), x.get_desc(), any({d.mb, d.ic, d.oh, d.ow}),
                                  {d.sh, d.sw}, {d.kh, d.kw}, {d.ph, d.pw}, {d.pad_b(), d.pad_r()}),
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

void Fuser::bnorm(size_t l) {
  const Layer& L = net_.layers[l];
  const BnormDesc& d = L.bnorm;
  const int r = relu_after(l);
  auto c = start_call(L.name, "fwd");
  const memory& x = value_of(L.inputs[0]);
  auto flags = dnnl::normalization_flags::use_global_stats | dnnl::normalization_flags::use_scale |
               dnnl::normalization_flags::use_shift;
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

void Fuser::relu(size_t l) {
  const Layer& L = net_.layers[l];
  auto c = start_call(L.name, "fwd");
  const memory& x = value_of(L.inputs[0]);
  dnnl::eltwise_forward::primitive_desc pd(
      dnnl::eltwise_forward::desc(prop(), dnnl::algorithm::eltwise_relu, x.get_desc(), 0.0f, 0.0f),
      eng());
  saved_[l].relu = pd, saved_[l].src = x;
  memory dst = own(*c, pd.dst_desc());
  c->steps.push_back({dnnl::eltwise_forward(pd), {{DNNL_ARG_SRC, x}, {DNNL_ARG_DST, dst}}});
  finish(l, Tail(), dst, std::move(c));
}

void Fuser::add(size_t l) {
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

void Fuser::lrn(size_t l) {
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

void Fuser::concat(size_t l) {
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
  const tag block = onednn::blocked_act_tag(L.out.c);
  const memory::desc want =
      block != tag::undef ? memory::desc(dst_d, dt::f32, block) : plain(dst_d);
  dnnl::concat::primitive_desc pd(want, 1, mds, eng());
  memory dst = own(*c, pd.dst_desc());
  args[DNNL_ARG_DST] = dst;
  c->steps.push_back({dnnl::concat(pd), args});
  finish(l, Tail(), dst, std::move(c));
}

}  // namespace onednn_fused

using onednn_fused::Fuser;

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
