// The fused network plans against the reference composition: oneDNN's (its layouts and post-ops
// in inference, its forward_training and backward primitives in training) and the executor's own
// inference passes after each convolution or fc (kernels/net/fuse_native.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "kernels/availability.h"
#include "kernels/core/check.h"
#include "kernels/core/fill.h"
#include "kernels/net/executor.h"
#include "tests/net_test_options.h"

using pb::test::backend_available;
using pb::test::compare;
using pb::test::expect_matches_reference;
using pb::test::options;
using pb::test::temp_net;

namespace pb {
namespace {

// An inference plan of backend o run once, then every weight scaled by 1.5 through params():
// its next step matches the reference's with the same weights, and differs from `before` (the
// reference's output with the first weights).
void expect_changed_weights_reach(const Network& net, const NetOptions& o, const Tensor& before) {
  Executor ex(net, o);
  Executor ref(net, options("ref", "first", false));
  ex.step();  // the plan ran once with the first weights
  for (Executor* e : {&ex, &ref})
    for (auto& [name, t] : e->params())
      for (int64_t i = 0; i < t->size(); ++i) (*t)[i] *= 1.5f;
  ex.step();
  ref.step();
  CheckResult r = compare(ex.output(), ref.output());
  EXPECT_TRUE(r.pass) << o.backend << ", after params() changed the weights: " << r.summary();
  EXPECT_GT(compare(ex.output(), before).l2_rel, 1e-3);  // they did change the output
}

// Backend onednn in inference runs the fused plan (oneDNN layouts between layers, post-ops),
// counted reorders, and matches the reference as the composed plan does; --composed and a named
// algorithm keep the composed calls.
TEST(NetSmoke, OnednnInferenceIsFused) {
  if (!backend_available("onednn")) GTEST_SKIP() << onednn_unavailable();
  const Network net = Network::load("tiny_resnet");
  Executor ref(net, options("ref", "first", false));
  ref.step();
  for (const auto& [policy, composed] : std::vector<std::pair<std::string, bool>>{
           {"best", false}, {"best", true}, {"winograd", false}}) {
    NetOptions o = options("onednn", policy, false);
    o.composed = composed;
    Executor ex(net, o);
    const bool fused = policy == "best" && !composed;
    EXPECT_EQ(ex.composition().rfind("fused", 0) == 0, fused) << ex.composition();
    // Composed for a named algorithm: the executor's passes after each convolution, as on the
    // cpu backend; --composed: one call per layer.
    if (!fused) {
      EXPECT_EQ(ex.composition().find("the executor's 7 passes") != std::string::npos, !composed)
          << ex.composition();
    }
    if (fused) {
      EXPECT_GE(ex.reorders(), 1);  // at least the input, NCHW to oneDNN's layout
      int fused_calls = 0;
      for (const CallInfo& c : ex.calls()) fused_calls += c.impl == "onednn/fused";
      EXPECT_GT(fused_calls, 0);
      EXPECT_EQ(ex.calls().back().impl, "cpu/native");  // the loss
    }
    ex.step();
    ex.step();
    CheckResult r = compare(ex.output(), ref.output());
    EXPECT_TRUE(r.pass) << policy << " composed=" << composed << ": " << r.summary();
    EXPECT_NEAR(ex.loss(), ref.loss(), 1e-4 * std::fabs(ref.loss()));
  }
  // Weights changed through params() reach the fused plan (folded again).
  expect_changed_weights_reach(net, options("onednn", "best", false), ref.output());

  // A batch-norm with its own ReLU before a residual add: ReLU, then the sum (not the reverse).
  const Network bn_relu =
      Network::load(temp_net("data input mb2c4h6\n"
                             "c1 conv mb2ic4ih6oc4kh3ph1\n"
                             "bn1 bnorm mb2ic4ih6_scale_shift_relu\n"
                             "sum add < bn1,data\n"
                             "pool pool mb2ic4ih6kh6sh1_avgp\n"
                             "fc fc oc3 bias\n"
                             "loss loss xent_mb2ic3\n"));
  Executor fused(bn_relu, options("onednn", "best", false));
  Executor ref3(bn_relu, options("ref", "first", false));
  EXPECT_EQ(fused.composition().rfind("fused", 0), 0u) << fused.composition();
  fused.step();
  ref3.step();
  CheckResult r = compare(fused.output(), ref3.output());
  EXPECT_TRUE(r.pass) << "batch-norm ReLU then add: " << r.summary();
}

// Backend cpu in inference runs what follows each convolution or fc (bias, batch-norm, residual
// add, ReLU) as one pass, or as the convolution's own post-ops where its implementation has them
// (cpu/im2col), and matches the reference as the composed plan (--composed) does; weights changed
// through params() reach the passes and the post-ops.
TEST(NetSmoke, CpuInferenceFusesWhatFollowsAConvolution) {
  const Network net = Network::load("tiny_resnet");
  auto kind_of = [](const Network& n, const std::string& layer) {
    for (const Layer& L : n.layers)
      if (L.name == layer) return L.kind;
    return LayerKind::input;
  };
  Executor ref(net, options("ref", "first", false));
  ref.step();
  for (bool composed : {false, true}) {
    NetOptions o = options("cpu", "best", false);
    o.composed = composed;
    Executor ex(net, o);
    EXPECT_EQ(ex.composition().rfind(composed ? "composed" : "fused", 0), 0u) << ex.composition();
    int bnorm_calls = 0, passes = 0;
    for (const CallInfo& c : ex.calls()) {
      bnorm_calls += kind_of(net, c.layer) == LayerKind::bnorm;
      passes += (c.impl == "native" || c.phase.rfind("fwd+", 0) == 0) &&
                c.phase.find("relu") != std::string::npos;
    }
    // Composed: one call per batch-norm; fused: none left, a pass per convolution but the two
    // projections (folded into the pass of the convolution whose sum they feed).
    EXPECT_EQ(bnorm_calls, composed ? 9 : 0);
    EXPECT_EQ(passes, composed ? 0 : 7);
    ex.step();
    ex.step();
    CheckResult r = compare(ex.output(), ref.output());
    EXPECT_TRUE(r.pass) << "composed=" << composed << ": " << r.summary();
  }
  expect_changed_weights_reach(net, options("cpu", "best", false), ref.output());
  expect_changed_weights_reach(net, options("cpu", "im2col", false), ref.output());

  // The forms a pass takes, and where none is made: a batch-norm with its own ReLU before a sum
  // (ReLU, then the sum: the pass ends at the batch-norm); a convolution's bias and ReLU; a sum
  // of two batch-norms, one over a projection without scale; a batch-norm read by two layers
  // (no pass: it replaces one call); an fc's bias and ReLU.
  const Network forms =
      Network::load(temp_net("data input mb2c16h6\n"
                             "c1 conv mb2ic16ih6oc16kh3ph1 bias\n"
                             "bn1 bnorm mb2ic16ih6_scale_shift_relu\n"
                             "sum1 add < bn1,data\n"
                             "c2 conv mb2ic16ih6oc16kh1 bias < sum1\n"
                             "r2 act relu_mb2ic16ih6\n"
                             "c3 conv mb2ic16ih6oc16kh3ph1\n"
                             "bn3 bnorm mb2ic16ih6_scale_shift\n"
                             "c4 conv mb2ic16ih6oc16kh1 bias < r2\n"
                             "bn4 bnorm mb2ic16ih6_shift\n"
                             "sum2 add < bn3,bn4\n"
                             "r3 act relu_mb2ic16ih6\n"
                             "c5 conv mb2ic16ih6oc16kh1\n"
                             "bn5 bnorm mb2ic16ih6_scale_shift\n"
                             "r5 act relu_mb2ic16ih6\n"
                             "sum3 add < r5,bn5\n"
                             "pool pool mb2ic16ih6kh2sh2_max\n"
                             "fc fc oc5 bias\n"
                             "r6 act relu_mb2ic5\n"
                             "loss loss xent_mb2ic5\n"));
  Executor ref3(forms, options("ref", "first", false));
  ref3.step();
  // cpu/fft has no post-ops: every group is a pass of its own. cpu/im2col takes them in the
  // convolution, or in the projection c4 where it runs after c3 (the sum's other operand).
  for (const std::string policy : {"fft", "im2col"}) {
    Executor fused(forms, options("cpu", policy, false));
    std::vector<std::string> got;
    for (const CallInfo& c : fused.calls())
      if (c.impl == "native" || c.phase.rfind("fwd+", 0) == 0 ||
          kind_of(forms, c.layer) == LayerKind::bnorm ||
          kind_of(forms, c.layer) == LayerKind::add || kind_of(forms, c.layer) == LayerKind::act)
        got.push_back(c.layer + " " + c.phase);
    if (policy == "fft")
      EXPECT_EQ(got, (std::vector<std::string>{"c1 bias+bn+relu", "sum1 fwd", "c2 bias+relu",
                                               "c3 bn+add_bn+relu", "bn5 fwd", "r5 fwd", "sum3 fwd",
                                               "fc bias+relu"}));
    else
      EXPECT_EQ(got, (std::vector<std::string>{"c1 fwd+bias+bn+relu", "sum1 fwd",
                                               "c2 fwd+bias+relu", "c4 fwd+bn+add_bn+relu",
                                               "bn5 fwd", "r5 fwd", "sum3 fwd", "fc bias+relu"}));
    fused.step();
    CheckResult r = compare(fused.output(), ref3.output());
    EXPECT_TRUE(r.pass) << policy << ": " << r.summary();
    EXPECT_NEAR(fused.loss(), ref3.loss(), 1e-4 * std::fabs(ref3.loss())) << policy;
  }

  // A sum whose other operand (c2, a convolution) runs after the convolution c1: c1 cannot add
  // it in its post-ops (not computed yet), so the sum stays a pass after c2.
  const Network late =
      Network::load(temp_net("data input mb2c8h6\n"
                             "c1 conv mb2ic8ih6oc8kh1\n"
                             "bn1 bnorm mb2ic8ih6_scale_shift\n"
                             "c2 conv mb2ic8ih6oc8kh3ph1 < data\n"
                             "sum add < bn1,c2\n"
                             "r act relu_mb2ic8ih6\n"
                             "c3 conv mb2ic8ih6oc8kh1\n"
                             "pool pool mb2ic8ih6kh6sh1_avgp\n"
                             "loss loss xent_mb2ic8\n"));
  Executor lex(late, options("cpu", "im2col", false));
  std::vector<std::string> got;
  for (const CallInfo& c : lex.calls()) got.push_back(c.layer + " " + c.phase);
  EXPECT_EQ(got, (std::vector<std::string>{"c1 fwd", "c2 fwd", "c1 bn+add+relu", "c3 fwd",
                                           "pool fwd", "loss fwd"}));
  Executor lref(late, options("ref", "first", false));
  lex.step();
  // A new input: c2's output from the step before would no longer be the right operand.
  for (Executor* e : {&lex, &lref}) fill_uniform(e->input(), 99, -1, 1);
  lex.step();
  lref.step();
  CheckResult lr = compare(lex.output(), lref.output());
  EXPECT_TRUE(lr.pass) << lr.summary();
}

// Backend onednn in training runs the fused plan too: forward_training and backward primitives
// in oneDNN's layouts (batch-norm + ReLU as one), the loss and the SGD update composed; its
// gradients match the reference (BackendsMatchTheReferenceComposition runs tiny_resnet, with
// its gradient sums at the residual branches), also where the layers' order tests the fusions.
TEST(NetSmoke, OnednnTrainingIsFused) {
  if (!backend_available("onednn")) GTEST_SKIP() << onednn_unavailable();
  const Network net = Network::load("tiny_resnet");
  Executor ex(net, options("onednn", "best", true));
  EXPECT_EQ(ex.composition().rfind("fused", 0), 0u) << ex.composition();
  EXPECT_NE(ex.composition().find("of weights"), std::string::npos) << ex.composition();
  EXPECT_GT(ex.reorders(), 0);
  std::vector<std::string> order;  // the phases in call order: fused forward, loss, backward, sgd
  for (const CallInfo& c : ex.calls()) {
    const std::string kind = c.layer == "loss"              ? "loss"
                             : c.phase == "sgd"             ? "sgd"
                             : c.impl != "onednn/fused"     ? "other:" + c.layer + " " + c.phase
                             : c.phase.rfind("bwd", 0) == 0 ? "bwd"
                                                            : "fwd";
    if (order.empty() || order.back() != kind) order.push_back(kind);
  }
  EXPECT_EQ(order, (std::vector<std::string>{"fwd", "loss", "bwd", "sgd"}));
  NetOptions composed = options("onednn", "best", true);
  composed.composed = true;
  EXPECT_EQ(Executor(net, composed).composition(), "composed");

  // Batch-norm with its own ReLU before a residual add; an add followed by a ReLU (fused in
  // inference, not in training); a ReLU output read by two layers (its gradients summed); a
  // convolution's bias (not before a batch-norm, where its gradient is zero); an fc without bias
  // after max pooling.
  const Network orders =
      Network::load(temp_net("data input mb2c16h6\n"
                             "c1 conv mb2ic16ih6oc16kh3ph1\n"
                             "bn1 bnorm mb2ic16ih6_scale_shift_relu\n"
                             "sum add < bn1,data\n"
                             "r1 act relu_mb2ic16ih6\n"
                             "c2 conv mb2ic16ih6oc16kh1 bias < r1\n"
                             "sum2 add < c2,r1\n"
                             "pool pool mb2ic16ih6kh2sh2_max\n"
                             "fc fc oc5\n"
                             "loss loss xent_mb2ic5\n"));
  expect_matches_reference(orders, {{"onednn", {"best"}}});
  Executor o(orders, options("onednn", "best", true));
  EXPECT_EQ(o.composition().rfind("fused", 0), 0u) << o.composition();
}

}  // namespace
}  // namespace pb
