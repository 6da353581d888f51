// The shared driver of every bench_<prim> binary: registers one Google Benchmark per
// (direction, shape-set line, implementation) at run time, from the data sets.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kernels/core/problem.h"

namespace pb::bench {

struct BenchSpec {
  std::string prim;  // "gemm"
  // Benchmark-name prefix for a direction: default "<prim>" when the primitive has one
  // direction, else "<prim>_<dir>" (conv_fwd, conv_bwd_d, ...).
  std::function<std::string(Dir)> prefix;
  // When set, overrides `prefix` per problem: the prefix may depend on the descriptor (rnn:
  // lstm_fwd, gru_bwd, ... from the cell type). "" registers no benchmark for that problem
  // (bnorm: no bwd of an inference-mode line).
  std::function<std::string(const Problem&, Dir)> prefix_for;
  // Rewrites a data-set descriptor for --primbench_batch=N (null: the flag is rejected).
  std::function<std::string(const std::string& desc, int batch)> with_batch;
  int default_batch = 0;  // applied when > 0 and --primbench_batch is not given
};

// Parses our flags (--primbench_sets=a,b  --primbench_default  --primbench_dirs=fwd,bwd_d
// --primbench_dt=f32,bf16,u8s8:s8 (each line once per data type, named <prim>_<dt>/...)
// --primbench_batch=N  --primbench_seed=S  --primbench_check=0|1  --primbench_threads=N
// --primbench_timing=kernel|layer|step  --primbench_cache=hot|cold), strips them, then runs
// Google Benchmark. Returns the exit status: 2 on bad flags or a bad data-set line, 1 when a
// benchmark failed (an error, a failed or mistrusted check: FAIL rows), else 0.
int bench_main(int argc, char** argv, const BenchSpec& spec);

// Runs the registered benchmarks (names: every one registered, as given to RegisterBenchmark,
// all with manual time) like benchmark::RunSpecifiedBenchmarks(), and shows progress on stderr:
// benchmarks done of those the filter selects, elapsed time and an estimate of the time left.
// Shown on a terminal, or always with PRIMBENCH_PROGRESS=1 (0: never); the console table on
// stdout and the JSON file are untouched.
size_t run_with_progress(const std::vector<std::string>& names);

// Flag helpers shared by the bench binaries: "a,b,,c" -> {a, b, c}; an integer >= lo or an
// InputError naming the flag.
std::vector<std::string> split_list(const std::string& s);
int flag_int(const std::string& flag, const std::string& value, int lo);
// A switch: "" (the flag alone), 1 or true; 0 or false. Else an InputError naming the flag.
bool flag_bool(const std::string& flag, const std::string& value);

}  // namespace pb::bench
