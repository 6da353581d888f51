// The network executor: runs a Network's layers on the primitives' registered implementations,
// for inference (forward) or a training step (forward, softmax cross-entropy, backward through
// every layer, SGD update). Buffers are planned and implementations prepared once; every step
// reuses them. Each primitive call is timed, so a step splits exactly into its layers.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/core/dtype.h"
#include "kernels/core/tensor.h"
#include "kernels/net/network.h"

namespace pb {

// What a network in reduced precision takes from the fp32 network on the synthetic batch
// (Executor::calibration()): the range (min, max) of each convolution and fc layer's input, keyed
// by layer name (u8s8: the source's scale and zero point), and inference batch-norm's running
// mean and variance (so that the typed network is the fp32 model quantised, not one calibrated on
// its own typed activations).
struct NetCalibration {
  std::map<std::string, std::pair<float, float>> input_ranges;
  std::map<std::string, std::pair<std::vector<float>, std::vector<float>>> bnorm;
  bool empty() const { return input_ranges.empty() && bnorm.empty(); }
};

struct NetOptions {
  // Which implementations run: "cpu" (cpu/*), "onednn" (onednn/*), "ocl" (ocl/*) or "ref" (the
  // fp64 reference kernels, for checks). A layer the backend cannot run falls back to cpu/*,
  // and the fallback is reported.
  std::string backend = "cpu";
  // "best": each call's fastest supporting implementation, timed once and cached in
  // find_cache; "first": the backend's first supporting one in registry order; otherwise an
  // algorithm name ("im2col", "winograd_f4", ...) used by every call that supports it.
  std::string policy = "best";
  bool train = false;
  float lr = 0.01f;   // SGD step on the mean loss over the batch
  uint64_t seed = 1;  // weights and the synthetic batch
  // The synthetic batch (input, labels) and dropout's masks from this seed instead of `seed`
  // when not 0: data-parallel ranks share the weights' seed and draw batches of their own.
  uint64_t data_seed = 0;
  std::string find_cache;  // "" = $PRIMBENCH_FIND_CACHE, else ~/.cache/primbench/find.tsv
  // Backend onednn: compose oneDNN's primitives layer by layer through NCHW (as every other
  // backend) instead of the fused plan in oneDNN's own layouts (the default, inference and
  // training). Backend cpu in inference: one call per layer instead of one pass for the bias,
  // batch-norm, residual add and ReLU after each convolution or fc (the default).
  bool composed = false;
  // Reduced precision (lowp.cpp): convolution and fc layers run in this type (u8s8: inference;
  // bf16: inference or training with fp32 master weights) with fp32 outputs, every other layer
  // in fp32, each typed call after a quantise step that converts its activations (and, training,
  // the fc weights) to the type; u8s8 weights are quantised once at plan time with one scale per
  // output channel. A call no implementation runs in the type falls back to fp32 (reported).
  DataType dt;
  // With dt, inference, fused on the host (not composed): where a post-ops pass (the bias,
  // batch-norm, add and ReLU after a convolution) writes the input of typed convolutions, it
  // also writes their typed copy, and their quantise steps go (Executor::Impl::hand_off_typed).
  // False: every typed call keeps its quantise step (the figures before; same values bit for bit).
  bool typed_handoff = true;
  // The fp32 network's calibration (dt other than f32); empty: the executor runs the fp32
  // network once itself to find it.
  NetCalibration calibration;
};

// One primitive call of a step, as planned.
struct CallInfo {
  std::string layer, phase;  // e.g. "res2a_conv2", "fwd" / "bwd_d" / "bwd_w" / "bias" / "sgd"
  std::string prim, desc;    // "conv", the descriptor text ("" for the executor's own steps)
  std::string impl;          // "cpu/im2col", or "native" for the executor's own steps
  std::string note;          // why this impl: "best of 4", "fallback: ...", "cached"
  double last_ms = 0;        // its time in the last step
  double flops = 0;
};

// Sees a step from inside (data-parallel training): after_call(i) once call i has run;
// before_update() before the first SGD update call (training), when every gradient is final.
class StepObserver {
 public:
  virtual ~StepObserver() = default;
  virtual void after_call(size_t) {}
  virtual void before_update() {}
};

// Throws InputError ("backend" or "policy") when opt names a backend or policy that does not
// exist (the Executor checks this first; bench_networks checks its flags with it up front).
void check_net_options(const NetOptions& opt);

class Executor {
 public:
  Executor(const Network& net, const NetOptions& opt);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // One inference pass or one training step (per options); returns its wall time in ms.
  // `observer`, when given, is called between the calls (its time is in the step's).
  double step(StepObserver* observer = nullptr);
  // Training: the index of the first SGD update call (the updates run last).
  size_t update_begin() const;
  // Training: for each trainable tensor (params() order), the call after which its gradient is
  // final: the last call of its layer before the updates.
  std::vector<size_t> grad_ready_after() const;
  // The mean cross-entropy loss of the last step (training, or inference with a loss layer).
  double loss() const;
  // The last layer's input of the loss (logits) or the last layer's output (no loss layer).
  const Tensor& output() const;
  // Per-call isolated time: each call run `reps` times on its own (after one step), the
  // minimum kept; the sum is what the step would take with no composition overhead.
  std::vector<double> isolated_ms(int reps);

  const std::vector<CallInfo>& calls() const;
  // Backend ocl: "device" (every layer's tensors stay on the device) or "host round trips: <why>";
  // "" for the host backends.
  const std::string& residency() const;
  // How the plan composes the backend's primitives: "composed", or "fused ..." (onednn:
  // oneDNN layouts and post-ops; cpu: one pass after each convolution or fc); reorders(): its
  // layout conversions per step, -1 when not counted.
  const std::string& composition() const;
  int reorders() const;
  const Network& network() const;
  // Bytes of every buffer the plan holds: activations, gradients, weights, the
  // implementations' outputs and workspaces.
  size_t planned_bytes() const;
  // What the process held before this executor planned: resident bytes (after returning free
  // heap memory), and bytes of OpenCL buffers; measured peaks are reported above them.
  int64_t baseline_rss_bytes() const;
  size_t baseline_device_bytes() const;
  int fallbacks() const;
  // After a step: the input ranges of the last step and the running statistics inference
  // batch-norm was calibrated with (NetOptions::calibration).
  NetCalibration calibration() const;

  // For checks: the network's input and labels (set before step()), every trainable tensor
  // and its gradient after a training step (same order), named "<layer>.<what>". On the device
  // these are host copies, downloaded by any of these calls after a step (untimed); once the
  // input or labels were handed out, every step first uploads them (untimed), and once the
  // weights were (params()), every step uploads them too.
  Tensor& input();
  Tensor& labels();
  std::vector<std::pair<std::string, Tensor*>> params();
  std::vector<const Tensor*> param_grads();
  // The trainable tensors for reading only (host copies downloaded first, as params() does,
  // but nothing is uploaded before the next step).
  std::vector<std::pair<std::string, const Tensor*>> param_values();
  // Backend ocl with every tensor on the device: the device buffer (a cl_mem) holding host
  // tensor t (a weight, a gradient); nullptr when t lives on the host.
  void* device_buffer(const Tensor* t) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> p_;
};

}  // namespace pb
