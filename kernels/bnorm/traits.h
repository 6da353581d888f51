// Batch-norm traits: inputs, outputs and reference for TypedProblem.
#pragma once

#include <string>
#include <vector>

#include "kernels/bnorm/bnorm.h"
#include "kernels/core/problem.h"

namespace pb {

struct BnormTraits {
  using Desc = BnormDesc;
  static constexpr const char* kPrim = "bnorm";
  static const Registry<BnormDesc>& registry() { return bnorm_registry(); }
  static std::vector<NamedTensor> make_inputs(const BnormDesc& d, Dir dir, uint64_t seed);
  static std::vector<std::string> output_names(const BnormDesc& d, Dir dir);
  static bool exact_data(const BnormDesc&, Dir) { return false; }  // divides by sqrt(var + eps)
  static std::string layout(const BnormDesc& d, Dir dir);
  static int64_t output_size(const BnormDesc& d, Dir, size_t output) {
    return output == 0 ? d.size() : d.ic;
  }
  static std::vector<Tensor64> reference(const BnormDesc& d, Dir dir,
                                         const std::vector<const Tensor*>& in);
  static double reference_at(const BnormDesc& d, Dir dir, const std::vector<const Tensor*>& in,
                             size_t output, int64_t index);
};

}  // namespace pb
