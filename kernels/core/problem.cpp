// Shared driver steps over type-erased problems.
#include "kernels/core/problem.h"

#include "kernels/core/machine.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <vector>

#include "kernels/core/error.h"

namespace pb {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

const PrimitiveInfo& find_primitive(const std::string& name) {
  std::string known;
  for (const auto& p : primitives()) {
    if (p.name == name) return p;
    known += (known.empty() ? "" : ", ") + p.name;
  }
  throw InputError("prim", "unknown primitive '" + name + "' (have: " + known + ")");
}

double timed_iteration(Runner& r, Timing timing, PhaseTimes* phases) {
  // Each phase is followed by sync() so that work enqueued on a device is counted in its phase.
  auto phase = [&r](auto&& fn, double* into) {
    const double t0 = now_seconds();
    fn();
    r.sync();
    const double t = now_seconds() - t0;
    *into += t;
    return t;
  };
  double total = 0;
  if (timing == Timing::step) total += phase([&] { r.weights(); }, &phases->wei_transform);
  if (timing != Timing::kernel) total += phase([&] { r.reorder_in(); }, &phases->act_reorder);
  total += phase([&] { r.run(); }, &phases->compute);
  if (timing != Timing::kernel) total += phase([&] { r.reorder_out(); }, &phases->act_reorder);
  return total;
}

size_t last_level_cache_bytes() {
  return cache_bytes(0);
}

void evict_caches() {
  static std::vector<float> buffer(2 * last_level_cache_bytes() / sizeof(float));
  static float value = 0;
  value += 1;
  const int64_t n = static_cast<int64_t>(buffer.size());
  float* b = buffer.data();
  const float v = value;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) b[i] = v;
}

void check_workspace_cap(const std::string& impl, size_t workspace_bytes) {
  static const double cap_mb = [] {
    const char* e = std::getenv("PRIMBENCH_MAX_WORKSPACE_MB");
    if (!e || !*e) return -1.0;
    char* end = nullptr;
    const double v = std::strtod(e, &end);
    if (*end || !(v > 0) || !std::isfinite(v))
      throw InputError("PRIMBENCH_MAX_WORKSPACE_MB",
                       std::string("'") + e + "' is not a positive number of MB");
    return v;
  }();
  if (cap_mb < 0 || workspace_bytes <= cap_mb * 1e6) return;
  char msg[200];
  std::snprintf(msg, sizeof msg, "%s's workspace of %.3g MB is over PRIMBENCH_MAX_WORKSPACE_MB=%g",
                impl.c_str(), workspace_bytes / 1e6, cap_mb);
  throw Unsupported(msg);
}

Measured measure(Problem& p, Runner& r, const MeasureOptions& o, std::vector<Tensor>* outputs) {
  Measured m;
  double t0 = now_seconds();
  r.plan();
  check_workspace_cap(r.name(), r.workspace_bytes());
  r.weights();
  r.forward_state();
  r.sync();
  m.prep_ms = 1e3 * (now_seconds() - t0);
  // The first run is the checked one: some problems (beta != 0) accumulate into the output.
  PhaseTimes first;
  timed_iteration(r, Timing::layer, &first);
  if (o.check || outputs) {
    std::vector<Tensor> out = r.result();
    // Testing the tester: PRIMBENCH_INJECT_ERROR=<impl> adds 1 to that implementation's first
    // output element, so a test can prove the check (and every exit status) catches it.
    const char* inject = std::getenv("PRIMBENCH_INJECT_ERROR");
    if (inject && r.name() == inject && !out.empty() && out[0].size() > 0) out[0][0] += 1.0f;
    if (o.check) {
      m.check = p.check(r.name(), out, o.ref_budget_flops);
      m.checked = true;
    }
    if (outputs) *outputs = std::move(out);
  }
  // The kernel contract finds the activations in the implementation's layout, converted untimed.
  if (o.timing == Timing::kernel) {
    r.reorder_in();
    r.sync();
  }
  for (int i = 0; i < o.reps; ++i) {
    if (o.cache == CacheState::cold) evict_caches();
    m.times_s.push_back(timed_iteration(r, o.timing, &m.phases));
  }
  return m;
}

}  // namespace pb
