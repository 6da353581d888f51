// Seeded input generators: small integers (so exact algorithms must match exactly) or reals.
#pragma once

#include <cstdint>

#include "kernels/core/tensor.h"

namespace pb {

// Integers uniformly in [-range, range], deterministic for (seed, index): the same tensor on
// every machine and thread count. Parallel over the buffer.
void fill_int(Tensor& t, uint64_t seed, int range);
// Uniform reals in [lo, hi), deterministic likewise.
void fill_uniform(Tensor& t, uint64_t seed, float lo, float hi);
// Largest integer range r such that a dot product of `terms` products of two values in [-r, r]
// (plus `extra`, e.g. beta*C) stays below 2^23 in magnitude: exact in fp32. At least 1, at most
// cap.
int exact_int_range(double terms, int cap = 4);
// A 64-bit mix of (seed, stream) for deriving per-tensor seeds.
uint64_t mix_seed(uint64_t seed, uint64_t stream);

}  // namespace pb
