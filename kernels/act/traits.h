// Activation traits: inputs, outputs and reference for TypedProblem.
#pragma once

#include <string>
#include <vector>

#include "kernels/act/act.h"
#include "kernels/core/problem.h"

namespace pb {

struct ActTraits {
  using Desc = ActDesc;
  static constexpr const char* kPrim = "act";
  static const Registry<ActDesc>& registry() { return act_registry(); }
  static std::vector<NamedTensor> make_inputs(const ActDesc& d, Dir dir, uint64_t seed);
  static std::vector<std::string> output_names(const ActDesc& d, Dir dir);
  // ReLU on integers is exact; the others involve exp/tanh/division.
  static bool exact_data(const ActDesc& d, Dir) { return d.func == ActFunc::relu; }
  static std::string layout(const ActDesc& d, Dir dir);
  static int64_t output_size(const ActDesc& d, Dir, size_t output) {
    return output == 0 ? d.size() : d.positions();
  }
  static std::vector<Tensor64> reference(const ActDesc& d, Dir dir,
                                         const std::vector<const Tensor*>& in);
  static double reference_at(const ActDesc& d, Dir dir, const std::vector<const Tensor*>& in,
                             size_t output, int64_t index);
};

}  // namespace pb
