// All-reduce traits: per-rank integer inputs and the locally computed reference.
#pragma once

#include <string>
#include <vector>

#include "kernels/allreduce/allreduce.h"
#include "kernels/core/fill.h"
#include "kernels/core/problem.h"

namespace pb {

struct AllreduceTraits {
  using Desc = AllreduceDesc;
  static constexpr const char* kPrim = "allreduce";
  static const Registry<AllreduceDesc>& registry() { return allreduce_registry(); }
  // X of this rank: integers in [-kRange, kRange] from rank_seed(seed, rank); and "seed", the
  // seed in four 16-bit pieces, so that the reference can regenerate every rank's X.
  static std::vector<NamedTensor> make_inputs(const AllreduceDesc& d, Dir, uint64_t seed);
  static std::vector<std::string> output_names(const AllreduceDesc&, Dir) { return {"Y"}; }
  static bool exact_data(const AllreduceDesc&, Dir) { return true; }
  static std::string layout(const AllreduceDesc& d, Dir);
  static int64_t output_size(const AllreduceDesc& d, Dir, size_t) { return d.n; }
  // The sum of every rank's X, each regenerated from its seed: no communication.
  static std::vector<Tensor64> reference(const AllreduceDesc& d, Dir,
                                         const std::vector<const Tensor*>& in);
  static double reference_at(const AllreduceDesc& d, Dir, const std::vector<const Tensor*>& in,
                             size_t, int64_t index);

  static constexpr int kRange = 1000;  // sums over up to 8000 ranks stay below 2^23: exact
  static uint64_t rank_seed(uint64_t seed, int rank) { return mix_seed(seed, 0xa11ed0ce + rank); }
};

}  // namespace pb
