// The timing contracts (ARCHITECTURE.md, "Timing contracts"): which phases each contract times,
// what measure() runs untimed, and that a vendor's layout conversions land in the timed phases.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/availability.h"
#include "kernels/conv/conv.h"
#include "kernels/core/error.h"
#include "kernels/core/problem.h"

namespace pb {
namespace {

// A runner that records the phases called, in order.
class Recorder : public Runner {
 public:
  std::vector<std::string> calls;
  std::string name() const override { return "test/recorder"; }
  void plan() override { calls.push_back("plan"); }
  void weights() override { calls.push_back("weights"); }
  void forward_state() override { calls.push_back("forward_state"); }
  void reorder_in() override { calls.push_back("reorder_in"); }
  void run() override { calls.push_back("run"); }
  void reorder_out() override { calls.push_back("reorder_out"); }
  void sync() override {}
  std::vector<Tensor> result() override { return {}; }
  size_t workspace_bytes() const override { return 0; }
  std::vector<std::pair<std::string, double>> extra_counters() const override { return {}; }
};

std::vector<std::string> phases_of(Timing t) {
  Recorder r;
  PhaseTimes p;
  timed_iteration(r, t, &p);
  return r.calls;
}

TEST(TimingSmoke, ContractsTimeTheirPhases) {
  using V = std::vector<std::string>;
  EXPECT_EQ(phases_of(Timing::kernel), V({"run"}));
  EXPECT_EQ(phases_of(Timing::layer), V({"reorder_in", "run", "reorder_out"}));
  EXPECT_EQ(phases_of(Timing::step), V({"weights", "reorder_in", "run", "reorder_out"}));
  EXPECT_EQ(parse_timing("step", "f"), Timing::step);
  EXPECT_THROW(parse_timing("fast", "--timing"), InputError);
  EXPECT_THROW(parse_cache("warm", "--cache"), InputError);
  EXPECT_GT(last_level_cache_bytes(), size_t(1) << 16);
}

// The phase sums add up to the iteration's time, phase by phase.
TEST(TimingSmoke, PhaseTimesAddUpToTheIteration) {
  Recorder r;
  PhaseTimes p;
  const double t = timed_iteration(r, Timing::step, &p);
  EXPECT_DOUBLE_EQ(t, p.total());
}

// Per contract, the phases' sums: wei_transform only in the step contract, act_reorder never in
// the kernel contract; cold caches run.
TEST(TimingSmoke, MeasureAccumulatesTheContractsPhases) {
  const PrimitiveInfo& conv = find_primitive("conv");
  auto p = conv.make("mb2ic32ih28oc64kh3ph1", Dir::fwd, 1);
  for (Timing t : {Timing::kernel, Timing::layer, Timing::step}) {
    std::string why;
    auto r = p->runner("cpu/winograd_f4", &why);
    ASSERT_TRUE(r) << why;
    MeasureOptions o;
    o.reps = 3, o.check = true, o.timing = t, o.cache = CacheState::cold;
    Measured m = measure(*p, *r, o);
    EXPECT_TRUE(m.check.pass) << m.check.summary();
    ASSERT_EQ(m.times_s.size(), 3u);
    EXPECT_GT(m.phases.compute, 0);
    EXPECT_EQ(m.phases.wei_transform > 0, t == Timing::step) << timing_str(t);
    EXPECT_EQ(m.phases.act_reorder > 0, t != Timing::kernel) << timing_str(t);
  }
}

// The first output after changing the inputs in place and running `phases`.
std::vector<float> output_after(ConvImpl& impl, Tensor& changed, const char* phases) {
  for (int64_t i = 0; i < changed.size(); ++i) changed[i] *= 2;
  const std::string ph = phases;
  if (ph.find('w') != std::string::npos) impl.weights();
  if (ph.find('i') != std::string::npos) impl.reorder_in();
  impl.run();
  impl.reorder_out();
  impl.sync();
  Tensor out = std::move(impl.result().at(0));
  return std::vector<float>(out.data(), out.data() + out.size());
}

// Where each conversion lives: an implementation that keeps weights in its own form (oneDNN's
// blocked layout, Winograd's transformed filters, the direct convolution's repack) sees new
// weights only after weights(), the phase the step contract times; oneDNN's blocked source is
// converted in reorder_in(), timed by the layer contract (not in plan(), untimed).
TEST(TimingSmoke, ConversionsLiveInTheirPhases) {
  const ConvDesc d = ConvDesc::parse("mb2ic32ih28oc64kh3ph1");
  for (const auto& e : conv_registry()) {
    const bool keeps_weights = e.name == "onednn/auto" || e.name == "cpu/winograd_f4" ||
                               e.name == "cpu/direct" || e.name == "cpu/fft";
    if (!keeps_weights || !e.unavailable().empty()) continue;
    for (bool change_weights : {true, false}) {
      Tensor src(d.src_dims()), wei(d.wei_dims());
      for (int64_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i % 7) - 3;
      for (int64_t i = 0; i < wei.size(); ++i) wei[i] = static_cast<float>(i % 5) - 2;
      auto impl = e.make();
      plan_phases(*impl, d, Dir::fwd, {&src, &wei});
      run_phases(*impl);
      Tensor first = std::move(impl->result().at(0));
      const std::vector<float> before(first.data(), first.data() + first.size());
      Tensor& changed = change_weights ? wei : src;
      const bool blocked_src = e.name == "onednn/auto" && impl->workspace_bytes() > 0;
      // Without the phase that converts the changed tensor, the output must not move, where
      // the implementation converts it; with the phase, it must.
      const std::vector<float> stale = output_after(*impl, changed, change_weights ? "i" : "");
      if (change_weights) {
        EXPECT_EQ(stale, before) << e.name << ": new weights used without weights()";
      } else if (blocked_src) {
        EXPECT_EQ(stale, before) << e.name << ": new source used without reorder_in()";
      }
      const std::vector<float> fresh = output_after(*impl, changed, change_weights ? "wi" : "i");
      EXPECT_NE(fresh, before) << e.name;
    }
  }
}

}  // namespace
}  // namespace pb
