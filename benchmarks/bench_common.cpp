// Shared bench_<prim> driver: flags, run-time registration from data sets, one checked run per
// implementation (err counter; a failed check is a FAIL row and exit status 1), manual timing of
// the timing contract's phases, hot or cold caches, machine facts in the context.
#include "benchmarks/bench_common.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <regex>
#include <sstream>

#include "kernels/core/dataset.h"
#include "kernels/core/dtype.h"
#include "kernels/core/error.h"
#include "kernels/core/io.h"
#include "kernels/core/machine.h"
#include "kernels/core/meter.h"
#include "kernels/core/threads.h"
#include "kernels/environment.h"

namespace pb::bench {

namespace {

// Reference budget for the err counter: beyond it the check samples output elements.
constexpr double kBenchRefBudget = 5e8;

struct Flags {
  std::vector<std::string> sets, dirs, dts;
  bool only_default = false, check = true;
  int batch = 0;
  uint64_t seed = 1;
  Timing timing = Timing::layer;
  CacheState cache = CacheState::hot;
};

// "_bf16", "_u8s8_s8" for a descriptor with a reduced data type (dt=...), else "": the type goes
// into the benchmark's first name part (gemm_bf16/cpu/packed/...), like a direction. The word
// ends as the grammar's tokenizer ends it: at a character outside [A-Za-z0-9:], or before the n of
// a quoted name that follows (conv prints dt=bf16n"name").
std::string dt_tag(const std::string& desc) {
  static const std::regex re("dt=([A-Za-z0-9:]+?)(?:n\"|[^A-Za-z0-9:]|$)");
  std::smatch m;
  if (!std::regex_search(desc, m, re) || m[1] == "f32") return "";
  std::string tag = "_" + m[1].str();
  std::replace(tag.begin(), tag.end(), ':', '_');
  return tag;
}

// Removes our --primbench_* flags from argv; InputError on an unknown one.
Flags take_flags(int* argc, char** argv) {
  Flags f;
  int out = 1;
  for (int i = 1; i < *argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--primbench_", 0) != 0) {
      argv[out++] = argv[i];
      continue;
    }
    auto eq = a.find('=');
    std::string key = a.substr(0, eq), val = eq == std::string::npos ? "" : a.substr(eq + 1);
    if (key == "--primbench_sets")
      f.sets = split_list(val);
    else if (key == "--primbench_dirs")
      f.dirs = split_list(val);
    else if (key == "--primbench_dt")
      f.dts = split_list(val);
    else if (key == "--primbench_default")
      f.only_default = flag_bool(key, val);
    else if (key == "--primbench_batch")
      f.batch = flag_int(key, val, 1);
    else if (key == "--primbench_seed")
      f.seed = static_cast<uint64_t>(flag_int(key, val, 0));
    else if (key == "--primbench_check")
      f.check = flag_int(key, val, 0) != 0;
    else if (key == "--primbench_threads")
      set_threads(flag_int(key, val, 1));
    else if (key == "--primbench_timing")
      f.timing = parse_timing(val, key);
    else if (key == "--primbench_cache")
      f.cache = parse_cache(val, key);
    else
      throw InputError(key,
                       "unknown flag (--primbench_sets, --primbench_default, --primbench_dirs, "
                       "--primbench_dt, --primbench_batch, --primbench_seed, --primbench_check, "
                       "--primbench_threads, --primbench_timing, --primbench_cache)");
  }
  *argc = out;
  argv[out] = nullptr;
  return f;
}

// One problem and one prepared runner at a time: benchmarks run in registration order, so the
// line's inputs and reference are shared by its implementations, and freed when the next line
// starts; the runner is prepared once although Google Benchmark calls the function repeatedly.
struct Slot {
  std::string line_key, impl;
  std::unique_ptr<Problem> problem;
  std::unique_ptr<Runner> runner;
  std::string unsupported, failed;
  double prep_ms = 0;
  CheckResult check;
  bool checked = false;
  int64_t rss_baseline = -1;  // resident bytes before the implementation was planned
};
Slot g_slot;

// Benchmarks that failed (an error, a failed or mistrusted check), by name, with the message:
// listed again after the run, and the binary exits 1.
std::map<std::string, std::string> g_failures;

struct Case {
  const PrimitiveInfo* prim;
  std::string desc, key;
  Dir dir;
  uint64_t seed;
  bool check;
  Timing timing;
  CacheState cache;
};

// Marks the benchmark failed: a FAIL row (never an "unsupported" skip), remembered for the exit.
void fail(benchmark::State& state, const std::string& name, const std::string& why) {
  g_failures.emplace(name, why);
  state.SkipWithError(("FAIL: " + why).c_str());
}

// The phases a contract leaves out, timed once after the timed loop, so that every row shows
// where the time of each contract goes (compute_ms, act_reorder_ms, wei_transform_ms).
void phase_counters(benchmark::State& state, Runner& r, Timing timing, const PhaseTimes& sum) {
  const double iters = std::max<double>(1, static_cast<double>(state.iterations()));
  double wei = sum.wei_transform / iters, act = sum.act_reorder / iters;
  if (timing != Timing::step) {
    const double t0 = now_seconds();
    r.weights();
    r.sync();
    wei = now_seconds() - t0;
  }
  if (timing == Timing::kernel) {
    const double t0 = now_seconds();
    r.reorder_out();
    r.reorder_in();
    r.sync();
    act = now_seconds() - t0;
  }
  state.counters["compute_ms"] = 1e3 * sum.compute / iters;
  state.counters["act_reorder_ms"] = 1e3 * act;
  state.counters["wei_transform_ms"] = 1e3 * wei;
}

void run_case(benchmark::State& state, const Case& c, const std::string& impl,
              const std::string& bench_name) {
  Slot& s = g_slot;
  try {
    if (s.line_key != c.key) {
      s = Slot();
      s.line_key = c.key;
      s.problem = c.prim->make(c.desc, c.dir, c.seed);
    }
    if (s.impl != impl) {
      s.runner.reset();
      s.impl = impl;
      s.unsupported.clear();
      s.failed.clear();
      s.checked = false;
      std::string why;
      s.rss_baseline = rss_baseline_bytes();
      s.runner = s.problem->runner(impl, &why);
      if (!s.runner) {
        s.unsupported = why;
      } else {
        try {
          MeasureOptions o;
          o.check = c.check;
          o.timing = c.timing;
          o.ref_budget_flops = kBenchRefBudget;
          Measured m = measure(*s.problem, *s.runner, o);
          s.prep_ms = m.prep_ms;
          s.check = m.check;
          s.checked = m.checked;
        } catch (const Unsupported& e) {
          s.unsupported = e.what();
          s.runner.reset();
        }
      }
    }
  } catch (const std::exception& e) {
    s.failed = e.what();
    s.runner.reset();
  }
  if (!s.unsupported.empty()) {
    state.SkipWithError(("unsupported: " + s.unsupported).c_str());
    return;
  }
  if (!s.failed.empty() || !s.runner) {
    fail(state, bench_name, "error: " + s.failed);
    return;
  }
  if (s.checked && (!s.check.pass || s.check.mistrusted)) {
    fail(state, bench_name,
         std::string(s.check.pass ? "mistrusted result: " : "check failed: ") + s.check.summary());
    return;
  }
  PhaseTimes phases;
  double total = 0;
  // Measured while the iterations run: peak resident memory over the baseline taken before the
  // plan (its outputs, workspace and transients; ws_MB is the implementation's own figure), CPU
  // utilisation and, where RAPL is readable, energy.
  Meter meter(s.rss_baseline);
  MeterResult metered;
  try {
    meter.start();
    // One untimed iteration first. Meter::start() hands freed memory back to the system
    // (malloc_trim), so an implementation that allocates while it runs (oneDNN's temporaries)
    // faulted its pages in again during the first timed iteration, and with a short
    // --benchmark_min_time that iteration could be the whole measurement: onednn/auto relu bwd
    // read 50-100 ms instead of 2 ms in about one run of three, after an OpenCL implementation
    // had freed its buffers. Our own kernels keep their scratch, so that favoured them.
    PhaseTimes untimed;
    timed_iteration(*s.runner, c.timing, &untimed);
    for (auto _ : state) {
      if (c.cache == CacheState::cold) evict_caches();  // untimed: manual time excludes it
      const double t = timed_iteration(*s.runner, c.timing, &phases);
      state.SetIterationTime(t);
      total += t;
    }
    metered = meter.stop(threads());
    phase_counters(state, *s.runner, c.timing, phases);
  } catch (const std::exception& e) {
    s.failed = e.what();
    fail(state, bench_name, std::string("error: ") + e.what());
    return;
  }
  using C = benchmark::Counter;
  const Problem& p = *s.problem;
  const PeakRates rates = peak_rates(impl);  // the host's probe, or a GPU's own
  const double peak = rates.flops * p.peak_scale();
  // Rates over the manual (contract) time; the percentages are plain numbers.
  const double per_iter = total / std::max<double>(1, static_cast<double>(state.iterations()));
  if (p.flops() > 0) {
    state.counters["FLOPS"] = C(p.flops(), C::kIsIterationInvariantRate, C::kIs1000);
    state.counters["peak_pct"] = per_iter > 0 ? 100.0 * p.flops() / per_iter / peak : 0;
  }
  state.counters["bytes"] = C(p.bytes(), C::kIsIterationInvariantRate, C::kIs1024);
  state.counters["bw_pct"] = per_iter > 0 ? 100.0 * p.bytes() / per_iter / rates.bytes : 0;
  if (rates.device) state.counters["device_peak_gflops"] = rates.flops / 1e9;
  // The check: its error and how many outputs it compared (all, or a seeded sample);
  // unchecked = 1 when checks were off for this row.
  if (s.checked) {
    state.counters["err"] = s.check.l2_rel;
    state.counters["check_n"] = static_cast<double>(s.check.checked);
    state.counters["check_sampled"] = s.check.sampled ? 1 : 0;
  }
  state.counters["unchecked"] = s.checked ? 0 : 1;
  state.counters["prep_ms"] = s.prep_ms;
  state.counters["ws_MB"] = s.runner->workspace_bytes() / 1e6;
  // The metered region holds the untimed first iteration too.
  for (const auto& [k, v] : meter_counters(metered, state.iterations() + 1, p.flops(), 0))
    state.counters[k] = v;
  for (const auto& [k, v] : s.runner->extra_counters()) state.counters[k] = v;
  state.SetLabel(p.desc_str());
}

}  // namespace

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> v;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) v.push_back(item);
  return v;
}

