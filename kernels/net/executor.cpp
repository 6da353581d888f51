// The network executor (see executor.h): picks and prepares each primitive call over the
// registries (plan.cpp says which calls a layer needs), keeps tensors on the device for backend
// ocl, calibrates inference batch-norm, runs and times the calls.
#include "kernels/net/executor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
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
#include "kernels/core/meter.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/traits.h"
#include "kernels/lrn/lrn.h"
#include "kernels/lrn/traits.h"
#include "kernels/net/executor_impl.h"
#include "kernels/net/precision.h"
#include "kernels/pool/pool.h"
#include "kernels/pool/traits.h"
#include "kernels/rnn/traits.h"
#include "reference/bnorm.h"
#ifdef PRIMBENCH_HAVE_OPENCL
#include "kernels/opencl/runtime.h"
#endif

namespace pb {

namespace {

// The best search: each candidate runs once (warm-up), then this many times; the median decides.
constexpr int kFindRuns = 3;

double now_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

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
  void plan(const Desc& d, Dir dir, const std::vector<const Tensor*>& in) override {
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
  const Tensor* output_view(size_t i) const override {
    return i < out_.size() ? &out_[i] : nullptr;
  }

 private:
  Desc d_;
  Dir dir_ = Dir::fwd;
  std::vector<const Tensor*> in_;
  std::vector<Tensor> out_;
};

// A primitive call: one implementation planned once, its weights() prepared at plan time and again
// whenever the weights changed (every training step: *weights_version moved). Each run redoes the
// forward state a backward needs, converts and computes (the `step` or `layer` contract) and,
// when its outputs are neither host views nor kept on the device, copies them out.
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
  // kPrepare: the implementation copied its inputs at plan() (reads_inputs_in_place() false),
  // so each run plans it again.
  enum Mode { kView, kDevice, kCopy, kPrepare } mode = kView;
  const int* weights_version = nullptr;  // the executor's (set before plan())
  int weights_seen = 0;

  // Plans the implementation and prepares its weights.
  void plan() {
    impl->plan(d, dir, in);
    impl->weights();
    weights_seen = *weights_version;
  }
  void run() override {
    if (mode == kPrepare) {
      plan();
    } else if (weights_seen != *weights_version) {
      impl->weights();
      weights_seen = *weights_version;
    }
    impl->forward_state();
    run_phases(*impl);
    if (mode == kCopy || mode == kPrepare) {
      std::vector<Tensor> r = impl->result();
      for (size_t i = 0; i < owned.size(); ++i)
        std::memcpy(owned[i].data(), r[i].data(), owned[i].bytes());
    }
    // Testing the tester (as measure() does): PRIMBENCH_INJECT_ERROR=<impl> adds 1 to the first
    // element of that implementation's first host output, so a check of the network sees it;
    // <impl>:<phase> (cpu/direct:bwd_w) only in the calls of that phase.
    static const char* inject = std::getenv("PRIMBENCH_INJECT_ERROR");
    if (inject && (impl->name() == inject || impl->name() + ":" + info.phase == inject) &&
        mode != kDevice && !out.empty() && out[0]->size())
      (*const_cast<Tensor*>(out[0]))[0] += 1.0f;
  }
  std::vector<const Tensor*> outputs() const override { return out; }
  bool quantise(size_t i) override { return impl->quantise(i); }
  bool set_post_ops(const PostOps* p, Tensor* dst) override {
    return mode == kView && impl->set_post_ops(p, dst);
  }
  bool read_typed_input(size_t i, const std::vector<uint8_t>* buf) override {
    return mode == kView && impl->read_typed_input(i, buf);
  }
  bool post_ops_write_typed_copy() const override { return impl->post_ops_write_typed_copy(); }
  size_t bytes() const override {
    size_t b = impl->workspace_bytes();
    for (const Tensor* t : out) b += t->bytes();
    return b;
  }
};

bool starts_with(const std::string& s, const std::string& p) {
  return s.rfind(p, 0) == 0;
}

// A refusal's reason, beginning with the implementation's name ("cpu/fft's workspace ...").
std::string named(const std::string& impl, const std::string& why) {
  return starts_with(why, impl) ? why : impl + ": " + why;
}

}  // namespace

