// Post-ops (kernels/core/post_ops.h): the formula, cpu/packed's SGEMM applying them inside its
// tiles on every path of its loop nest (ctest runs PackedSgemmSmoke on each SIMD path), and
// cpu/im2col's forward applying them through it on every path of its chunking, oneDNN's
// convolution as its own post-ops; each against the same product or convolution without them
// followed by one pass of the post-ops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/conv/conv.h"
#include "kernels/conv/traits.h"
#include "kernels/core/fill.h"
#include "kernels/gemm/cpu/packed_sgemm.h"

namespace pb::post_ops_test {
namespace {

// Channel values and a residual for post-ops over `channels` channels; relu and the residual as
// asked (the residual's own scale and shift too).
struct Ops {
  std::vector<float> scale, shift, rscale, rshift, res;
  PostOps p;
  Ops(int64_t channels, int64_t res_size, bool relu, bool residual, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.5f, 1.5f);
    for (auto* v : {&scale, &shift, &rscale, &rshift}) {
      v->resize(channels);
      for (float& x : *v) x = u(rng);
    }
    res.resize(res_size);
    for (float& x : res) x = u(rng);
    p.scale = scale.data(), p.shift = shift.data(), p.relu = relu;
    if (residual) p.res = res.data(), p.res_scale = rscale.data(), p.res_shift = rshift.data();
  }
};

TEST(PostOps, MatchTheFormula) {
  // 5 x 3 block (columns 7 apart, written 9 apart), and a row of channels (m = 1).
  for (bool relu : {false, true})
    for (bool residual : {false, true}) {
      Ops o(3, 7 * 3, relu, residual, 1);
      o.p.ldr = 7;
      std::vector<float> x(7 * 3), y(9 * 3, -7.0f);
      std::mt19937 rng(2);
      std::uniform_real_distribution<float> u(-2, 2);
      for (float& v : x) v = u(rng);
      apply_post_ops(o.p, 5, 3, x.data(), 7, y.data(), 9);
      for (int64_t j = 0; j < 3; ++j)
        for (int64_t i = 0; i < 9; ++i) {
          if (i >= 5) {
            EXPECT_EQ(y[i + j * 9], -7.0f) << "past the block: " << i << "," << j;
            continue;
          }
          double v = double(x[i + j * 7]) * o.scale[j] + o.shift[j];
          if (residual) v += double(o.res[i + j * 7]) * o.rscale[j] + o.rshift[j];
          if (relu) v = std::max(v, 0.0);
          EXPECT_NEAR(y[i + j * 9], v, 1e-6 * (1 + std::fabs(v))) << i << "," << j;
        }
      // A row: element j is channel j, its residual ldr apart; in place.
      std::vector<float> row(3 * 2), r0 = {x[0], 0, x[1], 0, x[2], 0};
      row = r0;
      PostOps p = o.p;
      p.ldr = 7;
      apply_post_ops(p, 1, 3, row.data(), 2, row.data(), 2);
      for (int64_t j = 0; j < 3; ++j) {
        double v = double(r0[2 * j]) * o.scale[j] + o.shift[j];
        if (residual) v += double(o.res[j * 7]) * o.rscale[j] + o.rshift[j];
        if (relu) v = std::max(v, 0.0);
        EXPECT_NEAR(row[2 * j], v, 1e-6 * (1 + std::fabs(v))) << "row " << j;
        EXPECT_EQ(row[2 * j + 1], 0.0f);
      }
    }
}

struct GemmCase {
  bool ta, tb;
  int64_t m, n, k;
  float beta;
  const char* path;  // which part of the loop nest it reaches (packed_sgemm.cpp)
};

TEST(PackedSgemmSmoke, PostOpsInTheTilesMatchAPassAfter) {
  const GemmCase cases[] = {
      {false, false, 300, 40, 300, 0.0f, "A read in place (N <= 64)"},
      {false, true, 1000, 100, 70, 0.0f, "A in place, N <= 128 with M >= 4N"},
      {false, false, 3136, 256, 64, 0.0f, "rows split, B packed (ResNet-50's 1x1)"},
      {false, false, 300, 200, 600, 0.5f, "two blocks of the sum, beta"},
      {true, false, 100, 600, 300, 0.0f, "few A slivers: B in place"},
      {false, false, 200, 1200, 40, 0.0f, "columns split"},
      {true, false, 64, 16, 300, 0.0f, "A^T with few columns"},
      {false, false, 5, 7, 0, 0.5f, "no sum: beta only"},
  };
  for (const GemmCase& c : cases)
    for (bool relu : {false, true})
      for (bool residual : {false, true}) {
        SCOPED_TRACE(std::string(c.path) + (relu ? " relu" : "") + (residual ? " residual" : ""));
        const int64_t lda = (c.ta ? c.k : c.m) + 1, ldb = (c.tb ? c.n : c.k) + 2, ldc = c.m + 3;
        std::vector<float> a(lda * (c.ta ? c.m : c.k)), b(ldb * (c.tb ? c.k : c.n));
        std::vector<float> want(ldc * c.n), got;
        std::mt19937 rng(7);
        std::uniform_real_distribution<float> u(-1, 1);
        for (auto* v : {&a, &b, &want})
          for (float& x : *v) x = u(rng);
        got = want;
        Ops o(c.n, (c.m + 5) * c.n, relu, residual, 3);
        o.p.ldr = c.m + 5;
        sgemm_packed(c.ta, c.tb, c.m, c.n, c.k, 1.0f, a.data(), lda, b.data(), ldb, c.beta,
                     want.data(), ldc);
        apply_post_ops(o.p, c.m, c.n, want.data(), ldc, want.data(), ldc);
        sgemm_packed_post(c.ta, c.tb, c.m, c.n, c.k, 1.0f, a.data(), lda, b.data(), ldb, c.beta,
                          got.data(), ldc, &o.p);
        int64_t wrong = 0;
        for (size_t i = 0; i < got.size(); ++i) wrong += got[i] != want[i];
        EXPECT_EQ(wrong, 0) << "elements differ of " << got.size() << " (" << sgemm_packed_config()
                            << ")";
      }
}

std::unique_ptr<ConvImpl> make_impl(const std::string& name) {
  for (const auto& e : conv_registry())
    if (e.name == name) return e.make();
  throw std::runtime_error("no conv implementation " + name);
}

// The forward with post-ops wrote `out`: element i within bound(i) of `want` (the plain forward
// and one pass), the ReLU exercised (some zeros, not all), and result() is a copy of it.
template <class Bound>
void expect_output(const Tensor& want, const Tensor& out, ConvImpl& fused, Bound bound) {
  int64_t wrong = 0, zeros = 0;
  for (int64_t i = 0; i < want.size(); ++i) {
    wrong += !(std::fabs(out[i] - want[i]) <= bound(i));
    zeros += want[i] == 0.0f;
  }
  EXPECT_EQ(wrong, 0) << "elements differ of " << want.size();
  EXPECT_GT(zeros, 0) << "the ReLU was not exercised";
  EXPECT_LT(zeros, want.size());
  const std::vector<Tensor> r = fused.result();
  EXPECT_EQ(std::memcmp(r[0].data(), out.data(), out.bytes()), 0);
}

// A convolution's forward with post-ops writes into the caller's tensor what the plain forward
// and one pass give: cpu/im2col on each path of its chunking (and in bf16), the Winograd engines
// as each span
// leaves the tile buffer, cpu/direct as each tile is scattered. Within 1e-6 relative rather than
// bitwise: cpu/direct's scatter computes the same formula in its own (scalar) loop, where the
// compiler may contract a multiply-add differently.
TEST(ConvPostOps, AppliedInsideTheForward) {
  const std::vector<std::pair<const char*, std::vector<const char*>>> cases = {
      {"mb2ic16ih28oc32kh1", {"cpu/im2col", "cpu/direct"}},       // 1x1: the image is the matrix
      {"mb2ic3ih64oc16kh7sh2ph3", {"cpu/im2col", "cpu/direct"}},  // a stem: blocks of rows
      {"mb4ic128ih7oc64kh3ph1", {"cpu/im2col", "cpu/winograd_f4", "cpu/direct"}},  // channel blocks
      {"mb4ic16ih7oc24kh3ph1",
       {"cpu/im2col", "cpu/winograd_f2", "cpu/direct"}},        // one wide product
      {"mb2ic32ih28oc64kh1sh2", {"cpu/im2col", "cpu/direct"}},  // strided 1x1
      {"mb2g2ic32ih14oc32kh3ph1", {"cpu/im2col", "cpu/winograd_f4", "cpu/direct"}},  // groups
      {"mb1ic64ih56oc64kh1", {"cpu/im2col"}},  // one image: copies and post-ops over the threads
      {"mb2ic32ih30oc40kh3ph1", {"cpu/winograd_f4", "cpu/direct"}},  // partial tiles and blocks
      // bf16 in, fp32 out: cpu/im2col on each image once written (the pixels as the GEMM's
      // rows; a chunk's product transposed to NCHW, the path u8s8 takes too), cpu/direct's
      // reduced-precision tiles as each is scattered.
      {"mb2ic16ih28oc32kh1_dt=bf16", {"cpu/im2col"}},
      {"mb4ic16ih7oc24kh3ph1_dt=bf16", {"cpu/im2col", "cpu/direct"}},
      {"mb2ic32ih30oc40kh3ph1_dt=bf16", {"cpu/direct"}},
  };
  for (const auto& [s, impls] : cases)
    for (const char* name : impls)
      for (bool residual : {false, true}) {
        SCOPED_TRACE(std::string(name) + " " + s + (residual ? " residual" : ""));
        const ConvDesc d = ConvDesc::parse(s);
        Tensor src(d.src_dims()), wei(d.wei_dims()), out(d.dst_dims());
        fill_uniform(src, 1, -1, 1);
        fill_uniform(wei, 2, -1, 1);
        Ops o(d.oc, out.size(), true, residual, 4);
        auto plain = make_impl(name), fused = make_impl(name);
        const Support sup = fused->supports(d, Dir::fwd);
        if (!d.dt.is_f32() && !sup) continue;  // a CPU without BF16 (its own tests say so)
        ASSERT_TRUE(sup) << sup.reason;
        plan_phases(*plain, d, Dir::fwd, {&src, &wei});
        plan_phases(*fused, d, Dir::fwd, {&src, &wei});
        ASSERT_TRUE(fused->set_post_ops(&o.p, &out));
        run_phases(*plain);
        run_phases(*fused);
        Tensor want = plain->output_view(0)->clone();
        apply_post_ops_nchw(o.p, d.mb, d.oc, d.oh * d.ow, want.data(), want.data());
        EXPECT_EQ(fused->output_view(0), &out);
        expect_output(want, out, *fused,
                      [&](int64_t i) { return 1e-6f * (1 + std::fabs(want[i])); });
      }
  const ConvDesc d = ConvDesc::parse("mb2ic8ih8oc8kh3ph1");
  Tensor src(d.src_dims()), wei(d.wei_dims()), dst(d.dst_dims()), out(d.dst_dims());
  PostOps p;
  for (Dir dir : {Dir::bwd_d, Dir::bwd_w}) {
    auto impl = make_impl("cpu/im2col");
    plan_phases(*impl, d, dir, {dir == Dir::bwd_d ? &dst : &src, dir == Dir::bwd_d ? &wei : &dst});
    EXPECT_FALSE(impl->set_post_ops(&p, &out)) << dir_str(dir);
  }
  auto fft = make_impl("cpu/fft");
  plan_phases(*fft, d, Dir::fwd, {&src, &wei});
  EXPECT_FALSE(fft->set_post_ops(&p, &out)) << "cpu/fft has none";
  const ConvDesc bf = ConvDesc::parse("mb2ic8ih8oc8kh3ph1_dt=bf16");
  for (const char* name : {"cpu/winograd_f4"}) {
    auto typed = make_impl(name);
    if (!typed->supports(bf, Dir::fwd)) continue;
    plan_phases(*typed, bf, Dir::fwd, {&src, &wei});
    EXPECT_FALSE(typed->set_post_ops(&p, &out)) << name << " has none in bf16";
  }
  Tensor other({2, 8, 7, 7});
  auto shape = make_impl("cpu/im2col");
  plan_phases(*shape, d, Dir::fwd, {&src, &wei});
  EXPECT_FALSE(shape->set_post_ops(&p, &other)) << "a tensor of another shape";
}

// oneDNN's convolution takes the post-ops as its own in every type it has here, on the forward
// with an fp32 output (the scale folded into the weights or u8s8's output scales, the shift as its
// bias, ReLU as an eltwise post-op), folds a scale that changed between runs again, and refuses a
// residual (the pass stays: onednn_conv.cpp says why) and the backward directions. Against the
// plain primitive and one pass:
// - fp32: the fused primitive is oneDNN's forward_inference where the plain one is its
//   forward_training, two kernels whose sums may round differently: within 1e-5 of the output's
//   largest magnitude rather than bitwise. u8s8: int32 sums are exact; the scale and the bias
//   are applied in another order (1e-5 too).
// - bf16 with a scale: the weights are rounded to bf16 after the scale where the plain
//   primitive rounds them before, each rounding within 2^-9 relative, so each output within
//   2^-8 * |scale| * sum |x w| (that sum from the plain primitive on |x| and |w|) more.
TEST(ConvPostOps, OnednnTakesThemAsItsOwn) {
  bool built = false;
  for (const auto& e : conv_registry()) built |= e.name == "onednn/auto";
  if (!built) GTEST_SKIP() << "built without oneDNN";
  for (const char* s :
       {"mb2ic32ih14oc48kh3ph1", "mb2ic64ih7oc32kh1", "mb2ic32ih14oc48kh3ph1_dt=bf16",
        "mb2ic64ih7oc32kh1_dt=bf16", "mb2ic32ih14oc48kh3ph1_dt=u8s8",
        "mb2ic64ih7oc32kh1sh2_dt=u8s8", "mb2g2ic32ih14oc32kh3ph1_dt=bf16"})
    for (bool bn : {false, true}) {
      SCOPED_TRACE(std::string(s) + (bn ? " bn" : " bias only"));
      const ConvDesc d = ConvDesc::parse(s);
      // The problem's own inputs (u8s8: values exact in the types and the quantisation's scales).
      std::vector<NamedTensor> inputs = ConvTraits::make_inputs(d, Dir::fwd, 1);
      std::vector<const Tensor*> in;
      for (const NamedTensor& t : inputs) in.push_back(&t.tensor);
      Tensor out(d.dst_dims());
      Ops o(d.oc, out.size(), true, false, 5);
      if (!bn) o.p.scale = nullptr;  // the bias and ReLU of a layer with no batch-norm
      auto plain = make_impl("onednn/auto"), fused = make_impl("onednn/auto");
      const Support sup = fused->supports(d, Dir::fwd);
      if (!d.dt.is_f32() && !sup) continue;  // a CPU without BF16 or VNNI
      ASSERT_TRUE(sup) << sup.reason;
      plan_phases(*plain, d, Dir::fwd, in);
      plan_phases(*fused, d, Dir::fwd, in);
      ASSERT_TRUE(fused->set_post_ops(&o.p, &out));
      run_phases(*plain);
      // sum |x w| per output, for bf16's bound.
      Tensor abs_src = in[0]->clone(), abs_wei = in[1]->clone();
      for (Tensor* t : {&abs_src, &abs_wei})
        for (int64_t i = 0; i < t->size(); ++i) (*t)[i] = std::fabs((*t)[i]);
      auto sums = make_impl("onednn/auto");
      std::vector<const Tensor*> abs_in = in;
      abs_in[0] = &abs_src, abs_in[1] = &abs_wei;
      plan_phases(*sums, d, Dir::fwd, abs_in);
      run_phases(*sums);
      const Tensor& abs_sum = *sums->output_view(0);
      for (int step = 0; step < 2; ++step) {
        SCOPED_TRACE(step ? "a new scale and shift" : "first run");
        if (step) {  // new parameters: folded again
          for (int64_t c = 0; c < d.oc; ++c) o.scale[c] *= -0.75f, o.shift[c] += 0.25f;
          // As a network does before each run (impl.h): the source quantised again, which
          // the new fold must keep.
          for (ConvImpl* impl : {plain.get(), fused.get()}) impl->quantise(0);
          run_phases(*plain);
        }
        run_phases(*fused);
        Tensor want = plain->output_view(0)->clone();
        apply_post_ops_nchw(o.p, d.mb, d.oc, d.oh * d.ow, want.data(), want.data());
        EXPECT_EQ(fused->output_view(0), &out);
        double largest = 0;
        for (int64_t i = 0; i < want.size(); ++i)
          largest = std::max(largest, std::fabs(double(want[i])));
        const int64_t hw = d.oh * d.ow;
        expect_output(want, out, *fused, [&](int64_t i) {
          const double rounding =
              d.dt.in == DataType::bf16 && bn
                  ? std::ldexp(1.0, -8) * std::fabs(o.scale[(i / hw) % d.oc]) * abs_sum[i]
                  : 0.0;
          return 1e-5 * largest + rounding;
        });
      }
      // A new plan drops the post-ops.
      plan_phases(*fused, d, Dir::fwd, in);
      EXPECT_NE(fused->output_view(0), &out) << "a new plan writes its own output again";
    }
  const ConvDesc d = ConvDesc::parse("mb2ic16ih8oc16kh3ph1");
  Tensor src(d.src_dims()), wei(d.wei_dims()), dst(d.dst_dims()), out(d.dst_dims());
  Ops o(d.oc, out.size(), true, true, 6);
  auto impl = make_impl("onednn/auto");
  plan_phases(*impl, d, Dir::fwd, {&src, &wei});
  EXPECT_FALSE(impl->set_post_ops(&o.p, &out)) << "a residual stays in the pass";
  // onednn/winograd cannot scale its weights as it reorders them (oneDNN 2.6): refused, no throw.
  auto wino = make_impl("onednn/winograd");
  Ops bn(d.oc, out.size(), true, false, 7);
  if (wino->supports(d, Dir::fwd)) {
    plan_phases(*wino, d, Dir::fwd, {&src, &wei});
    EXPECT_NO_THROW(wino->set_post_ops(&bn.p, &out));
  }
  o.p.res = nullptr;
  plan_phases(*impl, d, Dir::bwd_d, {&dst, &wei});
  EXPECT_FALSE(impl->set_post_ops(&o.p, &out)) << "bwd_d";
}

}  // namespace
}  // namespace pb::post_ops_test
