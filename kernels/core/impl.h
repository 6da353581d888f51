// The one implementation interface (instantiated per primitive descriptor) and its registry.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/core/post_ops.h"
#include "kernels/core/tensor.h"

namespace pb {

// Direction of a run (benchdnn's --dir). Not part of a descriptor.
enum class Dir { fwd, bwd_d, bwd_w, bwd };
std::string dir_str(Dir d);
Dir parse_dir(const std::string& s);  // throws InputError("dir", ...)

// Whether an implementation runs a problem; when not, why (not an error).
struct Support {
  bool ok = true;
  std::string reason;
  static Support yes() { return {}; }
  static Support no(std::string why) { return {false, std::move(why)}; }
  explicit operator bool() const { return ok; }
};

// Every implementation of primitive Desc implements this, in explicit phases (ARCHITECTURE.md,
// "One interface per primitive, in explicit phases"); the timing contracts (kernel, layer, step)
// time the same phases for every implementation:
//   plan()          never timed: allocate, build programs, plan FFTs, create vendor primitives,
//                   keep (or upload) the inputs. Nothing derived from the weights' values.
//   weights()       everything derived from the weights' values: repacks, Winograd/FFT filter
//                   transforms, vendor weight reorders. Called after plan() and again whenever
//                   the weights change; timed only by the `step` contract.
//   forward_state() what a backward needs from the forward it differentiates, derived from the
//                   activation inputs (RNN: the forward's activations; max pooling: its argmax),
//                   as benchdnn hands a backward the forward's workspace: never timed by a
//                   contract; a network calls it each step before run().
//   reorder_in()    activations from the canonical layout into the implementation's own;
//   run()           the computation (on OpenCL it only enqueues);
//   reorder_out()   outputs from its own layout back into the canonical one (output_view()).
//                   `kernel` times run() alone, `layer` reorder_in + run + reorder_out, `step`
//                   weights + layer. Implementations that compute in the canonical layout leave
//                   the reorders empty.
//   sync()          waits for the enqueued work.
// result() returns the outputs in the canonical layout, in the order the primitive's traits name
// them, after exactly one reorder_in, run, reorder_out following plan() and weights().
template <class Desc>
class Impl {
 public:
  virtual ~Impl() = default;
  virtual std::string name() const = 0;
  virtual Support supports(const Desc& d, Dir dir) const = 0;
  virtual void plan(const Desc& d, Dir dir, const std::vector<const Tensor*>& inputs) = 0;
  virtual void weights() {}
  virtual void forward_state() {}
  virtual void reorder_in() {}
  virtual void run() = 0;
  virtual void reorder_out() {}
  virtual void sync() {}
  virtual std::vector<Tensor> result() = 0;
  virtual size_t workspace_bytes() const { return 0; }
  // Extra named figures an implementation wants reported (e.g. kernel-only time), optional.
  virtual std::vector<std::pair<std::string, double>> extra_counters() const { return {}; }

  // Where tensors live (the bind phase; kernels/net), optional. The tensors given to plan() are
  // read in place, so a network writes its next step's activations and weights into them and
  // calls the phases again. output_view(i): the host tensor (canonical layout) that
  // reorder_out() leaves output i in, valid for the implementation's life; nullptr when the
  // output lives elsewhere (a device) and only result() gives it.
  virtual const Tensor* output_view(size_t) const { return nullptr; }
  // Whether the phases read plan()'s inputs in place (host tensors, or bound device buffers), so
  // that new contents need no new plan(); false where plan() copied them (an OpenCL
  // implementation uploading host tensors): a network then plans again each step.
  virtual bool reads_inputs_in_place() const { return true; }
  // Device residency (kernels/net's ocl backend), optional. Called before plan(): input i's
  // contents live in the caller's OpenCL buffer dev[i] (a cl_mem; nullptr: upload in[i] as
  // usual), which plan() and the later phases read in place, with no host transfers. Returns
  // false when not supported.
  virtual bool bind_device(const std::vector<void*>&) { return false; }
  // The OpenCL buffer (a cl_mem) run() writes output i into, or nullptr.
  virtual void* device_output(size_t) const { return nullptr; }
  // Reduced data types in a network (a descriptor's dt; kernels/net), optional. plan() converted
  // the inputs to the implementation's type as values exact in it; a network's activations are
  // real values that change every step, so it calls quantise(i) for each of them before a run
  // (timed as the layer's quantise step): bf16/f16 rounding to nearest even, or for a u8 source
  // round(x / src_scale) + src_zero saturated to [0, 255] with the problem's own scale and zero
  // point; other inputs (the s8 weights) are converted as plan() does. False where input i has
  // no typed copy to refresh (the weights of a convolution: weights() converts them).
  virtual bool quantise(size_t) { return false; }
  // And instead of quantise(i), optional: from now on (until the next plan()) input i's typed copy
  // is read from *typed, which holds it in the layout and type quantise(i) would make (a
  // producer's post-ops write it before each run: post_ops.h's typed copy), and quantise(i) does
  // nothing. False where not supported (nothing changes).
  virtual bool read_typed_input(size_t, const std::vector<uint8_t>*) { return false; }
  // Post-ops fused into the output (post_ops.h; kernels/net's inference fuses a convolution's
  // bias, batch-norm, residual add and ReLU so), optional, after plan(): from then on run() writes
  // its output with *p applied into *dst (the caller's tensor of the output's shape) instead of
  // its own (which it may free), and output_view(0) and result() give *dst. Channel c of the
  // output is p's channel c, its residual a tensor of the output's shape, neither *dst. p is read
  // at every run (its values and addresses may change between runs; which of its pointers are
  // null and relu may not: an implementation may build its post-ops from them here); p and dst
  // must outlive the runs. False where not supported: nothing changes.
  virtual bool set_post_ops(const PostOps*, Tensor*) { return false; }
  // Whether set_post_ops's post-ops also write PostOps' typed copy (post_ops.h): true where the
  // implementation applies them through apply_post_ops or direct::scatter_tile_post (the host
  // convolutions); false where another library applies its own (oneDNN's), which never writes it.
  virtual bool post_ops_write_typed_copy() const { return false; }
};

// The untimed phases in order, for callers outside the timing drivers (tests, the executor):
// plan, weights, forward_state.
template <class Desc>
void plan_phases(Impl<Desc>& impl, const Desc& d, Dir dir, const std::vector<const Tensor*>& in) {
  impl.plan(d, dir, in);
  impl.weights();
  impl.forward_state();
}
// One call in the layer contract's order: reorder_in, run, reorder_out, sync.
template <class Desc>
void run_phases(Impl<Desc>& impl) {
  impl.reorder_in();
  impl.run();
  impl.reorder_out();
  impl.sync();
}

// One registry line: the name, a factory, and why it is unavailable here ("" when available),
// e.g. "no OpenCL device: ..." or "built without oneDNN".
template <class Desc>
struct RegistryEntry {
  using Factory = std::function<std::unique_ptr<Impl<Desc>>()>;
  using Why = std::function<std::string()>;
  RegistryEntry(std::string n, Factory f, Why w = nullptr)
      : name(std::move(n)), make(std::move(f)), unavailable_(std::move(w)) {}
  std::string unavailable() const { return unavailable_ ? unavailable_() : std::string(); }
  std::string name;
  Factory make;

 private:
  Why unavailable_;
};

template <class Desc>
using Registry = std::vector<RegistryEntry<Desc>>;

}  // namespace pb
