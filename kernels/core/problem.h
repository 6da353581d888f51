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

// One implementation bound to one problem.
class Runner {
 public:
  virtual ~Runner() = default;
  virtual std::string name() const = 0;
  virtual void prepare() = 0;  // untimed
  virtual void run() = 0;      // timed
  virtual void sync() = 0;
  virtual std::vector<Tensor> result() = 0;
  virtual size_t workspace_bytes() const = 0;
  virtual std::vector<std::pair<std::string, double>> extra_counters() const = 0;
};

// One descriptor of one primitive in one direction, with seeded inputs and a cached reference.
class Problem {
 public:
  virtual ~Problem() = default;
  virtual std::string prim() const = 0;
  virtual std::string desc_str() const = 0;  // round-trips through the primitive's parse()
  virtual std::string name() const = 0;      // the n"..." name, may be empty
  virtual Dir dir() const = 0;
  virtual double flops() const = 0;        // useful FLOPs (direct-algorithm count)
  virtual double bytes() const = 0;        // bytes that must move: inputs read + outputs written
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
  double prep_ms = 0;
  std::vector<double> times_s;  // per repetition, run()+sync()
  CheckResult check;
  bool checked = false;
};

// prepare (timed separately) + one run + result + check, then reps timed run()+sync().
// Returns prep time, per-rep times and the check; the first run's outputs go to *outputs when
// given. Exceptions propagate.
Measured measure(Problem& p, Runner& r, int reps, bool do_check,
                 double ref_budget_flops = kRefBudgetFlops, std::vector<Tensor>* outputs = nullptr);

double now_seconds();  // steady clock

}  // namespace pb
