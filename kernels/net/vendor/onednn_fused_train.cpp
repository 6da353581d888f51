// Backend onednn, training: the fused plan's forward_training primitives (which keep what their
// backward needs) and its backward, layer by layer in reverse, in the forward's layouts. See
// onednn_fused.cpp.
#include "kernels/net/vendor/onednn_fused.h"

namespace pb::onednn_fused {

memory Fuser::weights_each_step(FusedCall& c, const memory::desc& user_md, const Tensor& w,
                                const memory::desc& want) {
  return as(c, memory(user_md, eng(), data(&w)), want, true);
}

void Fuser::conv_train(size_t l) {
  const Layer& L = net_.layers[l];
  auto c = start_call(L.name, "fwd");
  Saved& s = saved_[l];
  s.conv = no_ref([&](bool own) {
    return dnnl::convolution_forward::primitive_desc(
        conv_fwd_desc(L.conv, dnnl::prop_kind::forward_training, L.bias, own), eng());
  });
  s.wei = weights_each_step(*c, conv_wei_user(L.conv), ex_.st[l].w, s.conv.weights_desc());
  s.src = as(*c, value_of(L.inputs[0]), s.conv.src_desc());
  memory dst = own(*c, s.conv.dst_desc());
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, s.src}, {DNNL_ARG_WEIGHTS, s.wei}, {DNNL_ARG_DST, dst}};
  if (L.bias) args[DNNL_ARG_BIAS] = memory(vec(L.conv.oc), eng(), data(&ex_.st[l].b));
  c->steps.push_back({dnnl::convolution_forward(s.conv), args});
  finish(l, Tail(), dst, std::move(c));
}

void Fuser::fc_train(size_t l) {
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

void Fuser::bnorm_train(size_t l) {
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
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, s.src},
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

void Fuser::give(size_t to, const memory& g) {
  if (net_.layers[to].kind != LayerKind::input) grads_[root(to)].push_back(g);
}

memory Fuser::grad(size_t l, FusedCall& c) {
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

memory Fuser::host_out(const memory::desc& md, const Tensor* t) {
  if (!t || static_cast<size_t>(t->bytes()) != md.get_size())
    throw RuntimeError("oneDNN fused training: a weight gradient has no host tensor of " +
                       std::to_string(md.get_size()) + " bytes");
  return memory(md, eng(), data(t));
}

void Fuser::backward() {
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

memory Fuser::diff_weights(FusedCall& c, const memory::desc& want, const memory::desc& user_md,
                           const Tensor* dw, memory* user) {
  *user = host_out(user_md, dw);
  return want == user_md ? *user : own(c, want);
}

void Fuser::conv_bwd(size_t l, const memory& g, std::unique_ptr<FusedCall> c) {
  const Layer& L = net_.layers[l];
  const ConvDesc& d = L.conv;
  const ConvGeometry geo(d);
  Saved& s = saved_[l];
  const auto& st = ex_.st[l];
  // The forward's layouts, or oneDNN's own where it has only ref:any for those (no_ref).
  const auto wpd = no_ref([&](bool own) {
    return dnnl::convolution_backward_weights::primitive_desc(
        dnnl::convolution_backward_weights::desc(
            dnnl::algorithm::convolution_auto, own ? any(geo.src) : s.conv.src_desc(),
            any(conv_wei_dims(d)), L.bias ? vec(d.oc) : memory::desc(),
            own ? any(geo.dst) : s.conv.dst_desc(), geo.strides, geo.dil, geo.pad_l, geo.pad_r),
        eng(), s.conv);
  });
  const memory gw = as(*c, g, wpd.diff_dst_desc());
  const memory src = as(*c, s.src, wpd.src_desc());
  memory dw_user;
  memory dw = diff_weights(*c, wpd.diff_weights_desc(), conv_wei_user(d), st.dw, &dw_user);
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, src}, {DNNL_ARG_DIFF_DST, gw}, {DNNL_ARG_DIFF_WEIGHTS, dw}};
  if (L.bias) args[DNNL_ARG_DIFF_BIAS] = host_out(vec(d.oc), st.db);
  c->steps.push_back({dnnl::convolution_backward_weights(wpd), args});
  if (dw != dw_user) add_reorder(*c, dw, dw_user, true);
  push_bwd(std::move(c), "bwd_w");
  if (!wants_dx(L)) return;
  auto cd = start_call(L.name, "bwd_d");
  const auto dpd = no_ref([&](bool own) {
    return dnnl::convolution_backward_data::primitive_desc(
        dnnl::convolution_backward_data::desc(
            dnnl::algorithm::convolution_auto, own ? any(geo.src) : s.conv.src_desc(),
            any(conv_wei_dims(d)), own ? any(geo.dst) : s.conv.dst_desc(), geo.strides, geo.dil,
            geo.pad_l, geo.pad_r),
        eng(), s.conv);
  });
  const memory gd = gw.get_desc() == dpd.diff_dst_desc() ? gw : as(*cd, g, dpd.diff_dst_desc());
  const memory wei = as(*cd, s.wei, dpd.weights_desc(), true);
  memory dx = own(*cd, dpd.diff_src_desc());
  cd->steps.push_back(
      {dnnl::convolution_backward_data(dpd),
       {{DNNL_ARG_DIFF_DST, gd}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DIFF_SRC, dx}}});
  give(L.inputs[0], dx);
  push_bwd(std::move(cd), "bwd_d");
}

void Fuser::fc_bwd(size_t l, const memory& g, std::unique_ptr<FusedCall> c) {
  const Layer& L = net_.layers[l];
  Saved& s = saved_[l];
  const auto& st = ex_.st[l];
  const int64_t in = L.in.size(), out = L.fc_out, mb = net_.mb;
  const memory gd = as(*c, g, memory::desc({mb, out}, dt::f32, tag::ab));
  const memory xt(memory::desc({in, mb}, dt::f32, tag::ba), eng(), s.src.get_data_handle());
  const memory dw = host_out(memory::desc({in, out}, dt::f32, tag::ab), st.dw);
  c->steps.push_back({dnnl::matmul(dnnl::matmul::primitive_desc(
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

void Fuser::pool_bwd(size_t l, const memory& g, std::unique_ptr<FusedCall> c) {
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

void Fuser::bnorm_bwd(size_t l, const memory& g, std::unique_ptr<FusedCall> c) {
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
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, s.src},
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

void Fuser::concat_bwd(size_t l, const memory& g, std::unique_ptr<FusedCall> c) {
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
    const tag whole_block = onednn::blocked_act_tag(whole.get_desc().dims()[1]),
              part_block = onednn::blocked_act_tag(s.c);
    const bool blocked =
        whole_block != tag::undef &&
        whole.get_desc() == memory::desc(whole.get_desc().dims(), dt::f32, whole_block);
    memory part = own(
        *c, memory::desc(d, dt::f32, blocked && part_block != tag::undef ? part_block : tag::nchw));
    c->steps.push_back({dnnl::reorder(view, part), {{DNNL_ARG_FROM, view}, {DNNL_ARG_TO, part}}});
    give(i, part);
  }
  push_bwd(std::move(c), "bwd");
}

void Fuser::lrn_bwd(size_t l, const memory& g, std::unique_ptr<FusedCall> c) {
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

void Fuser::relu_bwd(size_t l, const memory& g, std::unique_ptr<FusedCall> c) {
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

}  // namespace pb::onednn_fused
