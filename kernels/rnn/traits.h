// RNN traits: inputs and outputs per direction, the fp64 reference hook-up and the test shrink.
#pragma once

#include <string>
#include <vector>

#include "kernels/core/problem.h"
#include "kernels/rnn/rnn.h"

namespace pb {

struct RnnTraits {
  using Desc = RnnDesc;
  static constexpr const char* kPrim = "rnn";
  static const Registry<RnnDesc>& registry() { return rnn_registry(); }
  static std::vector<NamedTensor> make_inputs(const RnnDesc& d, Dir dir, uint64_t seed);
  static std::vector<std::string> output_names(const RnnDesc& d, Dir dir);
  static bool exact_data(const RnnDesc&, Dir) { return false; }  // sigmoid/tanh: never exact
  static std::string layout(const RnnDesc& d, Dir dir);
  static int64_t output_size(const RnnDesc& d, Dir dir, size_t output);
  static std::vector<Tensor64> reference(const RnnDesc& d, Dir dir,
                                         const std::vector<const Tensor*>& in);
  // Every output depends on the whole sequence: computes (and keeps) the full reference.
  static double reference_at(const RnnDesc& d, Dir dir, const std::vector<const Tensor*>& in,
                             size_t output, int64_t index);
};

// Dims of a named RNN tensor ("x", "W", "dy", "cT", ...), see rnn.h.
Dims rnn_dims(const RnnDesc& d, const std::string& name);

}  // namespace pb