bool flag_bool(const std::string& flag, const std::string& v) {
  if (v.empty() || v == "1" || v == "true") return true;
  if (v == "0" || v == "false") return false;
  throw InputError(flag, "expects 1, true, 0 or false (or the flag alone), got '" + v + "'");
}

int flag_int(const std::string& flag, const std::string& v, int lo) {
  char* end = nullptr;
  long x = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end || x < lo)
    throw InputError(flag, "expects an integer >= " + std::to_string(lo) + ", got '" + v + "'");
  return static_cast<int>(x);
}

namespace {

// Forwards everything to the display reporter the flags ask for (--benchmark_format), and after
// each benchmark prints "[12/40] 35 s, about 80 s left" on stderr.
class ProgressReporter : public benchmark::BenchmarkReporter {
 public:
  ProgressReporter(benchmark::BenchmarkReporter* inner, size_t total, bool tty)
      : inner_(inner), total_(total), tty_(tty) {}
  bool ReportContext(const Context& c) override {
    inner_->SetOutputStream(&GetOutputStream());
    inner_->SetErrorStream(&GetErrorStream());
    return inner_->ReportContext(c);
  }
  void ReportRuns(const std::vector<Run>& runs) override {
    inner_->ReportRuns(runs);
    // A benchmark is done with its last repetition (aggregates come in a call of their own).
    bool finished = false;
    for (const Run& r : runs)
      finished |= r.run_type == Run::RT_Iteration && r.repetition_index == r.repetitions - 1;
    if (!finished) return;
    ++done_;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    std::fprintf(stderr, "%s[%zu/%zu] %.0f s, about %.0f s left%s", tty_ ? "\r" : "", done_, total_,
                 s, done_ < total_ ? s / done_ * (total_ - done_) : 0.0, tty_ ? "   " : "\n");
    if (tty_ && done_ >= total_) std::fputc('\n', stderr);
    std::fflush(stderr);
  }
  void Finalize() override { inner_->Finalize(); }

