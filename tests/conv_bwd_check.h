// Shared pieces of the backward-convolution tests (CPU and OpenCL): real-valued inputs of a
// direction with the fp64 reference of all its outputs, one run's outputs concatenated, and the
// check of those against the tolerance table's general bound.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/conv/conv.h"
#include "kernels/core/check.h"
#include "kernels/core/fill.h"
#include "reference/conv.h"

namespace pb::test {

struct BwdCase {
  Tensor a, b;              // bwd_d: diff_dst, wei; bwd_w: src, diff_dst
  std::vector<double> ref;  // bwd_d: diff_src; bwd_w: diff_wei then diff_bias
  size_t outputs = 1;
};

inline BwdCase make_bwd_case(const ConvDesc& d, Dir dir, uint64_t seed) {
  BwdCase c{Tensor(dir == Dir::bwd_d ? d.dst_dims() : d.src_dims()),
            Tensor(dir == Dir::bwd_d ? d.wei_dims() : d.dst_dims()),
            {},
            dir == Dir::bwd_w ? 2u : 1u};
  fill_uniform(c.a, seed, -1, 1);
  fill_uniform(c.b, seed + 1, -1, 1);
  Tensor64 r0 = dir == Dir::bwd_d ? ref::conv_bwd_d(d, c.a, c.b) : ref::conv_bwd_w(d, c.a, c.b);
  c.ref.assign(r0.data(), r0.data() + r0.size());
  if (dir == Dir::bwd_w) {
    Tensor64 bias = ref::conv_bwd_b(d, c.b);
    c.ref.insert(c.ref.end(), bias.data(), bias.data() + bias.size());
  }
  return c;
}

// The outputs of one run, concatenated in conv.h's order.
inline std::vector<float> run_outputs(ConvImpl& impl, size_t outputs) {
  run_phases(impl);
  std::vector<Tensor> out = impl.result();
  EXPECT_EQ(out.size(), outputs);
  std::vector<float> v;
  for (const Tensor& t : out) v.insert(v.end(), t.data(), t.data() + t.size());
  return v;
}

// Within the table's general bound of the reference, and not suspiciously exact.
inline void expect_accurate(const std::string& impl, const std::vector<float>& got,
                            const std::vector<double>& ref) {
  ASSERT_EQ(got.size(), ref.size());
  Comparator cmp;
  for (size_t i = 0; i < ref.size(); ++i) cmp.add(i, got[i], ref[i]);
  CheckResult r = cmp.finish(tolerance("conv", impl, false), false);
  EXPECT_TRUE(r.pass) << r.summary();
  EXPECT_GT(r.l2_rel, 0.0) << "real-valued data should show some rounding";
}

}  // namespace pb::test
