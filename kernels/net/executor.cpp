// The network executor (see executor.h): plans the calls of a step over the registries, keeps
// every buffer, runs and times the calls.
#include "kernels/net/executor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <unordered_map>

#include "kernels/act/act.h"
#include "kernels/act/traits.h"
#include "kernels/bnorm/bnorm.h"
#include "kernels/bnorm/traits.h"
#include "kernels/conv/conv.h"
#include "kernels/conv/traits.h"
#include "kernels/core/error.h"
#include "kernels/core/fill.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/traits.h"
#include "kernels/net/device_ops.h"
#include "kernels/net/find_cache.h"
#include "kernels/net/native_ops.h"
#include "kernels/pool/pool.h"
#include "kernels/pool/traits.h"
#include "kernels/rnn/traits.h"
#include "reference/bnorm.h"

namespace pb {

namespace {

double now_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// One call of a step.
struct Call {
  CallInfo info;
  virtual ~Call() = default;
  virtual void run() = 0;
  virtual size_t bytes() const { return 0; }  // outputs and workspaces it holds
};

struct NativeCall : Call {
  std::function<void()> fn;
  void run() override { fn(); }
};

// The fp64 reference kernels as an implementation (backend "ref"): outputs rounded to fp32.
template <class Traits, class Desc>
class RefImpl : public Impl<Desc> {
 public:
  std::string name() const override { return "ref/naive"; }
  Support supports(const Desc&, Dir) const override { return Support::yes(); }
  void prepare(const Desc& d, Dir dir, const std::vector<const Tensor*>& in) override {
    d_ = d, dir_ = dir, in_ = in;
    out_.clear();
    for (const Tensor64& t : Traits::reference(d_, dir_, in_)) out_.emplace_back(t.dims());
  }
  void run() override {
    std::vector<Tensor64> r = Traits::reference(d_, dir_, in_);
    for (size_t i = 0; i < r.size(); ++i)
      for (int64_t j = 0; j < r[i].size(); ++j) out_[i][j] = static_cast<float>(r[i][j]);
  }
  std::vector<Tensor> result() override {
    std::vector<Tensor> v;
    for (const Tensor& t : out_) v.push_back(t.clone());
    return v;
  }
  bool refresh() override { return true; }
  const Tensor* output_view(size_t i) const override {
    return i < out_.size() ? &out_[i] : nullptr;
  }

 private:
  Desc d_;
  Dir dir_ = Dir::fwd;
  std::vector<const Tensor*> in_;
  std::vector<Tensor> out_;
};

// A primitive call: one implementation prepared once. Each run refreshes it (new activations,
// updated weights), runs it and, when its outputs are neither host views nor kept on the device,
// copies them out.
template <class Traits, class Desc>
struct PrimCall : Call {
  Desc d;
  Dir dir = Dir::fwd;
  std::unique_ptr<Impl<Desc>> impl;
  std::vector<const Tensor*> in;
  // Outputs, when the implementation has no host view of them (on the device: host copies,
  // refreshed only when the executor downloads for a check).
  std::vector<Tensor> owned;
  std::vector<const Tensor*> out;
  enum Mode { kView, kDevice, kCopy, kPrepare } mode = kView;

  void run() override {
    if (mode == kPrepare)
      impl->prepare(d, dir, in);
    else
      impl->refresh();
    impl->run();
    impl->sync();
    if (mode == kView || mode == kDevice) return;
    std::vector<Tensor> r = impl->result();
    for (size_t i = 0; i < owned.size(); ++i)
      std::memcpy(owned[i].data(), r[i].data(), owned[i].bytes());
  }
  size_t bytes() const override {
    size_t b = impl->workspace_bytes();
    for (const Tensor* t : out) b += t->bytes();
    return b;
  }
};

bool starts_with(const std::string& s, const std::string& p) {
  return s.rfind(p, 0) == 0;
}

}  // namespace

struct Executor::Impl {
  Network net;
  NetOptions opt;
  FindCache cache;
  std::vector<std::unique_ptr<Call>> calls;
  std::vector<CallInfo> infos;
  int fallbacks = 0;

