// Shared driver steps over type-erased problems.
#include "kernels/core/problem.h"

#include <chrono>
#include <cstdlib>

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

Measured measure(Problem& p, Runner& r, int reps, bool do_check, double ref_budget_flops,
                 std::vector<Tensor>* outputs) {
  Measured m;
  double t0 = now_seconds();
  r.prepare();
  m.prep_ms = 1e3 * (now_seconds() - t0);
  // The first run is the checked one: some problems (beta != 0) accumulate into the output.
  r.run();
  r.sync();
  if (do_check || outputs) {
    std::vector<Tensor> out = r.result();
    // Testing the tester: PRIMBENCH_INJECT_ERROR=<impl> adds 1 to that implementation's first
    // output element, so a test can prove the check (and the CLI's exit status 1) catches it.
    const char* inject = std::getenv("PRIMBENCH_INJECT_ERROR");
    if (inject && r.name() == inject && !out.empty() && out[0].size() > 0) out[0][0] += 1.0f;
    if (do_check) {
      m.check = p.check(r.name(), out, ref_budget_flops);
      m.checked = true;
    }
    if (outputs) *outputs = std::move(out);
  }
  for (int i = 0; i < reps; ++i) {
    double t = now_seconds();
    r.run();
    r.sync();
    m.times_s.push_back(now_seconds() - t);
  }
  return m;
}

}  // namespace pb
