// Networks in reduced precision (NetOptions::dt): convolution and fc calls in the type with fp32
// outputs, each after a quantise step; u8s8's per-channel weight quantisation and its source
// calibration (the fp32 network's input ranges on the synthetic batch); fp32 where no
// implementation runs a call in the type.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kernels/conv/traits.h"
#include "kernels/core/error.h"
#include "kernels/core/quant.h"
#include "kernels/gemm/traits.h"
#include "kernels/net/executor_impl.h"
#include "kernels/net/precision.h"

namespace pb {

namespace {

// Before a typed call: its activation inputs converted to the type every step, its weights (an
// fc layer's A: the convolutions convert theirs in weights()) when they changed.
struct QuantiseCall : Call {
  Call* call = nullptr;
  std::vector<size_t> acts, weights;
  std::vector<const Tensor*> act_tensors;  // the call's inputs acts[k]
  // How its activations are quantised (as the call's implementation does it): the type, and a u8
  // source's 1 / scale and zero point.
  PostOps::Q kind = PostOps::Q::none;
  float inv = 1, zero = 0;
  const int* weights_version = nullptr;
  int seen = std::numeric_limits<int>::min();
  void run() override {
    for (size_t i : acts) call->quantise(i);
    if (seen == *weights_version) return;
    for (size_t i : weights) call->quantise(i);
    seen = *weights_version;
  }
};

// Which inputs of a typed call are activations and which weights: a convolution's activations are
// src (fwd), diff_dst (bwd_d), src and diff_dst (bwd_w); an fc layer's GEMMs read the weights as A
// in fwd (W x) and bwd_d (W^T dy), and two activations in bwd_w (dy x^T).
void typed_inputs(const std::string& prim, const std::string& phase, Dir dir,
                  std::vector<size_t>* acts, std::vector<size_t>* weights) {
  if (prim == "conv") {
    *acts = dir == Dir::bwd_w ? std::vector<size_t>{0, 1} : std::vector<size_t>{0};
  } else if (phase == "bwd_w") {
    *acts = {0, 1};
  } else {
    *acts = {1}, *weights = {0};
  }
}

int64_t channels_of(const ConvDesc& d) {
  return d.oc;
}
int64_t channels_of(const GemmDesc& d) {
  return d.m;
}

}  // namespace

template <class Traits, class Desc>
const std::vector<const Tensor*>& Executor::Impl::add_typed(const std::string& layer,
                                                            const std::string& phase, Desc d,
                                                            Dir dir, std::vector<const Tensor*> in,
                                                            size_t l) {
  if (opt.dt.is_f32()) return add<Traits>(layer, phase, d, dir, in);
  Desc t = d;
  t.dt = DataType::parse(opt.dt.in_str(), "dt");  // fp32 outputs
  std::vector<const Tensor*> tin = in;
  const bool conv = std::string(Traits::kPrim) == "conv";
  if (t.dt.integer()) {  // inference: the forward only (the executor refuses u8s8 training)
    State& s = st[l];
    const size_t wi = conv ? 1 : 0;  // the weights' input
    quantise_weights(*in[wi], channels_of(d), conv, &s.q_w, &s.q_wscale);
    const auto it = opt.calibration.input_ranges.find(layer);
    if (it == opt.calibration.input_ranges.end())
      throw RuntimeError("dt u8s8: no calibration for layer " + layer);
    float scale = 1;
    int32_t zero = 0;
    calibrate_u8(it->second.first, it->second.second, &scale, &zero);
    s.q_src_scale = Tensor({1}), s.q_src_zero = Tensor({1}), s.q_dst_scale = Tensor({1});
    s.q_src_scale[0] = scale, s.q_src_zero[0] = static_cast<float>(zero), s.q_dst_scale[0] = 1;
    tin[wi] = &s.q_w;
    for (const Tensor* q : {&s.q_wscale, &s.q_src_scale, &s.q_src_zero, &s.q_dst_scale})
      tin.push_back(q);
  }
  try {
    const std::vector<const Tensor*>& out = add<Traits>(layer, phase, t, dir, tin);
    auto q = std::make_unique<QuantiseCall>();
    q->call = calls.back().get();
    typed_inputs(Traits::kPrim, phase, dir, &q->acts, &q->weights);
    for (size_t i : q->acts) q->act_tensors.push_back(in[i]);
    if (t.dt.in == DataType::bf16) q->kind = PostOps::Q::bf16;
    if (t.dt.integer()) {
      const State& s = st[l];
      q->kind = PostOps::Q::u8, q->inv = 1.0f / s.q_src_scale[0], q->zero = s.q_src_zero[0];
    }
    q->weights_version = &weights_version;
    if (!q->call->quantise(q->acts[0]))
      throw RuntimeError(layer + " " + phase + ": " + q->call->info.impl + " runs dt " +
                         t.dt.str() + " but cannot quantise its inputs again");
    q->info.layer = layer, q->info.phase = phase + " quantise";
    q->info.impl = "native";
    q->info.note = "fp32 -> " + t.dt.in_str();
    calls.insert(calls.end() - 1, std::move(q));
    return out;
  } catch (const Unsupported&) {  // add() named every candidate's reason: primbench run has them
  }
  const std::vector<const Tensor*>& out = add<Traits>(layer, phase, d, dir, in);
  CallInfo& info = calls.back()->info;
  info.note = "fallback to f32: no implementation runs " + phase + " in " + t.dt.str() +
              (info.note.empty() ? "" : "; " + info.note);
  ++fallbacks;
  return out;
}

template const std::vector<const Tensor*>& Executor::Impl::add_typed<ConvTraits, ConvDesc>(
    const std::string&, const std::string&, ConvDesc, Dir, std::vector<const Tensor*>, size_t);
template const std::vector<const Tensor*>& Executor::Impl::add_typed<GemmTraits, GemmDesc>(
    const std::string&, const std::string&, GemmDesc, Dir, std::vector<const Tensor*>, size_t);

void Executor::Impl::calibrate_inputs() {
  if (opt.dt.is_f32() || !opt.calibration.empty()) return;
  NetOptions f = opt;
  f.dt = DataType();
  f.policy = "first";
  f.find_cache = "off";
  f.composed = true;
  if (f.backend == "ocl") f.backend = "cpu";
  Executor fp32(net, f);
  fp32.step();
  opt.calibration = fp32.calibration();
}

std::string Executor::Impl::hand_off_typed() {
  if (opt.dt.is_f32() || opt.train) return "";
  // The tensors the post-ops passes write, and the passes. No later call writes such a tensor:
  // the executor's in-place steps on a layer's output (a bias) are the ones a pass replaces.
  struct Writer {
    PostOps* ops;
    size_t call;
  };
  std::unordered_map<const Tensor*, Writer> writer;
  for (size_t i = 0; i < calls.size(); ++i) {
    const Tensor* out = nullptr;
    if (PostOps* p = calls[i]->fused_post_ops(&out)) writer[out] = {p, i};
  }
  int fused = 0;
  std::unordered_map<const Tensor*, std::vector<uint8_t>*> buffer;
  for (size_t i = 0; i < calls.size(); ++i) {
    auto* q = dynamic_cast<QuantiseCall*>(calls[i].get());
    if (!q || q->kind == PostOps::Q::none) continue;
    for (size_t k = 0; k < q->acts.size();) {
      const Tensor* t = q->act_tensors[k];
      auto w = writer.find(t);
      if (w == writer.end() || w->second.call > i) {
        ++k;
        continue;
      }
      PostOps& ops = *w->second.ops;
      const bool same = ops.q_kind == q->kind && ops.q_inv == q->inv && ops.q_zero == q->zero;
      if (ops.q && !same) {  // another reader's quantisation: this one keeps its step
        ++k;
        continue;
      }
      std::vector<uint8_t>*& buf = buffer[t];
      if (!buf) {
        const int64_t elem = PostOps::q_bytes(q->kind);
        typed_acts.push_back(std::make_unique<std::vector<uint8_t>>(t->size() * elem));
        buf = typed_acts.back().get();
      }
      if (!q->call->read_typed_input(q->acts[k], buf)) {
        ++k;
        continue;
      }
      ops.q_kind = q->kind, ops.q_inv = q->inv, ops.q_zero = q->zero, ops.q = buf->data();
      q->acts.erase(q->acts.begin() + static_cast<long>(k));
      q->act_tensors.erase(q->act_tensors.begin() + static_cast<long>(k));
      ++fused;
    }
  }
  // A quantise step with nothing left to convert goes.
  std::vector<std::unique_ptr<Call>> kept;
  for (auto& c : calls) {
    auto* q = dynamic_cast<QuantiseCall*>(c.get());
    if (!q || !q->acts.empty() || !q->weights.empty()) kept.push_back(std::move(c));
  }
  calls = std::move(kept);
  infos.clear();
  for (auto& c : calls) infos.push_back(c->info);
  if (fused == 0) return "";
  int shared = 0;
  for (const auto& b : buffer) shared += writer[b.first].ops->q != nullptr;
  return std::to_string(fused) + " quantise steps fused into the post-ops before them (" +
         std::to_string(shared) + " typed activations)";
}

NetCalibration Executor::calibration() const {
  if (p_->composition.rfind("fused", 0) == 0)
    throw RuntimeError("calibration() reads the composed plan's activations; " + p_->net.name +
                       " is fused (NetOptions::composed)");
  p_->pull();
  NetCalibration c;
  for (const Impl::Calibration& b : p_->calib)
    c.bnorm[p_->net.layers[b.layer].name] = {
        std::vector<float>(b.mean->data(), b.mean->data() + b.mean->size()),
        std::vector<float>(b.var->data(), b.var->data() + b.var->size())};
  auto& r = c.input_ranges;
  const Network& n = p_->net;
  for (size_t l = 0; l < n.layers.size(); ++l) {
    const Layer& L = n.layers[l];
    if ((L.kind != LayerKind::conv && L.kind != LayerKind::fc) || L.inputs.empty()) continue;
    const Tensor& x = *p_->st[L.inputs[0]].act;
    float lo = std::numeric_limits<float>::infinity(), hi = -lo;
    const float* v = x.data();
    const int64_t size = x.size();
#pragma omp parallel for reduction(min : lo) reduction(max : hi) schedule(static)
    for (int64_t i = 0; i < size; ++i) lo = std::min(lo, v[i]), hi = std::max(hi, v[i]);
    r[L.name] = {lo, hi};
  }
  return c;
}

PrecisionCheck compare_logits(const Tensor& got, const Tensor& f32, int64_t images) {
  if (got.size() != f32.size() || images <= 0 || f32.size() % images)
    throw RuntimeError("logits of " + std::to_string(got.size()) + " and " +
                       std::to_string(f32.size()) + " values for " + std::to_string(images) +
                       " images do not compare");
  PrecisionCheck c;
  c.images = images;
  const int64_t classes = f32.size() / images;
  double err = 0, ref = 0;
  for (int64_t n = 0; n < images; ++n) {
    const float* a = got.data() + n * classes;
    const float* b = f32.data() + n * classes;
    c.agree += std::max_element(a, a + classes) - a == std::max_element(b, b + classes) - b;
    for (int64_t k = 0; k < classes; ++k)
      err += (static_cast<double>(a[k]) - b[k]) * (static_cast<double>(a[k]) - b[k]),
          ref += static_cast<double>(b[k]) * b[k];
  }
  c.logit_err = ref > 0 ? std::sqrt(err / ref) : std::sqrt(err);
  return c;
}

void check_net_dt(const DataType& dt, bool train, const std::string& backend,
                  const std::string& field) {
  if (dt.is_f32()) return;
  if (dt.in != DataType::bf16 && dt.in != DataType::u8s8)
    throw InputError(field, "networks run bf16 or u8s8, not " + dt.in_str());
  if (dt.out != DataType::out_f32)
    throw InputError(
        field, "give the input type only (" + dt.in_str() + "): every layer's output stays fp32");
  if (dt.integer() && train)
    throw InputError(field, "u8s8 is inference: a training step runs in bf16 (or fp32)");
  if (backend == "ref")
    throw InputError(field,
                     "the ref backend computes in fp64 from fp32 tensors: no " + dt.in_str());
}

std::string precision_summary(const DataType& dt, bool train) {
  if (dt.is_f32()) return "fp32";
  const std::string t = dt.in_str();
  std::string s = "convolution and fc layers in " + t;
  if (dt.integer())
    s += " (s8 weights quantised once at plan time, one scale per output channel; u8 "
         "activations with a scale and zero point per layer calibrated on the synthetic batch by "
         "the fp32 network; int32 sums dequantised to fp32 by the output scales)";
  else if (train)
    s += " (forward, backward data and weights; fp32 master weights and SGD update, converted "
         "to bf16 each step; fp32 gradients out)";
  else
    s += " (weights rounded to bf16 once at plan time; fp32 outputs)";
  return s + "; pooling, batch-norm, activations, residual adds, concat, LRN and the loss in " +
         "fp32, between quantise steps that convert each typed layer's fp32 activations to " +
         (dt.integer() ? std::string("u8") : t) +
         " (where the plan's composition says so, fused into the post-ops before the layer)";
}

}  // namespace pb