void Executor::Impl::pull() {
  if (!dev || !host_stale) return;
  for (auto& [t, buf] : mirror) dev->download(buf, *const_cast<Tensor*>(t));
  host_stale = false;
}
void Executor::Impl::push() {
  if (!dev || (!push_due && !push_weights)) return;
  auto up = [this](const Tensor& t) {
    auto it = mirror.find(&t);
    if (it != mirror.end()) dev->upload(t, it->second);
  };
  if (push_due) {
    up(st[0].own);
    up(labels);
  }
  if (push_weights)
    for (State& s : st)
      for (const Tensor* t : {&s.w, &s.b, &s.scale, &s.shift, &s.r}) up(*t);
}

template <class Traits, class Desc>
std::vector<std::unique_ptr<pb::Impl<Desc>>> Executor::Impl::candidates(
    const std::string& prefix, const Desc& d, Dir dir, const std::vector<const Tensor*>& in,
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

std::vector<void*> Executor::Impl::device_inputs(const std::vector<const Tensor*>& in) {
  std::vector<void*> v;
  for (const Tensor* t : in) v.push_back(on_device(t));
  return v;
}

double Executor::Impl::time_once(Call& c) {
  const double t0 = now_ms();
  c.run();
  return now_ms() - t0;
}

template <class Traits, class Desc>
const std::vector<const Tensor*>& Executor::Impl::add(const std::string& layer,
                                                      const std::string& phase, Desc d, Dir dir,
                                                      std::vector<const Tensor*> in) {
  d.name.clear();
  auto call = std::make_unique<PrimCall<Traits, Desc>>();
  call->d = d, call->dir = dir, call->in = in;
  // Inference prepares weight-derived state once, here (and again only when params() hands the
  // weights out for changes); training redoes it every step.
  call->weights_version = &weights_version;
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
      throw Unsupported(layer + " " + phase + ": no implementation runs " + info.desc + " (" + why +
                        ")");
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
      // Candidates whose workspace is over PRIMBENCH_MAX_WORKSPACE_MB, or that refused the call
      // only when planned or run (a device limit that supports() cannot know, such as a
      // work-group or local memory the device's compiler refuses): skipped, with the reason.
      std::string refused;
      for (size_t i = 0; i < cands.size(); ++i) {
        PrimCall<Traits, Desc> trial;
        trial.d = d, trial.dir = dir, trial.in = in, trial.impl = std::move(cands[i]);
        trial.weights_version = call->weights_version;
        double t = 0;
        try {
          trial.plan();
          check_workspace_cap(trial.impl->name(), trial.impl->workspace_bytes());
          trial.mode = trial.impl->reads_inputs_in_place() ? PrimCall<Traits, Desc>::kView
                                                           : PrimCall<Traits, Desc>::kPrepare;
          // Copy-out cost is left out of the comparison (it is small beside the call). A
          // warm-up, then the median of kFindRuns timed runs.
          time_once(trial);
          std::vector<double> runs;
          for (int r = 0; r < kFindRuns; ++r) runs.push_back(time_once(trial));
          std::sort(runs.begin(), runs.end());
          t = runs[runs.size() / 2];
        } catch (const Unsupported& e) {
          refused += (refused.empty() ? "" : "; ") + named(trial.impl->name(), e.what());
          cands[i] = std::move(trial.impl);
          continue;
        }
        cands[i] = std::move(trial.impl);
        if (t < best) best = t, pick = i;
      }
      if (best == std::numeric_limits<double>::infinity())
        throw Unsupported(layer + " " + phase + ": " + refused);
      if (!refused.empty()) {
        info.note = (info.note.empty() ? "" : info.note + "; ") + "refused: " + refused;
        ++fallbacks;
      }
      prepared = true;
      cache.put(key, cands[pick]->name(), best);
      info.note =
          (info.note.empty() ? "" : info.note + "; ") + "best of " + std::to_string(cands.size());
    }
  } else if (opt.policy != "best" && opt.policy != "first") {
    auto it =
        std::find_if(cands.begin(), cands.end(), [&](const auto& c) { return c->name() == algo; });
    if (it != cands.end()) {
      pick = it - cands.begin();
    } else if (std::string(Traits::kPrim) == "conv") {
      info.note = (info.note.empty() ? "" : info.note + "; ") + "fallback: " + algo +
                  " does not run this shape";
      ++fallbacks;
    }
  }
  if (!prepared) {
    // The picked candidate, else (when planning refuses it: a device limit supports() cannot
    // know, or the workspace cap) the next that plans, in registry order, said as a fallback.
    std::string refused;
    for (size_t k = 0; k < cands.size(); ++k) {
      const size_t i = k == 0 ? pick : (k <= pick ? k - 1 : k);
      call->impl = std::move(cands[i]);
      try {
        call->plan();
        check_workspace_cap(call->impl->name(), call->impl->workspace_bytes());
        pick = i;
        break;
      } catch (const Unsupported& e) {
        refused += (refused.empty() ? "" : "; ") + named(call->impl->name(), e.what());
        cands[i] = std::move(call->impl);
      }
    }
    if (!call->impl) throw Unsupported(layer + " " + phase + ": " + refused);
    if (!refused.empty()) {
      info.note = (info.note.empty() ? "" : info.note + "; ") + "fallback: refused at plan (" +
                  refused + ")";
      ++fallbacks;
    }
  } else {
    call->impl = std::move(cands[pick]);
  }
  info.impl = call->impl->name();
  const size_t n = Traits::output_names(d, dir).size();
  const bool refreshable = call->impl->reads_inputs_in_place();
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
    call->impl->forward_state();
    run_phases(*call->impl);
    // Host copies (on the device: their shapes, and contents for checks).
    for (Tensor& t : call->impl->result()) call->owned.push_back(std::move(t));
    for (const Tensor& t : call->owned) call->out.push_back(&t);
    for (size_t i = 0; on_dev && i < n; ++i) mirror[&call->owned[i]] = call->impl->device_output(i);
  }
  const std::vector<const Tensor*>& out = call->out;
  calls.push_back(std::move(call));
  return out;
}

