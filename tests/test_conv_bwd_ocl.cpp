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
#include "tests/conv_bwd_check.h"

namespace pb {
namespace {

// Stride 2, groups, dilation, asymmetric end pads, 1x1 (pointwise and strided), ragged channel
// blocks, several images per im2col chunk (a ragged last one), im2col bwd_w passes, and 3x3
// stride-1 shapes for Winograd.
const char* kOclShapes[] = {
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

void check_ocl_dir(Dir dir) {
  if (std::string why = opencl_unavailable(); !why.empty()) GTEST_SKIP() << why;
  int tested = 0;
  for (const char* text : kOclShapes) {
    ConvDesc d = ConvDesc::parse(text);
    const test::BwdCase c = test::make_bwd_case(d, dir, 21);
    for (const auto& e : conv_registry()) {
      if (e.name.rfind("ocl/", 0) != 0 || !e.unavailable().empty()) continue;
      auto impl = e.make();
      if (!impl->supports(d, dir)) continue;
      SCOPED_TRACE(e.name + " " + dir_str(dir) + " " + text);
      plan_phases(*impl, d, dir, {&c.a, &c.b});
      std::vector<float> first = test::run_outputs(*impl, c.outputs);
      std::vector<float> second = test::run_outputs(*impl, c.outputs);
      ++tested;
      ASSERT_EQ(first.size(), second.size());
      EXPECT_EQ(0, std::memcmp(first.data(), second.data(), first.size() * sizeof(float)))
          << "two runs differ";
      test::expect_accurate(e.name, first, c.ref);
    }
  }
  EXPECT_GE(tested, 2 * static_cast<int>(std::size(kOclShapes)))
      << "ocl/direct and ocl/im2col must run every shape";
}

TEST(ConvBwdOclSmoke, bwd_d_deterministic_and_accurate) {
  check_ocl_dir(Dir::bwd_d);
}
TEST(ConvBwdOclSmoke, bwd_w_deterministic_and_accurate) {
  check_ocl_dir(Dir::bwd_w);
}

}  // namespace
}  // namespace pb