  // Per layer.
  struct State {
    const Tensor* act = nullptr;  // forward output
    Tensor own;                   // the executor's own output (input, add)
    Tensor w, b, scale, shift, rmean, rvar;
    Tensor r, h0, c0;                              // rnn: recurrent weights, initial state
    Tensor dw_fc_bias;                             // fc: bias gradient (native)
    const Tensor *mean = nullptr, *var = nullptr;  // bnorm: the batch statistics
    const Tensor *dw = nullptr, *db = nullptr, *dscale = nullptr, *dshift = nullptr;
    const Tensor* dr = nullptr;          // rnn
    std::vector<const Tensor*> contrib;  // gradients arriving at this layer's output
    Tensor own_grad;                     // their sum, when more than one
    const Tensor* loss = nullptr;        // loss layer: per-position losses
    Tensor zeros, zeros_w, zeros_d;      // fc: the GEMMs' C inputs (beta 0)
  };
  std::vector<State> st;
  Tensor labels;

  // Every layer on the device (backend ocl): the device buffer of each tensor the plan uses,
  // keyed by its host tensor (for the executor's own tensors, a copy uploaded when first asked
  // for; for a call's outputs, the implementation's own buffer).
  std::unique_ptr<net::DeviceOps> dev;
  std::unordered_map<const Tensor*, void*> mirror;
  std::string residency;    // "device", or why not
  bool host_stale = false;  // the device holds newer contents than the host copies
  // The host's input, labels or weights were handed out for writing: from then on every step
  // uploads them first (untimed), since the caller may write them at any time.
  bool push_due = false;

  // Thrown while planning on the device when a call cannot stay there: the plan starts over
  // with host round trips.
  struct NotOnDevice {
    std::string why;
  };
  void* D(const Tensor* t) { return dev ? on_device(t) : nullptr; }
  void* on_device(const Tensor* t) {
    auto it = mirror.find(t);
    if (it != mirror.end()) return it->second;
    return mirror[t] = dev->alloc(*t);
  }
  // Before reading host copies: every device buffer downloaded into its host tensor.
  void pull() {
    if (!dev || !host_stale) return;
    for (auto& [t, buf] : mirror) dev->download(buf, *const_cast<Tensor*>(t));
    host_stale = false;
  }
  // Before a step: the input, labels and weights the caller may have changed, uploaded.
  void push() {
    if (!dev || !push_due) return;
    auto up = [this](const Tensor& t) {
      auto it = mirror.find(&t);
      if (it != mirror.end()) dev->upload(t, it->second);
    };
    up(st[0].own);
    up(labels);
    for (State& s : st)
      for (const Tensor* t : {&s.w, &s.b, &s.scale, &s.shift, &s.r}) up(*t);
  }

  // Candidate implementations of one call, in registry order, for a backend prefix.
  template <class Traits, class Desc>
  std::vector<std::unique_ptr<pb::Impl<Desc>>> candidates(const std::string& prefix, const Desc& d,
                                                          Dir dir,
                                                          const std::vector<const Tensor*>& in,
                                                          std::string* why_not) {
    std::vector<std::unique_ptr<pb::Impl<Desc>>> v;
    if (prefix == "ref/") {
      v.push_back(std::make_unique<RefImpl<Traits, Desc>>());
      return v;
    }
    for (const auto& e : Traits::registry()) {
      if (!starts_with(e.name, prefix)) continue;
      if (!e.unavailable().empty()) {
        *why_not += (why_not->empty() ? "" : "; ") + e.name + ": " + e.unavailable();
        continue;
      }
      auto impl = e.make();
      Support s = impl->supports(d, dir);
      if (s && dev && prefix == "ocl/" && !impl->bind_device(device_inputs(in)))
        s = Support::no(e.name + " cannot read its inputs on the device");
      if (s)
        v.push_back(std::move(impl));
      else
        *why_not += (why_not->empty() ? "" : "; ") + s.reason;
    }
    return v;
  }

  std::vector<void*> device_inputs(const std::vector<const Tensor*>& in) {
    std::vector<void*> v;
    for (const Tensor* t : in) v.push_back(on_device(t));
    return v;
  }

  static double time_once(Call& c) {
    const double t0 = now_ms();
    c.run();
    return now_ms() - t0;
  }

