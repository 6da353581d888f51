// The network executor's private state (executor.cpp: calls and device residency; plan.cpp:
// the calls and buffers of each layer kind).
#pragma once

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kernels/core/impl.h"
#include "kernels/net/device_ops.h"
#include "kernels/net/executor.h"
#include "kernels/net/find_cache.h"

namespace pb {

// One call of a step.
struct Call {
  CallInfo info;
  virtual ~Call() = default;
  virtual void run() = 0;
  virtual size_t bytes() const { return 0; }  // outputs and workspaces it holds
  // The host tensors it writes (a primitive call's outputs); none for the executor's own steps,
  // whose tensors the executor owns.
  virtual std::vector<const Tensor*> outputs() const { return {}; }
  // A primitive call of a reduced type: its implementation's quantise(i) (impl.h); false for
  // the executor's own steps.
  virtual bool quantise(size_t) { return false; }
  // A primitive call whose implementation reads its inputs in place: its set_post_ops(p, dst)
  // (impl.h); false otherwise.
  virtual bool set_post_ops(const PostOps*, Tensor*) { return false; }
  // A primitive call of a reduced type: its implementation's read_typed_input(i, buf) (impl.h);
  // false otherwise.
  virtual bool read_typed_input(size_t, const std::vector<uint8_t>*) { return false; }
  // A primitive call: its implementation's post_ops_write_typed_copy() (impl.h).
  virtual bool post_ops_write_typed_copy() const { return false; }
  // The executor's post-ops pass (fuse_native.cpp, alone or inside its convolution) where it
  // writes PostOps' typed copy when given one (its own pass, or a convolution whose
  // implementation's post-ops do): the post-ops it applies at each run and the tensor it writes
  // (*out); nullptr for any other call.
  virtual PostOps* fused_post_ops(const Tensor** /*out*/) { return nullptr; }
};

struct Executor::Impl {
  Network net;
  NetOptions opt;
  FindCache cache;
  std::vector<std::unique_ptr<Call>> calls;
  std::vector<CallInfo> infos;
  int fallbacks = 0;
  int64_t baseline_rss = -1;  // before the plan (Executor::baseline_rss_bytes)
  size_t baseline_device = 0;

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
    std::vector<Tensor> parts;           // concat: its inputs' gradients (slices of its own)
    Tensor dx;                           // dropout: its input's gradient
    uint64_t drop_seed = 0;              // dropout: the seed of its masks (with the step)
    // u8s8 (lowp.cpp): the s8 weights and their per-channel scales, the source's scale and zero
    // point from the calibration, the output's scale.
    Tensor q_w, q_wscale, q_src_scale, q_src_zero, q_dst_scale;

    // Inference batch-norm (this state, desc d) of y + bias in channel k as y * g + o:
    // g = gamma / sqrt(var + eps), o = (bias - mean) * g + beta (the fused plans fold it).
    std::pair<double, double> bn_fold(const BnormDesc& d, int64_t k, double bias) const {
      const double g = (d.scale ? scale[k] : 1.0) / std::sqrt(double(rvar[k]) + d.eps);
      return {g, (bias - rmean[k]) * g + (d.shift ? shift[k] : 0.0)};
    }
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
  // The host's input or labels were handed out for writing: from then on every step uploads
  // them first (untimed), since the caller may write them at any time (no step changes them).
  bool push_due = false;
  // The weights were handed out (params()): every step uploads them too. Apart from push_due,
  // so that handing out the input does not put the host's (stale) weights over the device's
  // updated ones at every step.
  bool push_weights = false;
  // Moves when the weights may have changed (each training step, params()): calls redo weights().
  int weights_version = 0;
  // Training steps run (dropout draws a new mask each step from the seed and this count).
  uint64_t steps_run = 0;

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
  void pull();
  // Before a step: the input, labels and weights the caller may have changed, uploaded.
  void push();

  // Candidate implementations of one call, in registry order, for a backend prefix.
  template <class Traits, class Desc>
  std::vector<std::unique_ptr<pb::Impl<Desc>>> candidates(const std::string& prefix, const Desc& d,
                                                          Dir dir,
                                                          const std::vector<const Tensor*>& in,
                                                          std::string* why_not);
  std::vector<void*> device_inputs(const std::vector<const Tensor*>& in);
  static double time_once(Call& c);
  // Plans one primitive call: picks the implementation by backend and policy, prepares it;
  // returns its outputs (executor.cpp instantiates it for every primitive's traits).
  template <class Traits, class Desc>
  const std::vector<const Tensor*>& add(const std::string& layer, const std::string& phase, Desc d,
                                        Dir dir, std::vector<const Tensor*> in);
  // A convolution or fc call in NetOptions::dt (lowp.cpp): the call in the type (u8s8: with
  // layer l's quantised weights and calibrated source) after its quantise step, or, where no
  // implementation runs it in the type, in fp32 (a reported fallback); plain add() for fp32.
  template <class Traits, class Desc>
  const std::vector<const Tensor*>& add_typed(const std::string& layer, const std::string& phase,
                                              Desc d, Dir dir, std::vector<const Tensor*> in,
                                              size_t l);
  // A reduced type without a given calibration: runs the network once in fp32 for it.
  void calibrate_inputs();
  // After fuse_native, a reduced type (lowp.cpp): where a post-ops pass writes the input of typed
  // convolutions, it writes their typed copy as well (PostOps' typed copy, one buffer shared by
  // every such reader with the same quantisation), and their quantise steps go. Returns "N
  // quantise steps fused into the post-ops of the layers before", or "" when none.
  std::string hand_off_typed();
  std::vector<std::unique_ptr<std::vector<uint8_t>>> typed_acts;  // hand_off_typed's buffers
  // One of the executor's own steps: `host` on host tensors, or `device` (given the DeviceOps)
  // when the plan keeps every layer on the device.
  void add_native(const std::string& layer, const std::string& phase, std::function<void()> host,
                  std::function<void(net::DeviceOps&)> device);

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
    size_t call, layer;
    BnormDesc d;
    const Tensor* x;
    Tensor *mean, *var;
  };
  std::vector<Calibration> calib;
  void calibrate();
  // Backend onednn: replaces every call but the loss (and the SGD updates) with oneDNN
  // primitives in their own layouts, with fused post-ops in inference (vendor/onednn_fused.cpp).
  // False, with *why, when a layer has no fused form (the composed calls stay).
  bool fuse_onednn(std::string* why);
  // Inference on the host (fuse_native.cpp): each convolution or fc layer's bias and the
  // inference batch-norm, residual add and ReLU after it run as one pass over its output; the
  // replaced calls go. Returns "N passes for ... (M calls)", or "" when there was nothing to fuse.
  std::string fuse_native();
  // Composed calls a fused plan replaced but whose outputs it still uses (the loss layer's
  // input; training: the weight gradients the SGD update reads); the others are freed.
  std::vector<std::unique_ptr<Call>> retired;
  std::string composition = "composed";  // "fused ...", or "composed" and why
  int reorders = -1;        // layout conversions per step of a fused plan (-1: not counted)
  int weight_reorders = 0;  // of them, of weights or weight gradients (training)
  int fused_version = -1;   // weights_version the fused plan was made with (-1: not fused)
  void refuse_if_weights_changed();
  void plan();
  void plan_forward(size_t l);
  void plan_backward(size_t l);
  void plan_update(size_t l);
  const Tensor* grad_of(size_t l);
};

}  // namespace pb
