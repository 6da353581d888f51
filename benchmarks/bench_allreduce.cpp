// bench_allreduce: every all-reduce implementation on data/allreduce/*.txt, run under mpirun
// (tools/allreduce). Names allreduce/<impl>/<set>:<name>/ranks:<p>. Every rank runs the same
// fixed number of iterations in lockstep; an iteration's time is the maximum over ranks; only
// rank 0 reports. Counters: algbw = bytes/time, busbw = algbw * 2(p-1)/p (NCCL-tests), latency_us.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "benchmarks/bench_common.h"
#include "kernels/allreduce/allreduce.h"
#include "kernels/allreduce/desc.h"
#include "kernels/allreduce/world.h"
#include "kernels/core/dataset.h"
#include "kernels/core/error.h"
#include "kernels/core/problem.h"
#include "kernels/core/threads.h"
#include "kernels/environment.h"

namespace pb::bench {
namespace {

struct Flags {
  std::vector<std::string> sets;
  bool only_default = false, check = true;
  uint64_t seed = 1;
  int iters = 0;          // 0: chosen from the size
  std::string link_rate;  // --primbench_link_rate, recorded in the context ("" when not given)
};

// Takes our --primbench_* flags out of argv; on ranks other than 0 also the output-file flags,
// so that only rank 0 writes.
Flags take_flags(int* argc, char** argv, bool rank0) {
  Flags f;
  int out = 1;
  for (int i = 1; i < *argc; ++i) {
    std::string a = argv[i];
    if (!rank0 && a.rfind("--benchmark_out", 0) == 0) continue;
    if (a.rfind("--primbench_", 0) != 0) {
      argv[out++] = argv[i];
      continue;
    }
    auto eq = a.find('=');
    std::string key = a.substr(0, eq), val = eq == std::string::npos ? "" : a.substr(eq + 1);
    if (key == "--primbench_sets")
      f.sets = split_list(val);
    else if (key == "--primbench_default")
      f.only_default = val.empty() || val == "1" || val == "true";
    else if (key == "--primbench_seed")
      f.seed = static_cast<uint64_t>(flag_int(key, val, 0));
    else if (key == "--primbench_check")
      f.check = flag_int(key, val, 0) != 0;
    else if (key == "--primbench_iters")
      f.iters = flag_int(key, val, 1);
    else if (key == "--primbench_threads")
      set_threads(flag_int(key, val, 1));
    else if (key == "--primbench_link_rate") {
      // The hosts' link rate, as tc writes it (tools/allreduce --cluster passes the cluster's).
      if (val != "none" && !std::regex_match(val, std::regex("[1-9][0-9]*(bit|kbit|mbit|gbit)")))
        throw InputError(key, "'" + val + "' is not a link rate like 10gbit, 500mbit (or none)");
      f.link_rate = val;
    } else
      throw InputError(key,
                       "unknown flag (--primbench_sets, --primbench_default, --primbench_seed, "
                       "--primbench_check, --primbench_iters, --primbench_threads, "
                       "--primbench_link_rate)");
  }
  *argc = out;
  argv[out] = nullptr;
  return f;
}

// Google Benchmark must not choose the iteration count itself: ranks would disagree. About
// 0.5 s per benchmark at an assumed 2 GB/s, at least 3 and at most 2000 iterations.
int iterations_for(int64_t n) {
  const double est_s = 8.0 * static_cast<double>(n) / 2e9 + 20e-6;
  return static_cast<int>(std::clamp(0.5 / est_s, 3.0, 2000.0));
}

// One problem (inputs, reference) per data-set line, shared by its implementations.
struct Slot {
  std::string key;
  std::unique_ptr<Problem> problem;
};
Slot g_slot;
int g_failures = 0;  // benchmarks that failed (FAIL rows): the exit status is 1

void run_case(benchmark::State& state, const std::string& key, const std::string& desc,
              const std::string& impl, const Flags& f) {
  const int p = world::size();
  std::unique_ptr<Runner> runner;
  std::string skip;
  CheckResult check;
  bool checked = false;
  double prep_ms = 0;
  try {
    if (g_slot.key != key) {
      g_slot = Slot();
      g_slot.problem = find_primitive("allreduce").make(desc, Dir::fwd, f.seed);
      g_slot.key = key;
    }
    std::string why;
    runner = g_slot.problem->runner(impl, &why);
    if (!runner) skip = "unsupported: " + why;
    if (runner) {
      MeasureOptions o;
      o.check = f.check;
      Measured m = measure(*g_slot.problem, *runner, o);
      prep_ms = m.prep_ms, check = m.check, checked = m.checked;
      if (checked && (!check.pass || check.mistrusted))
        skip = std::string("FAIL: ") + (check.pass ? "mistrusted result: " : "check failed: ") +
               check.summary();
    }
  } catch (const Unsupported& e) {
    skip = std::string("unsupported: ") + e.what();
  } catch (const std::exception& e) {
    skip = std::string("FAIL: error: ") + e.what();
  }
  // Every rank skips together, or none does: the timed loop is a sequence of collectives. A
  // failure on any rank fails the benchmark (and the binary's exit status) on every rank.
  const bool failed_here = skip.rfind("FAIL: ", 0) == 0;
  if (world::max_over_ranks(skip.empty() ? 0 : failed_here ? 2 : 1)) {
    if (world::max_over_ranks(failed_here ? 1 : 0)) {
      if (skip.empty() || !failed_here) skip = "FAIL: another rank failed";
      ++g_failures;
    }
    state.SkipWithError((skip.empty() ? "another rank failed" : skip).c_str());
    return;
  }
  double total = 0;
  for (auto _ : state) {
    const double t0 = now_seconds();
    runner->run();
    runner->sync();
    const double t = world::max_over_ranks(now_seconds() - t0);
    state.SetIterationTime(t);
    total += t;
  }
  using C = benchmark::Counter;
  const double bytes = 4.0 * static_cast<double>(AllreduceDesc::parse(desc).n);
  state.counters["algbw"] = C(bytes, C::kIsIterationInvariantRate, C::kIs1000);
  state.counters["busbw"] = C(bytes * 2.0 * (p - 1) / p, C::kIsIterationInvariantRate, C::kIs1000);
  state.counters["latency_us"] = C(1e6 * total, C::kAvgIterations);
  state.counters["ranks"] = p;
  if (checked) state.counters["err"] = check.l2_rel;
  state.counters["prep_ms"] = prep_ms;
  state.counters["ws_MB"] = runner->workspace_bytes() / 1e6;
  for (const auto& [k, v] : runner->extra_counters()) state.counters[k] = v;
  state.SetLabel(g_slot.problem->desc_str());
}

// Ranks other than 0 run every benchmark but report nothing.
class NullReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

int bench_allreduce_main(int argc, char** argv) {
  const int rank = world::rank(), p = world::size();  // MPI first: every rank registers alike
  try {
    init_threads_from_env();
    check_environment();
    auto f = std::make_shared<Flags>(take_flags(&argc, argv, rank == 0));
    const PrimitiveInfo& prim = find_primitive("allreduce");
    for (const std::string& set : f->sets.empty() ? list_sets("allreduce") : f->sets) {
      for (const DataLine& l : load_set("allreduce", set)) {
        if (f->only_default && !l.is_default()) continue;
        std::unique_ptr<Problem> probe;
        try {
          probe = prim.make(l.text, Dir::fwd, f->seed);
        } catch (const InputError& e) {
          throw InputError(l.file + ":" + std::to_string(l.line), e.what());
        }
        const std::string name = probe->name().empty() ? probe->desc_str() : probe->name();
        const std::string key = set + ":" + std::to_string(l.line), desc = l.text;
        const int iters = f->iters ? f->iters : iterations_for(AllreduceDesc::parse(desc).n);
        for (const std::string& impl : probe->impls())
          benchmark::RegisterBenchmark(
              ("allreduce/" + impl + "/" + set + ":" + name + "/ranks:" + std::to_string(p))
                  .c_str(),
              [key, desc, impl, f](benchmark::State& st) { run_case(st, key, desc, impl, *f); })
              ->UseManualTime()
              ->Iterations(iters)
              ->Unit(benchmark::kMillisecond);
      }
    }
    for (const auto& [k, v] : environment_facts()) benchmark::AddCustomContext(k, v);
    benchmark::AddCustomContext("mpi_library", world::library_version());
    benchmark::AddCustomContext("mpi_ranks", std::to_string(p));
    // Hosts (distinct host names: tools/cluster's namespace hosts count one each) and the link
    // between them when told: tools/allreduce_fit.py never fits two of these together.
    benchmark::AddCustomContext("mpi_hosts", std::to_string(world::host_count()));
    if (!f->link_rate.empty()) benchmark::AddCustomContext("link_rate", f->link_rate);
    // The counter ompi_alg (mpi/native's algorithm where known, mpi/ompi_*'s forced one) in
    // Open MPI's numbering.
    std::string algs;
    for (size_t i = 0; i < ompi_allreduce_algorithms().size(); ++i)
      algs += (i ? "," : "") + std::to_string(i + 1) + "=" + ompi_allreduce_algorithms()[i];
    benchmark::AddCustomContext("ompi_allreduce_algorithms", algs);
  } catch (const InputError& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 2;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  if (rank == 0) {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    NullReporter quiet;
    benchmark::RunSpecifiedBenchmarks(&quiet);
  }
  benchmark::Shutdown();
  g_slot = Slot();
  if (g_failures && rank == 0)
    std::fprintf(stderr, "%s: %d benchmark(s) FAILED\n", argv[0], g_failures);
  return g_failures ? 1 : 0;
}

}  // namespace
}  // namespace pb::bench

int main(int argc, char** argv) {
  return pb::bench::bench_allreduce_main(argc, argv);
}