// Every primitive a network composes.
#define PB_NET_ADD(Traits, Desc)                                                \
  template const std::vector<const Tensor*>& Executor::Impl::add<Traits, Desc>( \
      const std::string&, const std::string&, Desc, Dir, std::vector<const Tensor*>);
PB_NET_ADD(ConvTraits, ConvDesc)
PB_NET_ADD(PoolTraits, PoolDesc)
PB_NET_ADD(LrnTraits, LrnDesc)
PB_NET_ADD(BnormTraits, BnormDesc)
PB_NET_ADD(ActTraits, ActDesc)
PB_NET_ADD(GemmTraits, GemmDesc)
PB_NET_ADD(RnnTraits, RnnDesc)
#undef PB_NET_ADD

void Executor::Impl::add_native(const std::string& layer, const std::string& phase,
                                std::function<void()> host,
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

void Executor::Impl::calibrate() {
  size_t next = 0;
  for (size_t i = 0; i < calls.size(); ++i) {
    for (; next < calib.size() && calib[next].call == i; ++next) {
      const Calibration& c = calib[next];
      Tensor& x = *const_cast<Tensor*>(c.x);
      if (dev) dev->download(on_device(c.x), x);
      // A reduced type takes the fp32 network's statistics (lowp.cpp): the same model.
      const auto given = opt.calibration.bnorm.find(net.layers[c.layer].name);
      if (given != opt.calibration.bnorm.end()) {
        std::copy(given->second.first.begin(), given->second.first.end(), c.mean->data());
        std::copy(given->second.second.begin(), given->second.second.end(), c.var->data());
      } else {
        std::vector<double> mean, var;
        ref::bnorm_stats(c.d, x, &mean, &var);
        for (int64_t k = 0; k < c.d.ic; ++k)
          (*c.mean)[k] = static_cast<float>(mean[k]), (*c.var)[k] = static_cast<float>(var[k]);
      }
      if (dev) {
        dev->upload(*c.mean, on_device(c.mean));
        dev->upload(*c.var, on_device(c.var));
      }
    }
    // Training: the weights stay as initialised until the first step (data-parallel ranks
    // start from the same ones).
    if (calls[i]->info.phase != "sgd") calls[i]->run();
  }
  host_stale = dev != nullptr;
}

void check_net_options(const NetOptions& opt) {
  const std::vector<std::string> backends = {"cpu", "onednn", "ocl", "ref"};
  if (std::find(backends.begin(), backends.end(), opt.backend) == backends.end())
    throw InputError("backend", "'" + opt.backend + "' is not one of cpu, onednn, ocl, ref");
  if (opt.policy != "best" && opt.policy != "first") {
    const std::string algo = opt.backend + "/" + opt.policy;
    auto has = [&](const auto& reg) {
      return std::any_of(reg.begin(), reg.end(), [&](const auto& e) { return e.name == algo; });
    };
    if (!has(conv_registry()) && !has(gemm_registry()) && !has(pool_registry()) &&
        !has(bnorm_registry()) && !has(act_registry()) && !has(rnn_registry()) &&
        !has(lrn_registry()))
      throw InputError("policy", "'" + opt.policy + "' is not best, first or an algorithm of " +
                                     opt.backend + " (primbench list)");
  }
}

Executor::Executor(const Network& net, const NetOptions& opt) : p_(std::make_unique<Impl>()) {
  check_net_options(opt);
  p_->baseline_rss = rss_baseline_bytes();
#ifdef PRIMBENCH_HAVE_OPENCL
  p_->baseline_device = ocl::device_bytes_live();
#endif
  check_net_dt(opt.dt, opt.train, opt.backend, "dt");
  p_->net = net;
  p_->opt = opt;
  p_->calibrate_inputs();
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
#ifdef PRIMBENCH_HAVE_ONEDNN
  // The fused plan is oneDNN's own choice per layer: policies first and best; a named algorithm
  // (winograd) keeps the composed calls that honour it.
  const bool own_choice = opt.policy == "first" || opt.policy == "best";
  if (opt.backend == "onednn" && !opt.composed && own_choice && !opt.dt.is_f32()) {
    p_->composition = "composed (dt " + opt.dt.str() + ": oneDNN's fused plan is fp32)";
  } else if (opt.backend == "onednn" && !opt.composed && own_choice) {
    std::string why;
    if (p_->fuse_onednn(&why)) {
      if (opt.train) {  // the weights are read (reordered) each step: nothing to plan again
        p_->composition = "fused: oneDNN layouts between layers, batch-norm + ReLU, " +
                          std::to_string(p_->reorders) + " reorders per step (" +
                          std::to_string(p_->weight_reorders) + " of weights and their gradients)";
      } else {
        p_->composition = "fused: oneDNN layouts between layers, post-ops, " +
                          std::to_string(p_->reorders) + " reorders per step";
        p_->fused_version = p_->weights_version;
      }
    } else {
      p_->composition = "composed (" + why + ")";
    }
  }
#endif
  // The executor's own pass after each convolution or fc (fuse_native.cpp), in inference unless
  // --composed keeps one call per layer: backend cpu, and backend onednn where oneDNN's fused
  // plan was not made (a reduced type, a named algorithm, a layer it has no form for), so that
  // both backends' composed plans have the same glue between their primitives.
  const bool composed_onednn = opt.backend == "onednn" && p_->composition.rfind("composed", 0) == 0;
  if (!opt.train && !opt.composed && (opt.backend == "cpu" || composed_onednn)) {
    const std::string passes = p_->fuse_native();
    if (opt.backend == "cpu")
      p_->composition =
          passes.empty() ? "composed (no bias, batch-norm, add or ReLU after a convolution or fc)"
                         : "fused: " + passes;
    else if (!passes.empty())
      p_->composition += "; the executor's " + passes;
    const std::string handed = opt.typed_handoff ? p_->hand_off_typed() : "";
    if (!handed.empty()) p_->composition += "; " + handed;
  }
}

// The fused plan folded the weights it was planned with: after params() handed them out for
// changes, it is planned again (untimed, before the next step).
void Executor::Impl::refuse_if_weights_changed() {
#ifdef PRIMBENCH_HAVE_ONEDNN
  if (fused_version < 0 || fused_version == weights_version) return;
  std::string why;
  if (!fuse_onednn(&why)) throw RuntimeError("oneDNN fused plan could not be made again: " + why);
  fused_version = weights_version;
#endif
}

Executor::~Executor() = default;

double Executor::step(StepObserver* observer) {
  p_->push();
  if (p_->opt.train) {
    ++p_->weights_version;  // the last step's SGD update changed them
    ++p_->steps_run;        // a new dropout mask
  }
  p_->refuse_if_weights_changed();
  const size_t update = p_->opt.train ? update_begin() : p_->calls.size() + 1;
  const double t0 = now_ms();
  for (size_t i = 0; i < p_->calls.size(); ++i) {
    if (observer && i == update) observer->before_update();
    const double a = now_ms();
    p_->calls[i]->run();
    p_->infos[i].last_ms = now_ms() - a;
    if (observer) observer->after_call(i);
  }
  if (observer && update == p_->calls.size()) observer->before_update();
  p_->host_stale = p_->dev != nullptr;
  return now_ms() - t0;
}

}  // namespace pb
