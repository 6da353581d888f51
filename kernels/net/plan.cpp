// The network executor's plan (see executor_impl.h): the primitive calls, the executor's own
// steps and the buffers of each layer kind, forward, backward and SGD update.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "kernels/act/traits.h"
#include "kernels/bnorm/traits.h"
#include "kernels/conv/traits.h"
#include "kernels/core/error.h"
#include "kernels/core/fill.h"
#include "kernels/core/io.h"
#include "kernels/gemm/traits.h"
#include "kernels/lrn/traits.h"
#include "kernels/net/executor_impl.h"
#include "kernels/net/native_ops.h"
#include "kernels/pool/traits.h"
#include "kernels/rnn/traits.h"

namespace pb {

namespace {

// He-uniform weights: U(-sqrt(6/fan_in), +sqrt(6/fan_in)).
void init_weights(Tensor& w, int64_t fan_in, uint64_t seed) {
  const float a = std::sqrt(6.0f / static_cast<float>(std::max<int64_t>(1, fan_in)));
  fill_uniform(w, seed, -a, a);
}

GemmDesc gemm_desc(int64_t m, int64_t n, int64_t k, const char* trans) {
  return GemmDesc::parse("m" + std::to_string(m) + "n" + std::to_string(n) + "k" +
                         std::to_string(k) + "_" + trans + "_beta0");
}

}  // namespace

void Executor::Impl::plan_forward(size_t l) {
  Layer& L = net.layers[l];
  State& s = st[l];
  const uint64_t seed = mix_seed(opt.seed, l);
  // The batch and dropout's masks: per data-parallel rank when data_seed is given.
  const uint64_t data = mix_seed(opt.data_seed ? opt.data_seed : opt.seed, l);
  const Tensor* x = L.inputs.empty() ? nullptr : st[L.inputs[0]].act;
  const int64_t mb = net.mb;
  switch (L.kind) {
    case LayerKind::input: {
      s.own = Tensor({mb, L.out.c, L.out.h, L.out.w});
      fill_uniform(s.own, data, -1, 1);
      s.act = &s.own;
      break;
    }
    case LayerKind::conv: {
      s.w = Tensor(L.conv.wei_dims());
      init_weights(s.w, L.conv.icg() * L.conv.kh * L.conv.kw, seed);
      s.act = add_typed<ConvTraits>(L.name, "fwd", L.conv, Dir::fwd, {x, &s.w}, l)[0];
      if (L.bias) {
        s.b = Tensor({L.conv.oc});
        fill_uniform(s.b, mix_seed(seed, 1), -0.1f, 0.1f);
        Tensor* y = const_cast<Tensor*>(s.act);  // in place on the call's output
        add_native(
            L.name, "bias", [y, &s, mb] { net::add_channel_bias(*y, s.b, mb); },
            [y = D(y), b = D(&s.b), mb, c = L.conv.oc, hw = L.conv.oh * L.conv.ow](
                net::DeviceOps& o) { o.add_channel_bias(y, b, mb, c, hw); });
      }
      break;
    }
    case LayerKind::pool:
      s.act = add<PoolTraits>(L.name, "fwd", L.pool, Dir::fwd, {x})[0];
      break;
    case LayerKind::lrn:
      s.act = add<LrnTraits>(L.name, "fwd", L.lrn, Dir::fwd, {x})[0];
      break;
    case LayerKind::bnorm: {
      const int64_t c = L.bnorm.ic;
      s.scale = Tensor({c}), s.shift = Tensor({c}), s.rmean = Tensor({c}), s.rvar = Tensor({c});
      fill_uniform(s.scale, seed, 0.5f, 1.5f);
      fill_uniform(s.shift, mix_seed(seed, 1), -0.1f, 0.1f);
      s.rmean.fill(0.0f);
      s.rvar.fill(1.0f);
      BnormDesc d = L.bnorm;
      d.inference = !opt.train;
      const auto& c1 =
          add<BnormTraits>(L.name, "fwd", d, Dir::fwd, {x, &s.scale, &s.shift, &s.rmean, &s.rvar});
      if (!opt.train) calib.push_back({calls.size() - 1, l, d, x, &s.rmean, &s.rvar});
      s.act = c1[0];
      if (opt.train) s.mean = c1[1], s.var = c1[2];
      break;
    }
    case LayerKind::act:
      s.act = add<ActTraits>(L.name, "fwd", L.act, Dir::fwd, {x})[0];
      break;
    case LayerKind::fc: {
      const int64_t in = L.in.size(), out = L.fc_out;
      s.w = Tensor({in, out});  // column-major out x in
      init_weights(s.w, in, seed);
      s.zeros = Tensor({mb, out});
      s.zeros.fill(0.0f);
      s.act = add_typed<GemmTraits>(L.name, "fwd", gemm_desc(out, mb, in, "nn"), Dir::fwd,
                                    {&s.w, x, &s.zeros}, l)[0];
      if (L.bias) {
        s.b = Tensor({out});
        fill_uniform(s.b, mix_seed(seed, 1), -0.1f, 0.1f);
        Tensor* y = const_cast<Tensor*>(s.act);
        add_native(
            L.name, "bias", [y, &s, mb] { net::add_channel_bias(*y, s.b, mb); },
            [y = D(y), b = D(&s.b), mb, out](net::DeviceOps& o) {
              o.add_channel_bias(y, b, mb, out, 1);
            });
      }
      break;
    }
    case LayerKind::rnn: {
      // DeepBench's gate-major weights (rnn.h), U(-1/sqrt(h), 1/sqrt(h)) as PyTorch; zero state.
      const RnnDesc& d = L.rnn;
      const float a = 1.0f / std::sqrt(static_cast<float>(d.h));
      s.w = Tensor(rnn_dims(d, "W")), s.r = Tensor(rnn_dims(d, "R")),
      s.b = Tensor(rnn_dims(d, "b"));
      fill_uniform(s.w, seed, -a, a);
      fill_uniform(s.r, mix_seed(seed, 1), -a, a);
      fill_uniform(s.b, mix_seed(seed, 2), -a, a);
      s.h0 = Tensor(rnn_dims(d, "h0"));
      s.h0.fill(0.0f);
      if (d.has_c()) {
        s.c0 = Tensor(rnn_dims(d, "c0"));
        s.c0.fill(0.0f);
      }
      s.act = add<RnnTraits>(L.name, "fwd", d, Dir::fwd, rnn_inputs(s, x))[0];
      break;
    }
    case LayerKind::add: {
      s.own = Tensor({mb, L.out.c, L.out.h, L.out.w});
      const Tensor* a = x;
      const Tensor* b = st[L.inputs[1]].act;
      add_native(
          L.name, "fwd", [a, b, &s] { net::add(*a, *b, s.own); },
          [a = D(a), b = D(b), y = D(&s.own), n = s.own.size()](net::DeviceOps& o) {
            o.add(a, b, y, n);
          });
      s.act = &s.own;
      break;
    }
    case LayerKind::dropout: {
      if (!opt.train) {  // the identity: the next layer reads the input itself
        s.act = x;
        break;
      }
      s.own = Tensor({mb, L.out.c, L.out.h, L.out.w});
      s.drop_seed = mix_seed(data, 3);  // the backward draws the same mask from it
      const uint64_t dseed = s.drop_seed;
      const uint64_t* step = &steps_run;
      add_native(
          L.name, "fwd",
          [x, &s, p = L.drop_p, dseed, step] { net::dropout(*x, s.own, p, dseed, *step); },
          [dx = D(x), y = D(&s.own), n = s.own.size(), p = L.drop_p, dseed,
           step](net::DeviceOps& o) { o.dropout(dx, y, n, p, dseed, *step); });
      s.act = &s.own;
      break;
    }
    case LayerKind::concat: {
      // Each input's channels copied into their slice of the output (the producers write their
      // own outputs: implementations own them).
      s.own = Tensor({mb, L.out.c, L.out.h, L.out.w});
      const int64_t hw = L.out.h * L.out.w;
      std::vector<std::pair<const Tensor*, int64_t>> in;  // tensor, channels
      for (int i : L.inputs) in.push_back({st[i].act, net.layers[i].out.c});
      std::vector<void*> din;
      for (const auto& p : in) din.push_back(D(p.first));
      add_native(
          L.name, "fwd",
          [in, &s, mb, hw, c = L.out.c] {
            int64_t off = 0;
            for (const auto& [t, k] : in) {
              net::copy_channels(t->data(), k, 0, s.own.data(), c, off, mb, k, hw);
              off += k;
            }
          },
          [in, din, y = D(&s.own), mb, hw, c = L.out.c](net::DeviceOps& o) {
            int64_t off = 0;
            for (size_t j = 0; j < in.size(); ++j) {
              o.copy_channels(din[j], in[j].second, 0, y, c, off, mb, in[j].second, hw);
              off += in[j].second;
            }
          });
      s.act = &s.own;
      break;
    }
    case LayerKind::loss: {
      labels = Tensor({mb, 1, 1});
      fill_uniform(labels, mix_seed(data, 7), 0, static_cast<float>(L.act.ic));
      for (int64_t i = 0; i < labels.size(); ++i)
        labels[i] = std::min(std::floor(labels[i]), static_cast<float>(L.act.ic - 1));
      const auto& c = add<ActTraits>(L.name, "fwd", L.act, Dir::fwd, {x, &labels});
      s.act = c[0];
      s.loss = c[1];
      break;
    }
  }
}

// The gradient at layer l's output: its one contribution, or their sum (planned here).
const Tensor* Executor::Impl::grad_of(size_t l) {
  State& s = st[l];
  if (s.contrib.empty()) return nullptr;
  if (s.contrib.size() == 1) return s.contrib[0];
  const Layer& L = net.layers[l];
  s.own_grad = Tensor({net.mb, L.out.c, L.out.h, L.out.w});
  std::vector<const Tensor*> parts = s.contrib;
  std::vector<void*> dparts;
  for (const Tensor* t : parts) dparts.push_back(D(t));
  add_native(
      L.name, "grad_sum", [parts, &s] { net::sum(parts, s.own_grad); },
      [dparts, y = D(&s.own_grad), n = s.own_grad.size()](net::DeviceOps& o) {
        o.add(dparts[0], dparts[1], y, n);
        for (size_t k = 2; k < dparts.size(); ++k) o.add(y, dparts[k], y, n);
      });
  return &s.own_grad;
}

void Executor::Impl::plan_backward(size_t l) {
  Layer& L = net.layers[l];
  State& s = st[l];
  const int64_t mb = net.mb;
  if (L.kind == LayerKind::input) return;
  const Tensor* x = st[L.inputs[0]].act;
  // Whether the input wants a gradient (not the network's input).
  const bool need_dx = net.layers[L.inputs[0]].kind != LayerKind::input;
  auto give = [&](size_t to, const Tensor* g) { st[to].contrib.push_back(g); };
  if (L.kind == LayerKind::loss) {
    give(L.inputs[0], add<ActTraits>(L.name, "bwd", L.act, Dir::bwd, {x, &labels})[0]);
    return;
  }
  const Tensor* g = grad_of(l);
  if (!g) return;
  switch (L.kind) {
    case LayerKind::conv: {
      const auto& w = add_typed<ConvTraits>(L.name, "bwd_w", L.conv, Dir::bwd_w, {x, g}, l);
      s.dw = w[0];
      if (L.bias) s.db = w[1];
      if (need_dx)
        give(L.inputs[0],
             add_typed<ConvTraits>(L.name, "bwd_d", L.conv, Dir::bwd_d, {g, &s.w}, l)[0]);
      break;
    }
    case LayerKind::pool:
      if (need_dx) give(L.inputs[0], add<PoolTraits>(L.name, "bwd", L.pool, Dir::bwd, {x, g})[0]);
      break;
    case LayerKind::lrn:
      if (need_dx) give(L.inputs[0], add<LrnTraits>(L.name, "bwd", L.lrn, Dir::bwd, {x, g})[0]);
      break;
    case LayerKind::bnorm: {
      const auto& c = add<BnormTraits>(L.name, "bwd", L.bnorm, Dir::bwd,
                                       {x, g, &s.scale, &s.shift, s.mean, s.var});
      s.dscale = c[1], s.dshift = c[2];
      if (need_dx) give(L.inputs[0], c[0]);
      break;
    }
    case LayerKind::act:
      if (need_dx) give(L.inputs[0], add<ActTraits>(L.name, "bwd", L.act, Dir::bwd, {x, g})[0]);
      break;
    case LayerKind::fc: {
      const int64_t in = L.in.size(), out = L.fc_out;
      s.zeros_w = Tensor({in, out});
      s.zeros_w.fill(0.0f);
      s.dw = add_typed<GemmTraits>(L.name, "bwd_w", gemm_desc(out, in, mb, "nt"), Dir::fwd,
                                   {g, x, &s.zeros_w}, l)[0];
      if (L.bias) {
        s.dw_fc_bias = Tensor({out});
        add_native(
            L.name, "bwd_bias", [g, &s, mb] { net::bias_grad(*g, s.dw_fc_bias, mb); },
            [g = D(g), db = D(&s.dw_fc_bias), mb, out](net::DeviceOps& o) {
              o.bias_grad(g, db, mb, out, 1);
            });
        s.db = &s.dw_fc_bias;
      }
      if (need_dx) {
        s.zeros_d = Tensor({mb, in});
        s.zeros_d.fill(0.0f);
        give(L.inputs[0], add_typed<GemmTraits>(L.name, "bwd_d", gemm_desc(in, mb, out, "tn"),
                                                Dir::fwd, {&s.w, g, &s.zeros_d}, l)[0]);
      }
      break;
    }
    case LayerKind::rnn: {
      // The bwd call recomputes the forward it differentiates (rnn.h: forward_state(), run by
      // every step): that forward's time is in this call's.
      std::vector<const Tensor*> in = rnn_inputs(s, x);
      in.push_back(g);
      const auto& c = add<RnnTraits>(L.name, "bwd", L.rnn, Dir::bwd, in);
      s.dw = c[0], s.dr = c[1], s.db = c[2];
      if (need_dx) give(L.inputs[0], c.back());
      break;
    }
    case LayerKind::add:
      give(L.inputs[0], g);
      give(L.inputs[1], g);
      break;
    case LayerKind::dropout: {
      if (!need_dx) break;
      // The same mask as the step's forward (the same seed, step and elements).
      s.dx = Tensor({mb, L.out.c, L.out.h, L.out.w});
      const uint64_t dseed = s.drop_seed;
      const uint64_t* step = &steps_run;
      add_native(
          L.name, "bwd",
          [g, &s, p = L.drop_p, dseed, step] { net::dropout(*g, s.dx, p, dseed, *step); },
          [dg = D(g), y = D(&s.dx), n = s.dx.size(), p = L.drop_p, dseed, step](net::DeviceOps& o) {
            o.dropout(dg, y, n, p, dseed, *step);
          });
      give(L.inputs[0], &s.dx);
      break;
    }
    case LayerKind::concat: {
      // Each input's gradient: its slice of the output's, copied out.
      const int64_t hw = L.out.h * L.out.w;
      s.parts.reserve(L.inputs.size());                // pointers to them are handed out
      std::vector<std::pair<Tensor*, int64_t>> parts;  // gradient (null: not wanted), channels
      for (int i : L.inputs) {
        const Layer& P = net.layers[i];
        Tensor* t = nullptr;
        if (P.kind != LayerKind::input) {
          s.parts.emplace_back(std::vector<int64_t>{mb, P.out.c, P.out.h, P.out.w});
          t = &s.parts.back();
        }
        parts.push_back({t, P.out.c});
      }
      std::vector<void*> dparts;
      for (const auto& p : parts) dparts.push_back(p.first ? D(p.first) : nullptr);
      add_native(
          L.name, "bwd",
          [parts, g, mb, hw, c = L.out.c] {
            int64_t off = 0;
            for (const auto& [t, k] : parts) {
              if (t) net::copy_channels(g->data(), c, off, t->data(), k, 0, mb, k, hw);
              off += k;
            }
          },
          [parts, dparts, dg = D(g), mb, hw, c = L.out.c](net::DeviceOps& o) {
            int64_t off = 0;
            for (size_t j = 0; j < parts.size(); ++j) {
              if (dparts[j])
                o.copy_channels(dg, c, off, dparts[j], parts[j].second, 0, mb, parts[j].second, hw);
              off += parts[j].second;
            }
          });
      for (size_t j = 0; j < parts.size(); ++j)
        if (parts[j].first) give(L.inputs[j], parts[j].first);
      break;
    }
    default:
      break;
  }
}

void Executor::Impl::plan_update(size_t l) {
  State& s = st[l];
  const float step = opt.lr / static_cast<float>(net.mb);
  std::vector<std::pair<Tensor*, const Tensor*>> upd;
  if (s.dw) upd.push_back({&s.w, s.dw});
  if (s.db) upd.push_back({&s.b, s.db});
  if (s.dscale) upd.push_back({&s.scale, s.dscale});
  if (s.dshift) upd.push_back({&s.shift, s.dshift});
  if (s.dr) upd.push_back({&s.r, s.dr});
  if (upd.empty()) return;
  std::vector<std::pair<void*, void*>> dupd;
  for (auto& [w, g] : upd) dupd.push_back({D(w), D(g)});
  add_native(
      net.layers[l].name, "sgd",
      [upd, step] {
        for (auto& [w, g] : upd) net::axpy(-step, *g, *w);
      },
      [dupd, upd, step](net::DeviceOps& o) {
        for (size_t i = 0; i < upd.size(); ++i)
          o.axpy(-step, dupd[i].second, dupd[i].first, upd[i].first->size());
      });
}

namespace {

// Progress of a long plan (the best policy times every candidate of every layer) on stderr:
// "plan resnet50: 40/107 layers, 12 s, about 20 s left". Shown on a terminal once the plan has
// taken 2 s, or always with PRIMBENCH_PROGRESS=1; PRIMBENCH_PROGRESS=0 turns it off. stdout
// (tables, Google Benchmark's JSON) is never touched.
class PlanProgress {
 public:
  PlanProgress(const std::string& name, size_t total, bool searching) : name_(name), total_(total) {
    const ProgressMode m = progress_mode();
    on_ = searching && m.on;
    always_ = m.forced;
    tty_ = m.tty;
  }
  void step(size_t done) {
    if (!on_) return;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    if (!always_ && s < 2) return;
    std::fprintf(stderr, "%splan %s: %zu/%zu layers, %.0f s, about %.0f s left%s", tty_ ? "\r" : "",
                 name_.c_str(), done, total_, s, done ? s / done * (total_ - done) : 0.0,
                 tty_ ? "   " : "\n");
    shown_ = true;
  }
  ~PlanProgress() {
    if (shown_ && tty_) std::fputc('\n', stderr);
  }

 private:
  std::string name_;
  size_t total_;
  bool on_ = false, always_ = false, tty_ = false, shown_ = false;
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
};

}  // namespace

void Executor::Impl::plan() {
  st.resize(net.layers.size());
  const size_t n = net.layers.size();
  PlanProgress progress(net.name, opt.train ? 2 * n : n, opt.policy == "best");
  for (size_t l = 0; l < n; ++l) plan_forward(l), progress.step(l + 1);
  if (opt.train) {
    if (!net.has_loss()) throw InputError("network", net.name + " has no loss layer to train");
    for (size_t l = n; l-- > 0;) plan_backward(l), progress.step(2 * n - l);
    for (size_t l = 0; l < n; ++l) plan_update(l);
  }
  for (auto& c : calls) infos.push_back(c->info);
}

}  // namespace pb
