// Pooling traits: inputs, outputs and reference for TypedProblem.
#pragma once

#include <string>
#include <vector>

#include "kernels/core/problem.h"
#include "kernels/pool/pool.h"

namespace pb {

struct PoolTraits {
  using Desc = PoolDesc;
  static constexpr const char* kPrim = "pool";
  static const Registry<PoolDesc>& registry() { return pool_registry(); }
  static std::vector<NamedTensor> make_inputs(const PoolDesc& d, Dir dir, uint64_t seed);
  static std::vector<std::string> output_names(const PoolDesc&, Dir dir) {
    return {dir == Dir::fwd ? "dst" : "diff_src"};
  }
  // Max pooling only moves values: exact. Averages divide (a rounding) and so are not.
  static bool exact_data(const PoolDesc& d, Dir) { return d.alg == PoolAlg::max; }
  static std::string layout(const PoolDesc& d, Dir dir);
  static int64_t output_size(const PoolDesc& d, Dir dir, size_t) {
    return dir == Dir::fwd ? d.dst_size() : d.src_size();
  }
  static std::vector<Tensor64> reference(const PoolDesc& d, Dir dir,
                                         const std::vector<const Tensor*>& in);
  static double reference_at(const PoolDesc& d, Dir dir, const std::vector<const Tensor*>& in,
                             size_t, int64_t index);
};

}  // namespace pb
