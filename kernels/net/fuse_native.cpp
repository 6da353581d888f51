// Inference on the host (backend cpu; backend onednn where its own fused plan was not made): what
// follows a convolution or fc layer in the network (its bias, an inference batch-norm, a residual
// add, ReLU) runs as one pass over the layer's output instead of one call per layer, as a
// framework's inference graph fuses them (and as the onednn backend's fused plan does with
// post-ops). The primitive calls stay as they were chosen; only the calls of the layers after
// them are replaced. See Executor::Impl::fuse_native.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "kernels/net/executor_impl.h"

namespace pb {

namespace {

// One input of the pass: a layer's output y, read as y * m[c] + o[c] per channel, where m and o
// come from the bias and the batch-norm folded into it (each run: params() may change them).
struct Operand {
  const Tensor* y = nullptr;
  const Tensor* bias = nullptr;  // the producer's bias, added before the batch-norm
  const Executor::Impl::State* bn = nullptr;
  BnormDesc bd;
  std::vector<float> m, o;

  // bn(y + bias) = y * g + o (State::bn_fold).
  void coefficients(int64_t c) {
    m.assign(c, 1.0f), o.assign(c, 0.0f);
    for (int64_t k = 0; k < c; ++k) {
      const double b = bias ? (*bias)[k] : 0.0;
      if (!bn) {
        o[k] = static_cast<float>(b);
        continue;
      }
      const auto [g, off] = bn->bn_fold(bd, k, b);
      m[k] = static_cast<float>(g);
      o[k] = static_cast<float>(off);
    }
  }
};

// Stands for a call that is not there yet.
struct NoCall : Call {
  void run() override {}
};

// The post-ops out = [relu](a.y * a.m + a.o [+ b.y * b.m + b.o]) (b.y: the residual, or none).
// Either a pass of their own after the convolution or fc that wrote a.y (`inner` null), or the
// convolution's own (`inner`: its call, whose implementation applies them inside its output tiles
// and writes `out` itself).
struct PostOpsCall : Call {
  Operand a, b;
  bool relu = false;
  Tensor* out = nullptr;
  int64_t mb = 0, c = 0, hw = 0;
  std::unique_ptr<Call> inner;
  PostOps ops;  // what the inner call's implementation reads at each run

  // The coefficients of this run into ops; a scale or shift that is 1 or 0 whatever the
  // parameters (no batch-norm, no bias) stays null, so an implementation can leave it out.
  void update() {
    a.coefficients(c);
    if (b.y) b.coefficients(c);
    ops.scale = a.bn ? a.m.data() : nullptr, ops.shift = a.bn || a.bias ? a.o.data() : nullptr;
    ops.relu = relu;
    ops.res = b.y ? b.y->data() : nullptr;
    ops.res_scale = b.bn ? b.m.data() : nullptr;
    ops.res_shift = b.bn || b.bias ? b.o.data() : nullptr;
  }
  void run() override {
    update();
    if (inner) return inner->run();
    apply_post_ops_nchw(ops, mb, c, hw, a.y->data(), out->data());
  }
  size_t bytes() const override { return inner ? inner->bytes() : 0; }
  PostOps* fused_post_ops(const Tensor** written) override {
    if (inner && !inner->post_ops_write_typed_copy()) return nullptr;  // oneDNN's own post-ops
    *written = out;
    return &ops;
  }
  bool read_typed_input(size_t i, const std::vector<uint8_t>* buf) override {
    return inner && inner->read_typed_input(i, buf);
  }
};

class NativeFuser {
 public:
  explicit NativeFuser(Executor::Impl& ex) : ex_(ex), net_(ex.net) {
    consumers_.assign(net_.layers.size(), {});
    for (size_t l = 0; l < net_.layers.size(); ++l)
      for (int i : net_.layers[l].inputs) consumers_[i].push_back(static_cast<int>(l));
    for (size_t i = 0; i < ex_.calls.size(); ++i) {
      const CallInfo& c = ex_.calls[i]->info;
      call_of_[c.layer + "\t" + c.phase] = i;
    }
  }

