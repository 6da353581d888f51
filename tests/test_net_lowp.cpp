// Networks in reduced precision (NetOptions::dt, kernels/net/lowp.cpp): the convolution and fc
// calls run in the type after their quantise steps, their logits stay near the fp32 network's
// but not equal to them, new activations reach the typed layers every step, bf16 training steps
// compute gradients near fp32's, and bad requests are refused naming the field.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/availability.h"
#include "kernels/conv/conv.h"
#include "kernels/core/check.h"
#include "kernels/core/error.h"
#include "kernels/core/fill.h"
#include "kernels/gemm/cpu/packed_lowp.h"
#include "kernels/net/executor.h"
#include "kernels/net/precision.h"
#include "tests/cli_runner.h"
#include "tests/net_test_options.h"

namespace pb {
namespace {

// test::options (learning rate 0: the first steps' gradients are compared at the initial
// weights) in data type `dt`.
NetOptions lowp_options(const std::string& backend, const std::string& dt, bool train) {
  NetOptions o = test::options(backend, "first", train);
  o.dt = DataType::parse(dt, "dt");
  return o;
}

std::vector<std::string> backends() {
  std::vector<std::string> v = {"cpu"};
  if (onednn_unavailable().empty()) v.push_back("onednn");
  return v;
}

// Whether cpu/packed and cpu/direct (the cpu backend's kernels) run `dt` on this CPU: bf16 needs
// AVX-512 BF16; u8s8 runs on AVX-512 VNNI and, exactly, on AVX2 (cpu/packed's int16 route, which
// cpu/im2col takes). Without them (or under PRIMBENCH_SIMD=scalar) the plan runs those calls in
// fp32, each a reported fallback.
bool cpu_lowp(const std::string& dt) {
  return gemm_packed_lowp_unsupported(DataType::parse(dt, "dt")).empty();
}

// Whether oneDNN runs `dt` here: its bf16 convolutions need AVX-512, its u8s8 ones VNNI
// (onednn::u8s8_unsupported). Where it does not, the onednn backend takes the cpu backend's
// kernels (each a fallback to cpu), and fp32 only where those cannot either.
bool onednn_lowp(const std::string& dt) {
  for (const auto& e : conv_registry())
    if (e.name == "onednn/auto" && e.unavailable().empty())
      return bool(e.make()->supports(ConvDesc::parse("mb2ic16ih8oc16kh3ph1dt=" + dt), Dir::fwd));
  return false;
}

// Whether backend `b` runs `dt`'s convolution and fc calls typed.
bool lowp_kernels(const std::string& b, const std::string& dt) {
  return cpu_lowp(dt) || (b == "onednn" && onednn_lowp(dt));
}

// The calls an executor ran in fp32 in place of the requested type, each saying so.
using test::backend_available;

int f32_fallbacks(const Executor& ex) {
  int n = 0;
  for (const CallInfo& c : ex.calls()) n += c.note.find("fallback to f32") != std::string::npos;
  return n;
}

// The convolution and fc calls of an executor: how many run in `dt` (their descriptor says
// it) and how many quantise steps there are.
void count_typed(const Executor& ex, const std::string& dt, int* typed, int* quantise,
                 int* layers) {
  *typed = *quantise = *layers = 0;
  for (const CallInfo& c : ex.calls()) {
    if (c.phase.find("quantise") != std::string::npos) ++*quantise;
    if (c.prim != "conv" && c.prim != "gemm") continue;
    ++*layers;
    if (c.desc.find("dt=" + dt) != std::string::npos) ++*typed;
  }
}

TEST(NetLowpSmoke, InferenceRunsTheTypeNearFp32) {
  const Network net = Network::load("tiny_resnet");
  for (const std::string& b : backends())
    for (const char* dt : {"bf16", "u8s8"}) {
      SCOPED_TRACE(b + " " + dt);
      Executor f32(net, lowp_options(b, "f32", false));
      f32.step();
      const Tensor want = f32.output().clone();
      NetOptions o = lowp_options(b, dt, false);
      o.typed_handoff = false;  // every typed call after its own quantise step (see below)
      Executor ex(net, o);
      ex.step();
      int typed, quantise, layers;
      count_typed(ex, dt, &typed, &quantise, &layers);
      if (!lowp_kernels(b, dt)) {
        // No typed kernels here: what cannot run the type runs fp32 and says so; the logits
        // then stay near fp32's (top-1 agrees) with no bound on how few calls were typed.
        EXPECT_GT(f32_fallbacks(ex), 0);
        EXPECT_EQ(typed + f32_fallbacks(ex), layers);
        EXPECT_EQ(quantise, typed);
        EXPECT_EQ(compare_logits(ex.output(), want, net.mb).agree, net.mb);
        continue;
      }
      EXPECT_EQ(typed, layers) << "every convolution and fc call in " << dt;
      EXPECT_EQ(quantise, layers) << "each after its quantise step";
      // onednn: the loss, on cpu/native, and each typed layer oneDNN cannot run, on cpu's kernels.
      EXPECT_EQ(ex.fallbacks(), b != "onednn" ? 0 : onednn_lowp(dt) ? 1 : layers + 1);
      const PrecisionCheck c = compare_logits(ex.output(), want, net.mb);
      // The type's rounding shows (a typed plan that ran fp32 would give 0), and stays small:
      // measured 4.2e-3 (bf16) and 8.0e-3 (u8s8) on this network.
      EXPECT_GT(c.logit_err, 1e-4);
      EXPECT_LT(c.logit_err, 3e-2);
      EXPECT_EQ(c.agree, c.images);
    }
}

// The typed hand-off (NetOptions::typed_handoff, the default): where a post-ops pass writes a
// typed convolution's input, it writes the typed copy too and that quantise step goes. The same
// values as the quantise steps, bit for bit, at every step (a new batch too), with fewer steps.
TEST(NetLowpSmoke, TypedHandoffGivesTheQuantiseStepsValues) {
  const Network net = Network::load("tiny_resnet");
  int ran = 0;
  // cpu/direct's tiles (first), cpu/im2col's passes over each image (im2col) and the executor's
  // own pass after a convolution that takes no post-ops (winograd_f2, in bf16) write the copy.
  // The onednn backend (composed in a reduced type): the executor's own passes (the residual
  // adds) hand their typed copy to oneDNN's convolutions; a convolution with oneDNN's own
  // post-ops writes none (post_ops_write_typed_copy), so its readers keep their steps.
  struct Run {
    const char *backend, *policy;
  };
  for (const Run r : {Run{"cpu", "first"}, Run{"cpu", "im2col"}, Run{"cpu", "winograd_f2"},
                      Run{"onednn", "first"}})
    for (const char* dt : {"bf16", "u8s8"}) {
      const std::string b = r.backend;
      SCOPED_TRACE(b + " " + r.policy + " " + dt);
      if (b == "cpu" ? !cpu_lowp(dt) : !backend_available("onednn") || !onednn_lowp(dt))
        continue;  // no typed calls to hand to
      ++ran;
      NetOptions o = lowp_options(b, dt, false);
      o.policy = r.policy;
      o.typed_handoff = false;
      Executor steps(net, o);
      o.typed_handoff = true;
      Executor handed(net, o);
      int typed, quantise, layers, typed_h, quantise_h;
      count_typed(steps, dt, &typed, &quantise, &layers);
      count_typed(handed, dt, &typed_h, &quantise_h, &layers);
      EXPECT_EQ(typed_h, typed);
      EXPECT_EQ(quantise, layers);
      // tiny_resnet: the first convolution reads the input and the fc the pooled features (no
      // post-ops pass writes them); every other convolution's input comes from one.
      if (b == "cpu") {
        EXPECT_EQ(quantise_h, 2) << handed.composition();
      } else {
        EXPECT_GT(quantise_h, 2) << handed.composition();
        EXPECT_LT(quantise_h, quantise) << handed.composition();
      }
      EXPECT_NE(handed.composition().find(std::to_string(quantise - quantise_h) +
                                          " quantise steps fused into the post-ops"),
                std::string::npos)
          << handed.composition();
      for (int batch = 0; batch < 2; ++batch) {
        if (batch == 1)
          for (Executor* e : {&steps, &handed}) fill_uniform(e->input(), 7, -1, 1);
        steps.step();
        handed.step();
        const Tensor& a = steps.output();
        const Tensor& h = handed.output();
        ASSERT_EQ(a.size(), h.size());
        int64_t differ = 0;
        for (int64_t i = 0; i < a.size(); ++i) differ += a[i] != h[i];
        EXPECT_EQ(differ, 0) << "batch " << batch << ": logits differ";
      }
    }
  if (ran == 0) GTEST_SKIP() << "no bf16 or u8s8 kernels on this CPU";
}

// Which post-ops write PostOps' typed copy: the host convolutions' (apply_post_ops, the direct
// tiles' scatter), never oneDNN's own (the hand-off must not read a copy nobody wrote).
TEST(NetLowpSmoke, OnlyHostPostOpsWriteTheTypedCopy) {
  int seen = 0;
  for (const auto& e : conv_registry()) {
    if (!e.unavailable().empty()) continue;
    const bool host = e.name.rfind("cpu/", 0) == 0;
    if (!host && e.name.rfind("onednn/", 0) != 0) continue;
    EXPECT_EQ(e.make()->post_ops_write_typed_copy(), host) << e.name;
    ++seen;
  }
  EXPECT_GT(seen, 0);
}

// The quantise steps convert each step's activations: a new input batch gives the fp32 network's
// logits for that batch, not the first batch's.
TEST(NetLowpSmoke, NewInputsReachTheTypedLayers) {
  const Network net = Network::load("tiny_resnet");
  for (const char* dt : {"bf16", "u8s8"}) {
    SCOPED_TRACE(dt);
    Executor f32(net, lowp_options("cpu", "f32", false));
    Executor ex(net, lowp_options("cpu", dt, false));
    ex.step();
    const Tensor first = ex.output().clone();
    for (Executor* e : {&f32, &ex}) fill_uniform(e->input(), 99, -1, 1);
    f32.step();
    ex.step();
    // u8s8's calibration is the first batch's: the new one leaves its range in places
    // (saturated), measured 5.7e-2 against 0.37 for the first batch's logits.
    const PrecisionCheck now = compare_logits(ex.output(), f32.output(), net.mb);
    EXPECT_LT(now.logit_err, 0.1);
    EXPECT_GT(compare_logits(first, f32.output(), net.mb).logit_err, 4 * now.logit_err);
  }
}

// A bf16 training step: forward and backward convolutions and GEMMs in bf16 (where an
// implementation runs them; else a reported fp32 fallback). The fc layer's gradients stay near
// fp32's; the deeper ones move by 2-27% (measured on both backends alike: bf16's rounding of the
// activations, amplified by training batch-norm's backward over a batch of two), far below the
// error of a wrong layout or a missed conversion (O(1)); and cpu's and oneDNN's bf16 gradients,
// computed by different kernels, agree with each other within 5e-2 (measured <= 1.3%: where the
// cpu plan runs a backward call in fp32, a reported fallback, oneDNN runs it in bf16).
TEST(NetLowpSmoke, Bf16TrainingStepNearFp32) {
  const Network net = Network::load("tiny_resnet");
  std::vector<std::vector<Tensor>> grads;
  for (const std::string& b : backends()) {
    SCOPED_TRACE(b);
    Executor f32(net, lowp_options(b, "f32", true));
    Executor ex(net, lowp_options(b, "bf16", true));
    f32.step();
    ex.step();
    int typed, quantise, layers;
    count_typed(ex, "bf16", &typed, &quantise, &layers);
    EXPECT_EQ(quantise, typed);
    const bool kernels = lowp_kernels(b, "bf16");
    if (kernels) {
      EXPECT_GT(typed, layers / 3) << "the forward calls at least";
    }
    EXPECT_EQ(typed + f32_fallbacks(ex), layers);
    const auto names = ex.params();
    const std::vector<const Tensor*> g = ex.param_grads(), want = f32.param_grads();
    ASSERT_EQ(g.size(), want.size());
    grads.emplace_back();
    for (size_t i = 0; i < g.size(); ++i) {
      const double e = compare_tensors(*g[i], *want[i], {1, ""}).l2_rel;
      const bool fc = names[i].first.rfind("fc.", 0) == 0;
      EXPECT_LT(e, fc ? 1e-2 : 0.5) << names[i].first;
      if (fc) {
        EXPECT_GT(e, 1e-5) << names[i].first << ": bf16's rounding shows";
      }
      grads.back().push_back(g[i]->clone());
    }
  }
  for (size_t i = 0; grads.size() == 2 && i < grads[0].size(); ++i)
    EXPECT_LT(compare_tensors(grads[0][i], grads[1][i], {1, ""}).l2_rel, 5e-2) << i;
}

TEST(NetLowpSmoke, BadRequestsNameTheField) {
  const Network net = Network::load("tiny_resnet");
  auto refused = [&](const NetOptions& o, const std::string& needle) {
    try {
      Executor ex(net, o);
    } catch (const InputError& e) {
      EXPECT_EQ(e.field(), "dt");
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      return;
    }
    ADD_FAILURE() << "planned: " << o.dt.str() << " " << o.backend;
  };
  refused(lowp_options("cpu", "u8s8", true), "inference");
  refused(lowp_options("cpu", "f16", false), "bf16 or u8s8");
  refused(lowp_options("cpu", "bf16:bf16", false), "input type only");
  refused(lowp_options("ref", "bf16", false), "ref");
}

// primbench net --dt: the comparison with fp32 in the text and the JSON; bad values exit 2
// naming --dt.
TEST(NetLowpSmoke, CliReportsAgainstFp32) {
  const std::string json = testing::TempDir() + "pb_net_lowp.json";
  auto r = test::run_cli("net tiny_resnet --dt u8s8 --reps 1 --find-cache off --json " + json);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("against fp32"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("top-1 agreement 2/2"), std::string::npos) << r.out;
  std::ifstream f(json);
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_NE(ss.str().find("\"dt\":{\"type\":\"u8s8\",\"top1_agree\":1,"), std::string::npos)
      << ss.str().substr(0, 400);
  for (const char* bad : {"--dt u8s8 --train", "--dt int4", "--dt f16", "--dt u8s8 --check"}) {
    auto b = test::run_cli(std::string("net tiny_resnet --reps 1 ") + bad);
    EXPECT_EQ(b.status, 2) << bad << ": " << b.out;
    EXPECT_NE(
        b.out.find(std::string(bad).find("--check") != std::string::npos ? "--check" : "--dt"),
        std::string::npos)
        << bad << ": " << b.out;
  }
  // --quantise-steps: with a type only; with one, the same logits as the hand-off (the report
  // shows no fused steps then).
  auto plain = test::run_cli("net tiny_resnet --reps 1 --quantise-steps");
  EXPECT_EQ(plain.status, 2) << plain.out;
  EXPECT_NE(plain.out.find("--quantise-steps: applies with --dt"), std::string::npos) << plain.out;
  auto steps =
      test::run_cli("net tiny_resnet --dt u8s8 --reps 1 --find-cache off --quantise-steps");
  ASSERT_EQ(steps.status, 0) << steps.out;
  EXPECT_EQ(steps.out.find("quantise steps fused"), std::string::npos) << steps.out;
  EXPECT_NE(r.out.find("quantise steps fused"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace pb
