// TypedProblem<Traits>: turns a primitive's descriptor, registry, input generator and reference
// into the type-erased Problem the drivers use. A primitive supplies a Traits struct:
//   using Desc;                                  parse(), str(), name, flops(Dir), bytes(Dir)
//   static constexpr const char* kPrim;
//   static const Registry<Desc>& registry();
//   static std::vector<NamedTensor> make_inputs(const Desc&, Dir, uint64_t seed);
//   static std::vector<std::string> output_names(const Desc&, Dir);
//   static bool exact_data(const Desc&, Dir);    inputs are integers, scalars dyadic
//   static std::string layout(const Desc&, Dir);
//   static int64_t output_size(const Desc&, Dir, size_t output);
//   static std::vector<Tensor64> reference(const Desc&, Dir, const std::vector<const Tensor*>&);
//   static double reference_at(const Desc&, Dir, const std::vector<const Tensor*>&,
//                              size_t output, int64_t index);
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "kernels/core/check.h"
#include "kernels/core/dtype.h"
#include "kernels/core/error.h"
#include "kernels/core/fill.h"
#include "kernels/core/machine.h"
#include "kernels/core/problem.h"

namespace pb {

template <class Desc>
class ImplRunner : public Runner {
 public:
  ImplRunner(std::unique_ptr<Impl<Desc>> impl, std::string name, const Desc& d, Dir dir,
             std::vector<const Tensor*> inputs)
      : impl_(std::move(impl)),
        name_(std::move(name)),
        d_(d),
        dir_(dir),
        inputs_(std::move(inputs)) {}
  std::string name() const override { return name_; }
  void plan() override { impl_->plan(d_, dir_, inputs_); }
  void weights() override { impl_->weights(); }
  void forward_state() override { impl_->forward_state(); }
  void reorder_in() override { impl_->reorder_in(); }
  void run() override { impl_->run(); }
  void reorder_out() override { impl_->reorder_out(); }
  void sync() override { impl_->sync(); }
  std::vector<Tensor> result() override { return impl_->result(); }
  size_t workspace_bytes() const override { return impl_->workspace_bytes(); }
  std::vector<std::pair<std::string, double>> extra_counters() const override {
    return impl_->extra_counters();
  }

 private:
  std::unique_ptr<Impl<Desc>> impl_;
  std::string name_;
  Desc d_;
  Dir dir_;
  std::vector<const Tensor*> inputs_;
};

template <class Traits>
class TypedProblem : public Problem {
 public:
  using Desc = typename Traits::Desc;
  TypedProblem(Desc d, Dir dir, uint64_t seed) : d_(std::move(d)), dir_(dir), seed_(seed) {}

  const Desc& desc() const { return d_; }
  std::string prim() const override { return Traits::kPrim; }
  std::string desc_str() const override { return d_.str(); }
  std::string name() const override { return d_.name; }
  Dir dir() const override { return dir_; }
  double flops() const override { return d_.flops(dir_); }
  double bytes() const override { return d_.bytes(dir_); }
  double peak_scale() const override { return pb::peak_scale(dt_of(d_, 0)); }
  std::string layout() const override { return Traits::layout(d_, dir_); }

  std::vector<std::string> impls() const override {
    std::vector<std::string> v;
    for (const auto& e : Traits::registry()) v.push_back(e.name);
    return v;
  }

  std::unique_ptr<Runner> runner(const std::string& impl, std::string* why) override {
    for (const auto& e : Traits::registry()) {
      if (e.name != impl) continue;
      std::string na = e.unavailable();
      if (!na.empty()) {
        *why = na;
        return nullptr;
      }
      auto obj = e.make();
      Support s = obj->supports(d_, dir_);
      if (!s) {
        *why = s.reason;
        return nullptr;
      }
      return std::make_unique<ImplRunner<Desc>>(std::move(obj), e.name, d_, dir_, input_ptrs());
    }
    std::string known;
    for (const auto& e : Traits::registry()) known += (known.empty() ? "" : ", ") + e.name;
    throw InputError("impl",
                     "no implementation '" + impl + "' for " + prim() + " (have: " + known + ")");
  }

  const std::vector<NamedTensor>& inputs() override {
    if (!made_) {
      // The tensors moved (inputs and outputs, bytes()) against what the machine has free now.
      check_available_memory(d_.bytes(dir_), prim() + " " + d_.str() + " " + dir_str(dir_));
      inputs_ = Traits::make_inputs(d_, dir_, seed_);
      made_ = true;
    }
    return inputs_;
  }

  std::vector<std::string> output_names() const override { return Traits::output_names(d_, dir_); }

