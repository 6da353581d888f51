// Comparison against the reference and the tolerance table keyed by (primitive, algorithm).
#pragma once

#include <cstdint>
#include <string>

#include "kernels/core/tensor.h"

namespace pb {

struct Tolerance {
  double l2_rel = 0;  // bound on the normwise relative L2 error; 0 means bit-exact
  std::string why;    // the reason for the value, shown on failure
};

// Looks up the table (kernels/core/tolerance.cpp). `exact_data` says the inputs are small
// integers (and scalars dyadic), so that exact algorithms must reproduce the reference exactly.
Tolerance tolerance(const std::string& prim, const std::string& impl, bool exact_data);

struct CheckResult {
  int64_t checked = 0;  // elements compared (all, or a seeded sample for large problems)
  bool sampled = false;
  double max_abs = 0;        // max |got - ref|
  double max_rel = 0;        // max |got - ref| / max(|ref|, 1e-30) over nonzero refs
  double l2_rel = 0;         // ||got - ref||_2 / ||ref||_2 (absolute when ||ref|| = 0)
  int64_t worst_index = -1;  // flat index of max_abs
  double worst_got = 0, worst_ref = 0;
  double zero_frac = 0;        // fraction of reference elements that are exactly zero
  bool non_finite = false;     // a NaN or Inf where the reference is finite
  bool size_mismatch = false;  // compare_tensors: the tensors differ in size (a FAIL)
  bool mistrusted = false;     // reference mostly zeros: agreement proves little
  bool pass = false;
  std::string summary() const;  // one line: errors, worst index, verdict
};

// Accumulates element comparisons; finish() applies the tolerance.
class Comparator {
 public:
  void add(int64_t index, double got, double ref);
  CheckResult finish(const Tolerance& tol, bool sampled) const;
  void merge(const Comparator& other);

 private:
  int64_t n_ = 0, zeros_ = 0, worst_ = -1;
  double max_abs_ = 0, max_rel_ = 0, err2_ = 0, ref2_ = 0, worst_got_ = 0, worst_ref_ = 0;
  bool non_finite_ = false;
};

// Every element of `got` against `ref` (all of them, not sampled); tensors of different sizes
// FAIL, with the overlap compared.
// (fp32 or fp64 either side).
template <class G, class R>
CheckResult compare_tensors(const HostTensor<G>& got, const HostTensor<R>& ref,
                            const Tolerance& tol) {
  Comparator c;
  const int64_t n = got.size() < ref.size() ? got.size() : ref.size();
  for (int64_t i = 0; i < n; ++i) c.add(i, got[i], ref[i]);
  CheckResult r = c.finish(tol, false);
  if (got.size() != ref.size()) r.size_mismatch = true, r.pass = false;
  return r;
}

}  // namespace pb
