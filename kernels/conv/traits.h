// Convolution traits: inputs, outputs and reference for TypedProblem, per direction.
#pragma once

#include <string>
#include <vector>

#include "kernels/conv/conv.h"
#include "kernels/core/problem.h"

namespace pb {

struct ConvTraits {
  using Desc = ConvDesc;
  static constexpr const char* kPrim = "conv";
  static const Registry<ConvDesc>& registry() { return conv_registry(); }
  static std::vector<NamedTensor> make_inputs(const ConvDesc& d, Dir dir, uint64_t seed);
  static std::vector<std::string> output_names(const ConvDesc& d, Dir dir);
  static bool exact_data(const ConvDesc& d, Dir dir);
  static std::string layout(const ConvDesc& d, Dir dir);
  static int64_t output_size(const ConvDesc& d, Dir dir, size_t output);
  static std::vector<Tensor64> reference(const ConvDesc& d, Dir dir,
                                         const std::vector<const Tensor*>& in);
  static double reference_at(const ConvDesc& d, Dir dir, const std::vector<const Tensor*>& in,
                             size_t output, int64_t index);
  // Terms of one output element's sum in that direction (for the exact integer range).
  static double sum_terms(const ConvDesc& d, Dir dir);
};

// For tests: batch to 2 first, then halve the larger output dimension (keeping kernel, stride
// and both pads, so asymmetric padding survives) until the reference costs <= max_flops.
std::string conv_shrink(const std::string& text, double max_flops, std::string* tag);

}  // namespace pb