 private:
  std::unique_ptr<benchmark::BenchmarkReporter> inner_;
  size_t total_, done_ = 0;
  bool tty_;
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
};

}  // namespace

size_t run_with_progress(const std::vector<std::string>& names) {
  const ProgressMode mode = progress_mode();
  if (!mode.on) return benchmark::RunSpecifiedBenchmarks();
  // The benchmarks the filter selects, as Google Benchmark matches them (POSIX extended regex
  // on the full name; a leading '-' negates).
  std::string filter = benchmark::GetBenchmarkFilter();
  const bool negate = !filter.empty() && filter[0] == '-';
  if (negate) filter = filter.substr(1);
  size_t total = 0;
  try {
    const std::regex re(filter.empty() || filter == "all" ? "." : filter, std::regex::extended);
    for (const std::string& n : names)
      if (std::regex_search(n + "/manual_time", re) != negate) ++total;
  } catch (const std::regex_error&) {
    return benchmark::RunSpecifiedBenchmarks();  // Google Benchmark reports the bad filter
  }
  if (total == 0) return benchmark::RunSpecifiedBenchmarks();
  ProgressReporter reporter(benchmark::CreateDefaultDisplayReporter(), total, mode.tty);
  return benchmark::RunSpecifiedBenchmarks(&reporter);
}