  // Replaces ex.calls; returns how many groups of calls were fused, how many of them as a
  // convolution's own post-ops, and how many calls they replace.
  struct Counts {
    int groups = 0, in_conv = 0, replaced = 0;
  };
  Counts run() {
    for (size_t l = 0; l < net_.layers.size(); ++l) {
      const LayerKind k = net_.layers[l].kind;
      if ((k == LayerKind::conv || k == LayerKind::fc) && !done_.count(l)) fuse_after(l);
    }
    Counts n;
    n.groups = static_cast<int>(passes_.size());
    if (passes_.empty()) return n;
    // The new order: each pass where the last call it replaces was, a convolution with post-ops
    // where it was; the replaced calls go, but a call whose output tensor the post-ops write
    // stays alive (retired).
    std::vector<std::unique_ptr<Call>> calls;
    for (size_t i = 0; i < ex_.calls.size(); ++i) {
      auto p = passes_.find(i);
      // The convolution's own call, with its post-ops.
      if (p != passes_.end() && p->second->inner) {
        p->second->inner = std::move(ex_.calls[i]);
        CallInfo& info = p->second->info;
        info.layer = p->second->inner->info.layer;
        info.phase = p->second->inner->info.phase + "+" + info.phase;
        info.impl = p->second->inner->info.impl;
        info.prim = p->second->inner->info.prim, info.desc = p->second->inner->info.desc;
        info.note = p->second->inner->info.note, info.flops = p->second->inner->info.flops;
        calls.push_back(std::move(p->second));
        ++n.in_conv;
        continue;
      }
      if (p != passes_.end()) {
        calls.push_back(std::move(p->second));
      } else if (!removed_.count(i)) {
        calls.push_back(std::move(ex_.calls[i]));
        continue;
      }
      ++n.replaced;
      const std::vector<const Tensor*> outs = ex_.calls[i]->outputs();
      if (std::any_of(outs.begin(), outs.end(), [&](const Tensor* t) { return written_.count(t); }))
        ex_.retired.push_back(std::move(ex_.calls[i]));
    }
    ex_.calls = std::move(calls);
    return n;
  }

 private:
  int only_consumer_of_kind(size_t l, LayerKind k) const {
    if (consumers_[l].size() != 1) return -1;
    const int c = consumers_[l][0];
    return net_.layers[c].kind == k && !done_.count(c) ? c : -1;
  }
  // The index of layer l's call of a phase, or -1.
  long call(size_t l, const std::string& phase) const {
    auto it = call_of_.find(net_.layers[l].name + "\t" + phase);
    return it == call_of_.end() ? -1 : static_cast<long>(it->second);
  }
  // Operand of producer p (conv or fc): its output, its bias, and the batch-norm b after it.
  Operand operand(size_t p, int b) const {
    Operand op;
    op.y = ex_.st[p].act;
    if (net_.layers[p].bias) op.bias = &ex_.st[p].b;
    if (b >= 0) op.bn = &ex_.st[b], op.bd = net_.layers[b].bnorm;
    return op;
  }

  static bool producer(const Layer& L) {
    return L.kind == LayerKind::conv || L.kind == LayerKind::fc;
  }

  void fuse_after(size_t l) {
    const Layer& P = net_.layers[l];
    auto pass = std::make_unique<PostOpsCall>();
    std::vector<size_t> fused;  // the layers after l whose calls the pass replaces
    int calls_replaced = P.bias ? 1 : 0;
    int last = static_cast<int>(l);
    int folded = -1;    // the producer of a batch-norm operand folded into the sum
    int residual = -1;  // the layer whose output the sum reads as it is
    const int bn = only_consumer_of_kind(l, LayerKind::bnorm);
    if (bn >= 0) fused.push_back(bn), last = bn;
    pass->a = operand(l, bn);
    if (bn >= 0 && net_.layers[bn].bnorm.relu) {
      pass->relu = true;  // its ReLU comes before whatever follows: the pass ends here
    } else {
      const int a = only_consumer_of_kind(last, LayerKind::add);
      const int other = a < 0 || net_.layers[a].inputs.size() != 2 ? -1
                        : net_.layers[a].inputs[0] == last         ? net_.layers[a].inputs[1]
                                                                   : net_.layers[a].inputs[0];
      if (other >= 0 && other != last) {
        fused.push_back(a), last = a;
        // A batch-norm that only feeds this sum, over a convolution or fc that only feeds the
        // batch-norm (a projection shortcut), is folded into the pass as well.
        const Layer& O = net_.layers[other];
        const int q = O.inputs.empty() ? -1 : O.inputs[0];
        if (O.kind == LayerKind::bnorm && !O.bnorm.relu && consumers_[other].size() == 1 &&
            q >= 0 && producer(net_.layers[q]) && consumers_[q].size() == 1 && !done_.count(q)) {
          pass->b = operand(q, other);
          fused.push_back(other);
          folded = q;
          calls_replaced += net_.layers[q].bias;
        } else {
          pass->b.y = ex_.st[other].act;
          residual = other;
        }
      }
      const int r = only_consumer_of_kind(last, LayerKind::act);
      if (r >= 0 && net_.layers[r].act.func == ActFunc::relu)
        fused.push_back(r), last = r, pass->relu = true;
    }
    // Worth a pass only where it replaces two calls or more.
    calls_replaced += static_cast<int>(fused.size());
    if (calls_replaced < 2) return;
    for (size_t k : fused)
      if (call(k, "fwd") < 0) return;  // a layer with no call of its own (not planned here)
    pass->out = const_cast<Tensor*>(ex_.st[last].act);
    pass->mb = net_.mb;
    pass->c = P.kind == LayerKind::conv ? P.conv.oc : P.fc_out;
    pass->hw = pass->out->size() / (pass->mb * pass->c);
    written_.insert(pass->out);
    if (P.bias) remove(l, "bias");
    if (folded >= 0) {
      remove(folded, "bias");
      done_.insert(folded);
    }
    // The pass runs where the last of the calls it replaces ran: everything it reads is ready.
    size_t at = 0;
    for (size_t k : fused) {
      remove(k, "fwd");
      at = std::max(at, static_cast<size_t>(call(k, "fwd")));
      done_.insert(k);
      // An add's own output before the ReLU is no longer written: its memory goes.
      if (static_cast<int>(k) != last && net_.layers[k].kind == LayerKind::add)
        ex_.st[k].own = Tensor(), ex_.st[k].act = nullptr;
    }
    CallInfo& info = pass->info;
    info.layer = P.name, info.impl = "native";
    info.phase = std::string(P.bias ? "+bias" : "") + (pass->a.bn ? "+bn" : "") +
                 (pass->b.y ? (pass->b.bn ? "+add_bn" : "+add") : "") + (pass->relu ? "+relu" : "");
    info.phase.erase(0, 1);
    done_.insert(l);
    const long in_conv = host(l, folded, residual, *pass);
    if (in_conv >= 0) at = static_cast<size_t>(in_conv);
    ready_[last] = static_cast<long>(at);
    passes_[at] = std::move(pass);
  }

