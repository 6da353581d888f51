// GEMM traits: inputs, outputs and reference for TypedProblem.
#pragma once

#include <string>
#include <vector>

#include "kernels/core/problem.h"
#include "kernels/gemm/gemm.h"

namespace pb {

struct GemmTraits {
  using Desc = GemmDesc;
  static constexpr const char* kPrim = "gemm";
  static const Registry<GemmDesc>& registry() { return gemm_registry(); }
  static std::vector<NamedTensor> make_inputs(const GemmDesc& d, Dir, uint64_t seed);
  static std::vector<std::string> output_names(const GemmDesc&, Dir) { return {"C"}; }
  static bool exact_data(const GemmDesc& d, Dir);
  static std::string layout(const GemmDesc& d, Dir);
  static int64_t output_size(const GemmDesc& d, Dir, size_t) { return d.c_size(); }
  static std::vector<Tensor64> reference(const GemmDesc& d, Dir,
                                         const std::vector<const Tensor*>& in);
  static double reference_at(const GemmDesc& d, Dir, const std::vector<const Tensor*>& in, size_t,
                             int64_t index);
};

}  // namespace pb