int bench_main(int argc, char** argv, const BenchSpec& spec) {
  std::vector<std::string> registered;
  try {
    init_threads_from_env();
    check_environment();
    Flags f = take_flags(&argc, argv);
    const PrimitiveInfo& prim = find_primitive(spec.prim);
    std::vector<Dir> dirs;
    if (f.dirs.empty()) dirs = prim.dirs;
    for (const auto& d : f.dirs) {
      Dir dir;
      try {
        dir = parse_dir(d);
      } catch (const InputError& e) {
        throw InputError("--primbench_dirs", e.what());
      }
      if (std::find(prim.dirs.begin(), prim.dirs.end(), dir) == prim.dirs.end())
        throw InputError("--primbench_dirs", dir_str(dir) + " does not apply to " + spec.prim);
      dirs.push_back(dir);
    }
    int batch = f.batch ? f.batch : spec.default_batch;
    if (f.batch && !spec.with_batch)
      throw InputError("--primbench_batch", spec.prim + " has no batch dimension");
    std::vector<std::string> sets = f.sets.empty() ? list_sets(spec.prim) : f.sets;
    for (const std::string& set : f.sets) try {
        load_set(spec.prim, set);
      } catch (const InputError& e) {
        throw InputError("--primbench_sets", e.what());
      }
    // --primbench_dt: every line again in each data type (appended as the descriptor's dt=
    // field; a primitive without one rejects it naming the field).
    std::vector<std::string> dts;
    for (const std::string& t : f.dts) dts.push_back(DataType::parse(t, "--primbench_dt").str());
    if (dts.empty()) dts.push_back("");
    for (Dir dir : dirs)
      for (const std::string& dt : dts) {
        std::string prefix = spec.prefix             ? spec.prefix(dir)
                             : prim.dirs.size() == 1 ? spec.prim
                                                     : spec.prim + "_" + dir_str(dir);
        for (const std::string& set : sets) {
          for (const DataLine& l : load_set(spec.prim, set)) {
            if (f.only_default && !l.is_default()) continue;
            std::string desc =
                batch > 0 && spec.with_batch ? spec.with_batch(l.text, batch) : l.text;
            if (!dt.empty()) desc += "_dt=" + dt;
            // Parse now so a bad line stops the run before anything is timed.
            std::unique_ptr<Problem> probe;
            try {
              probe = prim.make(desc, dir, f.seed);
            } catch (const InputError& e) {
              throw InputError(l.file + ":" + std::to_string(l.line), e.what());
            }
            // "<net>:<layer>": a name that already says its net is kept, else the set is the net.
            std::string name = probe->name().empty() ? probe->desc_str() : probe->name();
            if (name.find(':') == std::string::npos) name = set + ":" + name;
            const bool check = f.check;
            std::string pre = spec.prefix_for ? spec.prefix_for(*probe, dir) : prefix;
            if (pre.empty()) continue;
            const std::string tag = dt_tag(probe->desc_str());
            pre += tag;
            auto c = std::make_shared<Case>(
                Case{&prim, desc, set + ":" + std::to_string(l.line) + ":" + dir_str(dir) + tag,
                     dir, f.seed, check, f.timing, f.cache});
            for (const std::string& impl : probe->impls()) {
              const std::string bench_name = pre + "/" + impl + "/" + name;
              registered.push_back(bench_name);
              benchmark::RegisterBenchmark(bench_name.c_str(),
                                           [c, impl, bench_name](benchmark::State& st) {
                                             run_case(st, *c, impl, bench_name);
                                           })
                  ->UseManualTime()
                  ->Unit(benchmark::kMillisecond);
            }
          }
        }
      }
    for (const auto& [k, v] : environment_facts()) benchmark::AddCustomContext(k, v);
    benchmark::AddCustomContext("primbench_timing", timing_str(f.timing));
    benchmark::AddCustomContext("primbench_cache", cache_str(f.cache));
    benchmark::AddCustomContext("primbench_check", f.check ? "1" : "0");
    if (f.batch) benchmark::AddCustomContext("primbench_batch", std::to_string(f.batch));
    if (f.cache == CacheState::cold)
      benchmark::AddCustomContext("primbench_evict_bytes",
                                  std::to_string(2 * last_level_cache_bytes()));
  } catch (const InputError& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 2;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  run_with_progress(registered);
  benchmark::Shutdown();
  g_slot = Slot();
  if (!g_failures.empty()) {
    std::fprintf(stderr, "%s: %zu benchmark(s) FAILED:\n", argv[0], g_failures.size());
    for (const auto& [name, why] : g_failures)
      std::fprintf(stderr, "FAIL %s: %s\n", name.c_str(), why.c_str());
    return 1;
  }
  return 0;
}

}  // namespace pb::bench