  // Plans one primitive call: picks the implementation by backend and policy, prepares it.
  template <class Traits, class Desc>
  PrimCall<Traits, Desc>* add(const std::string& layer, const std::string& phase, Desc d, Dir dir,
                              std::vector<const Tensor*> in) {
    d.name.clear();
    auto call = std::make_unique<PrimCall<Traits, Desc>>();
    call->d = d, call->dir = dir, call->in = in;
    CallInfo& info = call->info;
    info.layer = layer, info.phase = phase, info.prim = Traits::kPrim, info.desc = d.str();
    info.flops = d.flops(dir);
    std::string why;
    auto cands = candidates<Traits>(opt.backend + "/", d, dir, in, &why);
    if (cands.empty() && dev)
      throw NotOnDevice{layer + " " + phase + ": no ocl implementation runs it (" + why + ")"};
    if (cands.empty()) {
      cands = candidates<Traits>("cpu/", d, dir, in, &why);
      if (cands.empty())
        throw Unsupported(layer + " " + phase + ": no implementation runs " + info.desc + " (" +
                          why + ")");
      info.note = "fallback to cpu: " + opt.backend + " has none (" + why + ")";
      ++fallbacks;
    }
    size_t pick = 0;
    bool prepared = false;  // the best search leaves every candidate prepared for this call
    const std::string algo = opt.backend + "/" + opt.policy;
    if (opt.policy == "best" && cands.size() > 1) {
      const std::string key = std::string(Traits::kPrim) + "\t" + dir_str(dir) + "\t" + info.desc;
      std::string cached = cache.get(key);
      auto it = std::find_if(cands.begin(), cands.end(),
                             [&](const auto& c) { return c->name() == cached; });
      if (it != cands.end()) {
        pick = it - cands.begin();
        info.note = (info.note.empty() ? "" : info.note + "; ") + "best (cached)";
      } else {
        double best = std::numeric_limits<double>::infinity();
        for (size_t i = 0; i < cands.size(); ++i) {
          PrimCall<Traits, Desc> trial;
          trial.d = d, trial.dir = dir, trial.in = in, trial.impl = std::move(cands[i]);
          trial.impl->prepare(d, dir, in);
          trial.mode = trial.impl->refresh() ? PrimCall<Traits, Desc>::kView
                                             : PrimCall<Traits, Desc>::kPrepare;
          // Copy-out cost is left out of the comparison (it is small beside the call).
          double t = std::min(time_once(trial), time_once(trial));
          cands[i] = std::move(trial.impl);
          if (t < best) best = t, pick = i;
        }
        prepared = true;
        cache.put(key, cands[pick]->name(), best);
        info.note =
            (info.note.empty() ? "" : info.note + "; ") + "best of " + std::to_string(cands.size());
      }
    } else if (opt.policy != "best" && opt.policy != "first") {
      auto it = std::find_if(cands.begin(), cands.end(),
                             [&](const auto& c) { return c->name() == algo; });
      if (it != cands.end()) {
        pick = it - cands.begin();
      } else if (std::string(Traits::kPrim) == "conv") {
        info.note = (info.note.empty() ? "" : info.note + "; ") + "fallback: " + algo +
                    " does not run this shape";
        ++fallbacks;
      }
    }
    call->impl = std::move(cands[pick]);
    info.impl = call->impl->name();
    if (!prepared) call->impl->prepare(d, dir, in);
    const size_t n = Traits::output_names(d, dir).size();
    const bool refreshable = call->impl->refresh();
    bool views = refreshable;
    for (size_t i = 0; views && i < n; ++i) views = call->impl->output_view(i) != nullptr;
    bool on_dev = dev && refreshable;
    for (size_t i = 0; on_dev && i < n; ++i) on_dev = call->impl->device_output(i) != nullptr;
    if (dev && !on_dev)
      throw NotOnDevice{layer + " " + phase + ": " + info.impl + " keeps no output on the device"};
    if (views) {
      call->mode = PrimCall<Traits, Desc>::kView;
      for (size_t i = 0; i < n; ++i) call->out.push_back(call->impl->output_view(i));
    } else {
      call->mode = on_dev        ? PrimCall<Traits, Desc>::kDevice
                   : refreshable ? PrimCall<Traits, Desc>::kCopy
                                 : PrimCall<Traits, Desc>::kPrepare;
      call->impl->run();
      call->impl->sync();
      // Host copies (on the device: their shapes, and contents for checks).
      for (Tensor& t : call->impl->result()) call->owned.push_back(std::move(t));
      for (const Tensor& t : call->owned) call->out.push_back(&t);
      for (size_t i = 0; on_dev && i < n; ++i)
        mirror[&call->owned[i]] = call->impl->device_output(i);
    }
    auto* raw = call.get();
    calls.push_back(std::move(call));
    return raw;
  }

