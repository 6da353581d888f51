// LRN traits: inputs, outputs and reference for TypedProblem.
#pragma once

#include <string>
#include <vector>

#include "kernels/core/problem.h"
#include "kernels/lrn/lrn.h"

namespace pb {

struct LrnTraits {
  using Desc = LrnDesc;
  static constexpr const char* kPrim = "lrn";
  static const Registry<LrnDesc>& registry() { return lrn_registry(); }
  static std::vector<NamedTensor> make_inputs(const LrnDesc& d, Dir dir, uint64_t seed);
  static std::vector<std::string> output_names(const LrnDesc&, Dir dir) {
    return {dir == Dir::fwd ? "dst" : "diff_src"};
  }
  // A power and a division per element: never exact.
  static bool exact_data(const LrnDesc&, Dir) { return false; }
  static std::string layout(const LrnDesc& d, Dir dir);
  static int64_t output_size(const LrnDesc& d, Dir, size_t) { return d.size(); }
  static std::vector<Tensor64> reference(const LrnDesc& d, Dir dir,
                                         const std::vector<const Tensor*>& in);
  static double reference_at(const LrnDesc& d, Dir dir, const std::vector<const Tensor*>& in,
                             size_t, int64_t index);
};

}  // namespace pb
