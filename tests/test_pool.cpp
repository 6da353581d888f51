// Pooling checks beyond the conformance sweep: the descriptor grammar, and max pooling of
// all-equal inputs (every window is one big tie: the gradient must go to the first element).
#include <gtest/gtest.h>

#include "kernels/core/check.h"
#include "kernels/core/error.h"
#include "kernels/pool/pool.h"
#include "reference/pool.h"

namespace pb {
namespace {

TEST(PoolSmoke, DescriptorRoundTripAndDerivedFields) {
  for (const char* s :
       {"mb16ic64ih112kh3sh2ph1_max", "mb2ic3ih13iw11kh3sh2ph1_avgp",
        "mb1ic1ih8oh5kh3sh2ph1_avgnp_n\"a:b\"", "mb2ic5ih9iw12kh3kw2sh2sw1ph1pw0_max"}) {
    PoolDesc d = PoolDesc::parse(s);
    EXPECT_EQ(PoolDesc::parse(d.str()), d) << s << " -> " << d.str();
  }
  PoolDesc d = PoolDesc::parse("mb16ic64ih112kh3sh2ph1");
  EXPECT_EQ(d.alg, PoolAlg::max);
  EXPECT_EQ(d.oh, 56);
  EXPECT_EQ(d.ow, 56);
  EXPECT_EQ(d.pad_b(), 0);  // asymmetric: top 1, bottom 0
  PoolDesc g = PoolDesc::parse("mb16ic2048ih7kh7_avgp");
  EXPECT_EQ(g.oh, 1);
  EXPECT_EQ(g.bytes(Dir::fwd), 4.0 * 16 * 2048 * 50);
}

TEST(PoolSmoke, BadDescriptorsNameTheField) {
  auto field = [](const std::string& s) {
    try {
      PoolDesc::parse(s);
    } catch (const InputError& e) {
      return e.field();
    }
    return std::string("(none)");
  };
  EXPECT_NE(field("mb2ic3ih4kh5_max").find("oh"), std::string::npos);  // kernel larger than image
  EXPECT_NE(field("mb2ic3ih4kh2ph2_max").find("ph"), std::string::npos);
  EXPECT_NE(field("mb2ic3ih8oh9kh2sh2_max").find("oh"), std::string::npos);
  EXPECT_NE(field("mb2ic3ih8kh2_max_avgp").find("alg"), std::string::npos);
  EXPECT_NE(field("mb2ic3ih8kh2sh0_max").find("sh"), std::string::npos);
  EXPECT_NE(field("ic3ih8kh2").find("mb"), std::string::npos);
}

// Sizes past 2^31 are not fed to the output formula, and validate() names them: a pad of 2^63 - 1
// overflowed 2 * pw there (fuzz_pool). The overflow itself shows under UBSan (tools/test
// --sanitize, with fuzz.replay.pool); the message check fails in any build without the bound.
TEST(PoolSmoke, HugeSizesAreRefusedBeforeDerivingTheOutput) {
  auto error = [](const std::string& s) {
    try {
      PoolDesc::parse(s);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(none)");
  };
  const std::string pw = error("mb2ic7ih9iw127kh3kw233ow33sh2sw1ph1pw9223372036854775807_max");
  EXPECT_NE(pw.find("field pw: must be < 2^31"), std::string::npos) << pw;
  const std::string ih = error("mb2ic7ih9223372036854775807kh3_max");
  EXPECT_NE(ih.find("field ih: must be < 2^31"), std::string::npos) << ih;
}

// All-equal src: with overlapping windows (3x3 stride 2) and padding, every window's gradient
// must land on its first in-image element, in every implementation.
TEST(PoolSmoke, AllEqualInputsFirstElementWinsTies) {
  PoolDesc d = PoolDesc::parse("mb2ic19ih13iw11kh3sh2ph1_max");
  Tensor src({d.mb, d.ic, d.ih, d.iw}), dy({d.mb, d.ic, d.oh, d.ow});
  src.fill(3.0f);
  for (int64_t i = 0; i < dy.size(); ++i) dy[i] = static_cast<float>(i % 7 + 1);
  Tensor64 want = ref::pool_bwd(d, src, dy);
  // The reference itself: output (oh, ow) -> element (max(2oh-1, 0), max(2ow-1, 0)).
  EXPECT_EQ(want[0], dy[0]);
  EXPECT_EQ(want[1], dy[1]);                    // (0,1) <- output (0,1)
  EXPECT_EQ(want[2], 0.0);                      // (0,2): never first in a window
  EXPECT_EQ(want[1 * d.iw + 1], dy[d.ow + 1]);  // (1,1) <- output (1,1)
  for (const auto& e : pool_registry()) {
    if (!e.unavailable().empty()) continue;
    auto impl = e.make();
    plan_phases(*impl, d, Dir::bwd, {&src, &dy});
    run_phases(*impl);
    Tensor got = std::move(impl->result().at(0));
    CheckResult r = compare_tensors(got, want, {0, "exact"});
    EXPECT_TRUE(r.pass) << e.name << ": " << r.summary();
  }
}

}  // namespace
}  // namespace pb