  // One of the executor's own steps: `host` on host tensors, or `device` (given the DeviceOps)
  // when the plan keeps every layer on the device.
  void add_native(const std::string& layer, const std::string& phase, std::function<void()> host,
                  std::function<void(net::DeviceOps&)> device) {
    auto c = std::make_unique<NativeCall>();
    c->info.layer = layer, c->info.phase = phase;
    c->info.impl = dev ? "native/ocl" : "native";
    if (dev) {
      net::DeviceOps* ops = dev.get();
      c->fn = [ops, device] {
        device(*ops);
        ops->finish();
      };
    } else {
      c->fn = std::move(host);
    }
    calls.push_back(std::move(c));
  }

  // An rnn layer's inputs but dy: x, h0, [c0], W, R, b.
  std::vector<const Tensor*> rnn_inputs(const State& s, const Tensor* x) const {
    std::vector<const Tensor*> v = {x, &s.h0};
    if (s.c0.size()) v.push_back(&s.c0);  // LSTM
    for (const Tensor* t : {&s.w, &s.r, &s.b}) v.push_back(t);
    return v;
  }
  // Inference batch-norm: its running statistics, set by calibrate() to the batch statistics of
  // its input on the synthetic batch (as if trained on it), layer by layer.
  struct Calibration {
    size_t call;
    BnormDesc d;
    const Tensor* x;
    Tensor *mean, *var;
  };
  std::vector<Calibration> calib;
  void calibrate();
  void plan();
  void plan_forward(size_t l);
  void plan_backward(size_t l);
  void plan_update(size_t l);
  const Tensor* grad_of(size_t l);
};

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
  const Tensor* x = L.inputs.empty() ? nullptr : st[L.inputs[0]].act;
  const int64_t mb = net.mb;
  switch (L.kind) {
    case LayerKind::input: {
      s.own = Tensor({mb, L.out.c, L.out.h, L.out.w});
      fill_uniform(s.own, seed, -1, 1);
      s.act = &s.own;
      break;
    }
    case LayerKind::conv: {
      s.w = Tensor(L.conv.wei_dims());
      init_weights(s.w, L.conv.icg() * L.conv.kh * L.conv.kw, seed);
      s.act = add<ConvTraits>(L.name, "fwd", L.conv, Dir::fwd, {x, &s.w})->out[0];
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
      s.act = add<PoolTraits>(L.name, "fwd", L.pool, Dir::fwd, {x})->out[0];
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
      auto* c1 =
          add<BnormTraits>(L.name, "fwd", d, Dir::fwd, {x, &s.scale, &s.shift, &s.rmean, &s.rvar});
      if (!opt.train) calib.push_back({calls.size() - 1, d, x, &s.rmean, &s.rvar});
      s.act = c1->out[0];
      if (opt.train) s.mean = c1->out[1], s.var = c1->out[2];
      break;
    }
    case LayerKind::act:
      s.act = add<ActTraits>(L.name, "fwd", L.act, Dir::fwd, {x})->out[0];
      break;
    case LayerKind::fc: {
      const int64_t in = L.in.size(), out = L.fc_out;
      s.w = Tensor({in, out});  // column-major out x in
      init_weights(s.w, in, seed);
      s.zeros = Tensor({mb, out});
      s.zeros.fill(0.0f);
      s.act = add<GemmTraits>(L.name, "fwd", gemm_desc(out, mb, in, "nn"), Dir::fwd,
                              {&s.w, x, &s.zeros})
                  ->out[0];
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
      s.act = add<RnnTraits>(L.name, "fwd", d, Dir::fwd, rnn_inputs(s, x))->out[0];
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
    case LayerKind::loss: {
      labels = Tensor({mb, 1, 1});
      fill_uniform(labels, mix_seed(seed, 7), 0, static_cast<float>(L.act.ic));
      for (int64_t i = 0; i < labels.size(); ++i)
        labels[i] = std::min(std::floor(labels[i]), static_cast<float>(L.act.ic - 1));
      auto* c = add<ActTraits>(L.name, "fwd", L.act, Dir::fwd, {x, &labels});
      s.act = c->out[0];
      s.loss = c->out[1];
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
    give(L.inputs[0], add<ActTraits>(L.name, "bwd", L.act, Dir::bwd, {x, &labels})->out[0]);
    return;
  }
  const Tensor* g = grad_of(l);
  if (!g) return;
  switch (L.kind) {
    case LayerKind::conv: {
      auto* w = add<ConvTraits>(L.name, "bwd_w", L.conv, Dir::bwd_w, {x, g});
      s.dw = w->out[0];
      if (L.bias) s.db = w->out[1];
      if (need_dx)
        give(L.inputs[0], add<ConvTraits>(L.name, "bwd_d", L.conv, Dir::bwd_d, {g, &s.w})->out[0]);
      break;
    }
    case LayerKind::pool:
      if (need_dx)
        give(L.inputs[0], add<PoolTraits>(L.name, "bwd", L.pool, Dir::bwd, {x, g})->out[0]);
      break;
    case LayerKind::bnorm: {
      auto* c = add<BnormTraits>(L.name, "bwd", L.bnorm, Dir::bwd,
                                 {x, g, &s.scale, &s.shift, s.mean, s.var});
      s.dscale = c->out[1], s.dshift = c->out[2];
      if (need_dx) give(L.inputs[0], c->out[0]);
      break;
    }
    case LayerKind::act:
      if (need_dx)
        give(L.inputs[0], add<ActTraits>(L.name, "bwd", L.act, Dir::bwd, {x, g})->out[0]);
      break;
    case LayerKind::fc: {
      const int64_t in = L.in.size(), out = L.fc_out;
      s.zeros_w = Tensor({in, out});
      s.zeros_w.fill(0.0f);
      s.dw = add<GemmTraits>(L.name, "bwd_w", gemm_desc(out, in, mb, "nt"), Dir::fwd,
                             {g, x, &s.zeros_w})
                 ->out[0];
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
        give(L.inputs[0], add<GemmTraits>(L.name, "bwd_d", gemm_desc(in, mb, out, "tn"), Dir::fwd,
                                          {&s.w, g, &s.zeros_d})
                              ->out[0]);
      }
      break;
    }
    case LayerKind::rnn: {
      // The bwd call recomputes the forward it differentiates (rnn.h: in refresh(), or in the
      // prepare() a step repeats without one): that forward's time is in this call's.
      std::vector<const Tensor*> in = rnn_inputs(s, x);
      in.push_back(g);
      auto* c = add<RnnTraits>(L.name, "bwd", L.rnn, Dir::bwd, in);
      s.dw = c->out[0], s.dr = c->out[1], s.db = c->out[2];
      if (need_dx) give(L.inputs[0], c->out.back());
      break;
    }
    case LayerKind::add:
      give(L.inputs[0], g);
      give(L.inputs[1], g);
      break;
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

void Executor::Impl::plan() {
  st.resize(net.layers.size());
  for (size_t l = 0; l < net.layers.size(); ++l) plan_forward(l);
  if (opt.train) {
    if (!net.has_loss()) throw InputError("network", net.name + " has no loss layer to train");
    for (size_t l = net.layers.size(); l-- > 0;) plan_backward(l);
    for (size_t l = 0; l < net.layers.size(); ++l) plan_update(l);
  }
  for (auto& c : calls) infos.push_back(c->info);
}

void Executor::Impl::calibrate() {
  size_t next = 0;
  for (size_t i = 0; i < calls.size(); ++i) {
    for (; next < calib.size() && calib[next].call == i; ++next) {
      const Calibration& c = calib[next];
      Tensor& x = *const_cast<Tensor*>(c.x);
      if (dev) dev->download(on_device(c.x), x);
      std::vector<double> mean, var;
      ref::bnorm_stats(c.d, x, &mean, &var);
      for (int64_t k = 0; k < c.d.ic; ++k)
        (*c.mean)[k] = static_cast<float>(mean[k]), (*c.var)[k] = static_cast<float>(var[k]);
      if (dev) {
        dev->upload(*c.mean, on_device(c.mean));
        dev->upload(*c.var, on_device(c.var));
      }
    }
    calls[i]->run();
  }
  host_stale = dev != nullptr;
}

Executor::Executor(const Network& net, const NetOptions& opt) : p_(std::make_unique<Impl>()) {
  const std::vector<std::string> backends = {"cpu", "onednn", "ocl", "ref"};
  if (std::find(backends.begin(), backends.end(), opt.backend) == backends.end())
    throw InputError("backend", "'" + opt.backend + "' is not one of cpu, onednn, ocl, ref");
  if (opt.policy != "best" && opt.policy != "first") {
    const std::string algo = opt.backend + "/" + opt.policy;
    auto has = [&](const auto& reg) {
      return std::any_of(reg.begin(), reg.end(), [&](const auto& e) { return e.name == algo; });
    };
    if (!has(conv_registry()) && !has(gemm_registry()) && !has(pool_registry()) &&
        !has(bnorm_registry()) && !has(act_registry()) && !has(rnn_registry()))
      throw InputError("policy", "'" + opt.policy + "' is not best, first or an algorithm of " +
                                     opt.backend + " (primbench list)");
  }
  p_->net = net;
  p_->opt = opt;
  p_->cache.open(opt.find_cache, opt.backend);
  if (opt.backend == "ocl") {
    std::string why;
    p_->dev = net::make_device_ops(&why);
    p_->residency = p_->dev ? "device" : "host round trips: " + why;
  }
  try {
    p_->plan();
  } catch (const Impl::NotOnDevice& e) {  // plan again, each call through host memory
    p_->calls.clear();
    p_->infos.clear();
    p_->st.clear();
    p_->mirror.clear();
    p_->calib.clear();
    p_->fallbacks = 0;
    p_->dev.reset();
    p_->residency = "host round trips: " + e.why;
    p_->plan();
  }
  p_->calibrate();
  p_->cache.save();
}

Executor::~Executor() = default;

double Executor::step() {
  p_->push();
  const double t0 = now_ms();
  for (size_t i = 0; i < p_->calls.size(); ++i) {
    const double a = now_ms();
    p_->calls[i]->run();
    p_->infos[i].last_ms = now_ms() - a;
  }
  p_->host_stale = p_->dev != nullptr;
  return now_ms() - t0;
}

const std::string& Executor::residency() const {
  return p_->residency;
}

double Executor::loss() const {
  p_->pull();
  for (size_t l = 0; l < p_->st.size(); ++l)
    if (p_->st[l].loss) {
      const Tensor& t = *p_->st[l].loss;
      double s = 0;
      for (int64_t i = 0; i < t.size(); ++i) s += t[i];
      return s / static_cast<double>(t.size());
    }
  return std::numeric_limits<double>::quiet_NaN();
}

const Tensor& Executor::output() const {
  p_->pull();
  const Network& n = p_->net;
  size_t l = n.layers.size() - 1;
  if (n.has_loss()) l = n.layers[l].inputs[0];
  return *p_->st[l].act;
}

std::vector<double> Executor::isolated_ms(int reps) {
  std::vector<double> v;
  for (auto& c : p_->calls) {
    double best = std::numeric_limits<double>::infinity();
    for (int r = 0; r < std::max(1, reps); ++r) best = std::min(best, Impl::time_once(*c));
    v.push_back(best);
  }
  p_->host_stale = p_->dev != nullptr;
  return v;
}

const std::vector<CallInfo>& Executor::calls() const {
  return p_->infos;
}
const Network& Executor::network() const {
  return p_->net;
}
int Executor::fallbacks() const {
  return p_->fallbacks;
}
Tensor& Executor::input() {
  p_->pull();
  p_->push_due = true;
  return p_->st[0].own;
}
Tensor& Executor::labels() {
  p_->pull();
  p_->push_due = true;
  return p_->labels;
}

size_t Executor::planned_bytes() const {
  size_t b = p_->labels.bytes();
  for (const auto& c : p_->calls) b += c->bytes();
  for (const auto& s : p_->st)
    for (const Tensor* t : {&s.own, &s.w, &s.b, &s.scale, &s.shift, &s.rmean, &s.rvar, &s.r, &s.h0,
                            &s.c0, &s.dw_fc_bias, &s.own_grad, &s.zeros, &s.zeros_w, &s.zeros_d})
      b += t->bytes();
  return b;
}

std::vector<std::pair<std::string, Tensor*>> Executor::params() {
  p_->pull();
  p_->push_due = true;
  std::vector<std::pair<std::string, Tensor*>> v;
  for (size_t l = 0; l < p_->st.size(); ++l) {
    auto& s = p_->st[l];
    const std::string& n = p_->net.layers[l].name;
    if (s.w.size()) v.push_back({n + ".w", &s.w});
    if (s.b.size()) v.push_back({n + ".b", &s.b});
    if (s.scale.size()) v.push_back({n + ".scale", &s.scale});
    if (s.shift.size()) v.push_back({n + ".shift", &s.shift});
    if (s.r.size()) v.push_back({n + ".R", &s.r});
  }
  return v;
}

std::vector<const Tensor*> Executor::param_grads() {
  p_->pull();
  std::vector<const Tensor*> v;
  for (auto& s : p_->st) {
    if (s.w.size()) v.push_back(s.dw);
    if (s.b.size()) v.push_back(s.db);
    if (s.scale.size()) v.push_back(s.dscale);
    if (s.shift.size()) v.push_back(s.dshift);
    if (s.r.size()) v.push_back(s.dr);
  }
  return v;
}

}  // namespace pb
