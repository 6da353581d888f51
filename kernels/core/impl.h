// The one implementation interface (instantiated per primitive descriptor) and its registry.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

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

// Every implementation of primitive Desc implements this. prepare() is untimed; run() is the
// timed work (on OpenCL it only enqueues); sync() waits; result() returns the outputs, in the
// order the primitive's traits name them, after exactly one run() following prepare().
template <class Desc>
class Impl {
 public:
  virtual ~Impl() = default;
  virtual std::string name() const = 0;
  virtual Support supports(const Desc& d, Dir dir) const = 0;
  virtual void prepare(const Desc& d, Dir dir, const std::vector<const Tensor*>& inputs) = 0;
  virtual void run() = 0;
  virtual void sync() {}
  virtual std::vector<Tensor> result() = 0;
  virtual size_t workspace_bytes() const { return 0; }
  // Extra named figures an implementation wants reported (e.g. kernel-only time), optional.
  virtual std::vector<std::pair<std::string, double>> extra_counters() const { return {}; }

  // Network composition (kernels/net), optional. The tensors given to prepare() hold new
  // contents (the network's next step: new activations, updated weights): redo what prepare()
  // derived from them (weight repacks and transforms, copies into other layouts, argmax
  // records), keeping output_view() pointers valid. Part of the caller's timed step. Returns
  // false when not supported: the caller then prepares again and reads outputs via result().
  virtual bool refresh() { return false; }
  // The host tensor run() writes output i into, valid while refresh() works; nullptr when the
  // output lives elsewhere (a device, another layout) and only result() gives it.
  virtual const Tensor* output_view(size_t) const { return nullptr; }
  // Device residency (kernels/net's ocl backend), optional. Called before prepare(): input i's
  // contents live in the caller's OpenCL buffer dev[i] (a cl_mem; nullptr: upload in[i] as
  // usual), which prepare() and refresh() read in place, with no host transfers; refresh() then
  // redoes on the device what derives from them. Returns false when not supported.
  virtual bool bind_device(const std::vector<void*>&) { return false; }
  // The OpenCL buffer (a cl_mem) run() writes output i into, valid while refresh() works, or
  // nullptr.
  virtual void* device_output(size_t) const { return nullptr; }
};

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