  CheckResult check(const std::string& impl, const std::vector<Tensor>& outputs,
                    double ref_budget_flops) override {
    auto names = output_names();
    if (outputs.size() != names.size())
      throw RuntimeError(impl + " returned " + std::to_string(outputs.size()) + " outputs, " +
                         prim() + " " + dir_str(dir_) + " has " + std::to_string(names.size()));
    Tolerance tol = tolerance(tolerance_key(), impl, Traits::exact_data(d_, dir_));
    auto in = input_ptrs();
    Comparator cmp;
    bool sampled = flops() > ref_budget_flops && !have_ref_;
    if (!sampled) {
      if (!have_ref_) {
        ref_ = Traits::reference(d_, dir_, in);
        have_ref_ = true;
      }
      for (size_t o = 0; o < outputs.size(); ++o) {
        check_size(impl, o, outputs[o], ref_[o].size());
        const float* g = outputs[o].data();
        const double* r = ref_[o].data();
        for (int64_t i = 0; i < outputs[o].size(); ++i) cmp.add(i, g[i], r[i]);
      }
    } else {
      // Seeded sample of output elements, the same for every implementation.
      for (size_t o = 0; o < outputs.size(); ++o) {
        const int64_t n = outputs[o].size();
        check_size(impl, o, outputs[o], expected_size(o));
        // About 1e8 reference FLOPs in all (at least 64 points): large-K shapes get fewer.
        const double per_elem = flops() / std::max<double>(1, total_outputs(outputs));
        const int64_t samples = std::min<int64_t>(
            n, std::clamp<int64_t>(static_cast<int64_t>(1e8 / per_elem), 64, 4096));
        for (int64_t s = 0; s < samples; ++s) {
          int64_t i = samples == n ? s : static_cast<int64_t>(mix_seed(seed_ + o, s) % n);
          cmp.add(i, outputs[o][i], Traits::reference_at(d_, dir_, in, o, i));
        }
      }
    }
    return cmp.finish(tol, sampled);
  }

 private:
  std::vector<const Tensor*> input_ptrs() {
    std::vector<const Tensor*> v;
    for (const auto& t : inputs()) v.push_back(&t.tensor);
    return v;
  }
  // The descriptor's data type (dtype.h), f32 for a primitive whose descriptor has none.
  template <class D>
  static auto dt_of(const D& d, int) -> decltype(d.dt, DataType()) {
    return d.dt;
  }
  template <class D>
  static DataType dt_of(const D&, long) {
    return DataType();
  }
  // The tolerance table's key: the primitive, with ":<input type>" for a reduced data type
  // (gemm:bf16).
  std::string tolerance_key() const {
    const DataType dt = dt_of(d_, 0);
    return dt.is_f32() ? std::string(Traits::kPrim)
                       : std::string(Traits::kPrim) + ":" + dt.in_str();
  }
  static double total_outputs(const std::vector<Tensor>& v) {
    double n = 0;
    for (const auto& t : v) n += static_cast<double>(t.size());
    return n;
  }
  int64_t expected_size(size_t o) const { return Traits::output_size(d_, dir_, o); }
  void check_size(const std::string& impl, size_t o, const Tensor& t, int64_t want) const {
    if (t.size() != want)
      throw RuntimeError(impl + " output " + std::to_string(o) + " has " +
                         std::to_string(t.size()) + " elements, expected " + std::to_string(want));
  }

  Desc d_;
  Dir dir_;
  uint64_t seed_;
  bool made_ = false, have_ref_ = false;
  std::vector<NamedTensor> inputs_;
  std::vector<Tensor64> ref_;
};

// The PrimitiveInfo for a Traits type: parse + validate, then wrap.
template <class Traits>
PrimitiveInfo make_primitive_info(std::vector<Dir> dirs, std::string grammar) {
  PrimitiveInfo info;
  info.name = Traits::kPrim;
  info.dirs = dirs;
  info.grammar = std::move(grammar);
  info.make = [dirs](const std::string& text, Dir dir, uint64_t seed) -> std::unique_ptr<Problem> {
    if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end())
      throw InputError("dir", "direction " + dir_str(dir) + " does not apply to " + Traits::kPrim);
    return std::make_unique<TypedProblem<Traits>>(Traits::Desc::parse(text), dir, seed);
  };
  info.impls = [] {
    std::vector<std::pair<std::string, std::string>> v;
    for (const auto& e : Traits::registry()) v.emplace_back(e.name, e.unavailable());
    return v;
  };
  return info;
}

}  // namespace pb
