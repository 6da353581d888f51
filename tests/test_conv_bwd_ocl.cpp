// OpenCL backward convolution beyond the conformance sweep: on real-valued data every ocl/*
// implementation of bwd_d / bwd_w gives bitwise the same gradient on two runs after one prepare
// (no float atomics; run() overwrites, never accumulates) and stays within the tolerance table's
// general bound of the fp64 reference (bwd_w: weights and bias gradients). Skips without a device.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "kernels/availability.h"
#include "kernels/conv/conv.h"
#include "kernels/core/check.h"
#include "kernels/core/fill.h"
#include "reference/conv.h"

namespace pb {
namespace {

// Stride 2, groups, dilation, asymmetric end pads, 1x1 (pointwise and strided), ragged channel
// blocks, several images per im2col chunk (a ragged last one), im2col bwd_w passes, and 3x3
// stride-1 shapes for Winograd.
const char* kShapes[] = {
    "mb3g2ic16ih11iw9oc40kh3sh2ph1",
    "mb2ic5ih15oc20kh3ph2dh1",
    "mb3ic7ih10oc33oh9kh3",
    "mb4ic3ih9iw12oc5oh9ow12kh4kw4ph1pw2",
    "mb2ic16ih13oc8kh1sh2",
    "mb5ic24ih7oc40kh1",
    "mb7ic12ih14oc20kh3ph1",
    "mb2ic3ih30oc16kh7sh2ph3",
    // ocl/im2col bwd_w passes: 2 partial slots over 3 one-image chunks (beta 1 on the second
    // pass), and one slot accumulating straight into diff_wei.
    "mb3ic8ih24oc130kh3ph1",
    "mb2ic8ih24oc256kh3ph1",
};

std::vector<float> run_once(ConvImpl& impl, size_t outputs) {
  impl.run();
  impl.sync();
  std::vector<Tensor> out = impl.result();
  EXPECT_EQ(out.size(), outputs);
  std::vector<float> v;
  for (const Tensor& t : out) v.insert(v.end(), t.data(), t.data() + t.size());
  return v;
}

void check_dir(Dir dir) {
  if (std::string why = opencl_unavailable(); !why.empty()) GTEST_SKIP() << why;
  int tested = 0;
  for (const char* text : kShapes) {
    ConvDesc d = ConvDesc::parse(text);
    Tensor a(dir == Dir::bwd_d ? d.dst_dims() : d.src_dims());
    Tensor b(dir == Dir::bwd_d ? d.wei_dims() : d.dst_dims());
    fill_uniform(a, 21, -1, 1);
    fill_uniform(b, 22, -1, 1);
    Tensor64 r0 = dir == Dir::bwd_d ? ref::conv_bwd_d(d, a, b) : ref::conv_bwd_w(d, a, b);
    std::vector<double> ref(r0.data(), r0.data() + r0.size());
    if (dir == Dir::bwd_w) {
      Tensor64 bias = ref::conv_bwd_b(d, b);
      ref.insert(ref.end(), bias.data(), bias.data() + bias.size());
    }
    const size_t outputs = dir == Dir::bwd_w ? 2 : 1;
    for (const auto& e : conv_registry()) {
      if (e.name.rfind("ocl/", 0) != 0 || !e.unavailable().empty()) continue;
      auto impl = e.make();
      if (!impl->supports(d, dir)) continue;
      SCOPED_TRACE(e.name + " " + dir_str(dir) + " " + text);
      impl->prepare(d, dir, {&a, &b});
      std::vector<float> first = run_once(*impl, outputs), second = run_once(*impl, outputs);
      ++tested;
      ASSERT_EQ(first.size(), ref.size());
      ASSERT_EQ(second.size(), ref.size());
      EXPECT_EQ(0, std::memcmp(first.data(), second.data(), first.size() * sizeof(float)))
          << "two runs differ";
      Comparator cmp;
      for (size_t i = 0; i < ref.size(); ++i) cmp.add(i, first[i], ref[i]);
      CheckResult r = cmp.finish(tolerance("conv", e.name, false), false);
      EXPECT_TRUE(r.pass) << r.summary();
      EXPECT_GT(r.l2_rel, 0.0) << "real-valued data should show some rounding";
    }
  }
  EXPECT_GE(tested, 2 * static_cast<int>(std::size(kShapes)))
      << "ocl/direct and ocl/im2col must run every shape";
}

TEST(ConvBwdOclSmoke, bwd_d_deterministic_and_accurate) {
  check_dir(Dir::bwd_d);
}
TEST(ConvBwdOclSmoke, bwd_w_deterministic_and_accurate) {
  check_dir(Dir::bwd_w);
}

}  // namespace
}  // namespace pb