  // The call after which layer x's output is final: its own, or the one that writes it for the
  // layers fused before; -1 for the input; LONG_MAX when not known.
  long ready(int x) const {
    auto it = ready_.find(x);
    if (it != ready_.end()) return it->second;
    if (net_.layers[x].kind == LayerKind::input) return -1;
    const long i = call(x, "fwd");
    return i < 0 ? std::numeric_limits<long>::max() : i;
  }

  // The post-ops inside a convolution instead of a pass: the later of the two producers (l, or
  // the projection `folded` whose batch-norm the sum reads; the other operand is then the
  // residual), where the residual is ready before it and its implementation takes post-ops
  // (Call::set_post_ops). Returns that convolution's call index (the pass becomes its call), or -1.
  long host(size_t l, int folded, int residual, PostOpsCall& pass) {
    long h = call(l, "fwd");
    const long hq = folded >= 0 ? call(folded, "fwd") : -1;
    const bool swap = hq > h;
    if (swap) {
      h = hq;
    } else if (residual >= 0 && ready(residual) >= h) {
      return -1;
    }
    const int layer = swap ? folded : static_cast<int>(l);
    if (h < 0 || net_.layers[layer].kind != LayerKind::conv) return -1;
    if (swap) std::swap(pass.a, pass.b);
    pass.update();  // which post-ops there are: the implementation may build its own from them
    if (!ex_.calls[h]->set_post_ops(&pass.ops, pass.out)) {
      if (swap) std::swap(pass.a, pass.b);
      return -1;
    }
    pass.inner = std::make_unique<NoCall>();  // placeholder until run() moves the call in
    return h;
  }

  void remove(size_t l, const std::string& phase) {
    const long i = call(l, phase);
    if (i >= 0) removed_.insert(static_cast<size_t>(i));
  }

  Executor::Impl& ex_;
  const Network& net_;
  std::vector<std::vector<int>> consumers_;
  std::unordered_map<std::string, size_t> call_of_;
  std::unordered_set<size_t> done_, removed_;
  std::unordered_set<const Tensor*> written_;
  std::unordered_map<size_t, std::unique_ptr<PostOpsCall>> passes_;  // at the call index
  std::unordered_map<int, long> ready_;  // ready(): the layers fused so far
};

}  // namespace

std::string Executor::Impl::fuse_native() {
  const auto n = NativeFuser(*this).run();
  if (n.groups == 0) return "";
  infos.clear();
  for (auto& c : calls) infos.push_back(c->info);
  return std::to_string(n.groups) + " passes for bias, batch-norm, add and ReLU (" +
         std::to_string(n.replaced) + " calls)" +
         (n.in_conv
              ? ", " + std::to_string(n.in_conv) + " of them as post-ops inside the convolution"
              : "");
}

}  // namespace pb
