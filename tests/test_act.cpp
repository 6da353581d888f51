// Activation checks beyond the conformance sweep: the descriptor grammar and bench names, and
// softmax / cross-entropy on large logits (1e4 + noise: a naive exp would overflow).
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/act/act.h"
#include "kernels/core/check.h"
#include "kernels/core/error.h"
#include "kernels/core/fill.h"
#include "reference/act.h"

namespace pb {
namespace {

TEST(ActSmoke, DescriptorRoundTripAndNames) {
  for (const char* s : {"relu_mb16ic64ih56", "softmax_mb16ic1000", "xent_mb2ic7ih3iw5n\"x:y\"",
                        "tanh_mb1ic1", "sigmoid_mb3ic17ih5iw3"}) {
    ActDesc d = ActDesc::parse(s);
    EXPECT_EQ(ActDesc::parse(d.str()), d) << s << " -> " << d.str();
  }
  EXPECT_EQ(ActDesc::parse("relu_mb16ic64ih56").iw, 56);
  EXPECT_EQ(act_bench_prefix(ActDesc::parse("relu_mb1ic1"), Dir::bwd), "relu_bwd");
  EXPECT_EQ(act_bench_prefix(ActDesc::parse("xent_mb1ic2"), Dir::fwd), "softmax_xent_fwd");
  for (const char* bad :
       {"mb2ic3", "relu_tanh_mb2ic3", "relu_mb0ic3", "relu_ic3", "relu_mb2ic3_foo"})
    EXPECT_THROW(ActDesc::parse(bad), InputError) << bad;
}

TEST(ActSmoke, SoftmaxStableForLargeLogits) {
  for (const char* s : {"softmax_mb4ic1000", "xent_mb4ic1000", "softmax_mb2ic19ih3"}) {
    ActDesc d = ActDesc::parse(s);
    Tensor x({d.mb, d.ic, d.ih, d.iw}), labels({d.mb, d.ih, d.iw});
    fill_uniform(x, 3, -20, 20);
    for (int64_t i = 0; i < x.size(); ++i) x[i] += 1e4f;
    for (int64_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<float>(i % d.ic);
    std::vector<const Tensor*> in = {&x};
    if (d.func == ActFunc::xent) in.push_back(&labels);
    auto want = ref::act_fwd(d, in);
    for (const auto& e : act_registry()) {
      if (!e.unavailable().empty()) continue;
      auto impl = e.make();
      if (!impl->supports(d, Dir::fwd)) continue;
      plan_phases(*impl, d, Dir::fwd, in);
      run_phases(*impl);
      auto got = impl->result();
      ASSERT_EQ(got.size(), want.size()) << e.name;
      for (size_t o = 0; o < got.size(); ++o) {
        CheckResult r = compare_tensors(got[o], want[o], {2e-6, "as the act table"});
        EXPECT_TRUE(r.pass) << e.name << " " << s << " output " << o << ": " << r.summary();
      }
    }
  }
}

// Cross-entropy labels that are not class indices (negative, >= ic, fractional, NaN) are an
// InputError naming the labels (reference, cpu/native), or a NaN loss the check reports (an
// OpenCL kernel, which cannot throw): never an out-of-bounds read or write.
TEST(ActSmoke, CrossEntropyLabelsOutOfRangeAreRejected) {
  const ActDesc d = ActDesc::parse("xent_mb2ic5ih2");
  Tensor x({d.mb, d.ic, d.ih, d.iw}), labels({d.mb, d.ih, d.iw}), dy({d.mb, d.ic, d.ih, d.iw});
  fill_uniform(x, 3, -2, 2);
  for (float bad : {-1.0f, 5.0f, 1e9f, 2.5f, NAN}) {
    for (int64_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<float>(i % d.ic);
    labels[3] = bad;
    const std::vector<const Tensor*> in = {&x, &labels};
    EXPECT_THROW(ref::act_fwd(d, in), InputError) << bad;
    EXPECT_THROW(ref::act_bwd(d, in), InputError) << bad;
    for (const auto& e : act_registry()) {
      if (!e.unavailable().empty()) continue;
      for (Dir dir : {Dir::fwd, Dir::bwd}) {
        auto impl = e.make();
        if (!impl->supports(d, dir)) continue;
        try {
          plan_phases(*impl, d, dir, in);
          run_phases(*impl);
        } catch (const InputError& err) {
          EXPECT_NE(std::string(err.what()).find("labels"), std::string::npos) << err.what();
          continue;
        }
        auto got = impl->result();
        const Tensor& t = dir == Dir::fwd ? got.at(1) : got.at(0);
        bool has_nan = false;
        for (int64_t i = 0; i < t.size(); ++i) has_nan |= std::isnan(t[i]);
        EXPECT_TRUE(has_nan) << e.name << " " << dir_str(dir) << ": label " << bad
                             << " neither rejected nor made visible";
      }
    }
  }
}

}  // namespace
}  // namespace pb
