// Type-erased problems and runners: what the CLI, the benchmarks and the tests iterate over,
// whatever the primitive. A primitive plugs in through TypedProblem<Traits> (typed_problem.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/core/check.h"
#include "kernels/core/impl.h"
#include "kernels/core/tensor.h"

namespace pb {

struct NamedTensor {
  std::string name;
  Tensor tensor;
};

// One implementation bound to one problem, phase by phase (impl.h says what each phase does).
class Runner {
 public:
  virtual ~Runner() = default;
  virtual std::string name() const = 0;
  virtual void plan() = 0;  // never timed
  virtual void weights() = 0;
  virtual void forward_state() = 0;  // never timed
  virtual void reorder_in() = 0;
  virtual void run() = 0;
  virtual void reorder_out() = 0;
  virtual void sync() = 0;
  virtual std::vector<Tensor> result() = 0;
  virtual size_t workspace_bytes() const = 0;
  virtual std::vector<std::pair<std::string, double>> extra_counters() const = 0;
};

// What a timed iteration contains (ARCHITECTURE.md, "Timing contracts"), the same for every
// implementation: kernel = run; layer = reorder_in + run + reorder_out; step = weights + layer.
enum class Timing { kernel, layer, step };
std::string timing_str(Timing t);
Timing parse_timing(const std::string& s, const std::string& field);  // InputError(field)
// Cache state before each timed iteration: hot (left as the last iteration left it) or cold
// (evicted by an untimed pass over a buffer larger than the last-level cache).
enum class CacheState { hot, cold };
std::string cache_str(CacheState c);
CacheState parse_cache(const std::string& s, const std::string& field);  // InputError(field)

// Seconds spent in each phase of timed iterations, summed.
struct PhaseTimes {
  double compute = 0, act_reorder = 0, wei_transform = 0;
  double total() const { return compute + act_reorder + wei_transform; }
};
// One timed iteration under `timing`: each phase the contract includes, then sync(), timed on a
// steady clock; adds each phase's seconds to *phases and returns their sum.
double timed_iteration(Runner& r, Timing timing, PhaseTimes* phases);
// The untimed pass of the cold cache state: writes (from every thread) a buffer twice the size
// of the last-level cache read from sysfs (64 MiB when unknown).
void evict_caches();
size_t last_level_cache_bytes();

// One descriptor of one primitive in one direction, with seeded inputs and a cached reference.
class Problem {
 public:
  virtual ~Problem() = default;
  virtual std::string prim() const = 0;
  virtual std::string desc_str() const = 0;  // round-trips through the primitive's parse()
  virtual std::string name() const = 0;      // the n"..." name, may be empty
  virtual Dir dir() const = 0;
  virtual double flops() const = 0;  // useful FLOPs (direct-algorithm count)
  virtual double bytes() const = 0;  // bytes that must move: inputs read + outputs written
  // The data type's measured rate over fp32 FMA here (machine.h's peak_scale; 1 for f32): peak
  // percentages are of the fp32 peak times this.
  virtual double peak_scale() const { return 1; }
  virtual std::string layout() const = 0;  // how to read the tensors (for --save)
  // Registry names, in registry order.
  virtual std::vector<std::string> impls() const = 0;
  // The runner, or null with *why set when unavailable here or not supporting this problem.
  // Throws InputError("impl", ...) for a name not in the registry.
  virtual std::unique_ptr<Runner> runner(const std::string& impl, std::string* why) = 0;
  virtual const std::vector<NamedTensor>& inputs() = 0;
  virtual std::vector<std::string> output_names() const = 0;
  // Compares outputs to the reference. A reference costing more than `ref_budget_flops`
  // is evaluated on a seeded sample of output elements instead of in full.
  virtual CheckResult check(const std::string& impl, const std::vector<Tensor>& outputs,
                            double ref_budget_flops) = 0;
};

// A primitive as the drivers see it.
struct PrimitiveInfo {
  std::string name;       // folder and CLI name: "gemm"
  std::vector<Dir> dirs;  // directions it runs
  std::string grammar;    // one-line grammar help for `primbench list`
  std::function<std::unique_ptr<Problem>(const std::string& desc, Dir dir, uint64_t seed)> make;
  // (impl name, "" or the reason it is unavailable here)
  std::function<std::vector<std::pair<std::string, std::string>>()> impls;
  // For tests: a descriptor whose reference costs at most max_flops, made by scaling the
  // dimensions that dominate; *tag says what was scaled ("" when nothing was, else e.g.
  // "scaled_k"). Null: the primitive's shapes are always cheap enough.
  std::function<std::string(const std::string& desc, double max_flops, std::string* tag)> shrink;
};

// Every primitive compiled in (kernels/primitives.cpp). find_primitive throws InputError("prim").
const std::vector<PrimitiveInfo>& primitives();
const PrimitiveInfo& find_primitive(const std::string& name);

// Default reference budget: a naive fp64 reference runs at ~1 GFLOP/s, so beyond this the
// check samples output elements.
constexpr double kRefBudgetFlops = 4e9;

// --- shared driver steps ---

struct Measured {
  double prep_ms = 0;           // plan + weights + forward_state, untimed
  std::vector<double> times_s;  // per repetition, the contract's phases
  PhaseTimes phases;            // summed over the repetitions
  CheckResult check;
  bool checked = false;
};

struct MeasureOptions {
  int reps = 0;
  bool check = false;
  Timing timing = Timing::layer;
  CacheState cache = CacheState::hot;
  double ref_budget_flops = kRefBudgetFlops;
};

// plan, weights and forward_state (timed together as prep_ms), one reorder_in + run +
// reorder_out checked against the reference (PRIMBENCH_INJECT_ERROR=<impl> adds 1 to that
// implementation's first output element, to prove that checks catch it), then o.reps timed
// iterations of the contract. The checked run's outputs go to *outputs when given. Exceptions
// propagate.
Measured measure(Problem& p, Runner& r, const MeasureOptions& o,
                 std::vector<Tensor>* outputs = nullptr);
// The same in the layer contract, hot caches (tests).
inline Measured measure(Problem& p, Runner& r, int reps, bool check,
                        double ref_budget_flops = kRefBudgetFlops) {
  MeasureOptions o;
  o.reps = reps, o.check = check, o.ref_budget_flops = ref_budget_flops;
  return measure(p, r, o);
}

double now_seconds();  // steady clock

// The workspace cap (PRIMBENCH_MAX_WORKSPACE_MB, a positive number of MB; unset: none): throws
// Unsupported naming the cap when an implementation's planned workspace is over it, so that it
// is skipped with that reason, as a library refuses an algorithm whose workspace is over a
// framework's limit. Checked after plan() (the interface has no workspace query before it);
// measure() and the network executor's search apply it. Bad values: InputError naming it.
void check_workspace_cap(const std::string& impl, size_t workspace_bytes);

}  // namespace pb
