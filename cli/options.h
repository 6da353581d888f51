// The CLI's options, read and validated before anything runs: every bad value is an InputError
// naming its flag (exit 2). Free of side effects, so that tools/fuzz can drive them.
#pragma once

#include <optional>
#include <string>

#include "kernels/core/impl.h"
#include "kernels/core/problem.h"

namespace pb::cli {

// `primbench run <prim> <descriptor> [options]`
struct RunOptions {
  std::string prim, desc;  // as given; the descriptor is parsed by the primitive
  std::optional<Dir> dir;  // --dir; absent: the primitive's first direction
  std::string impl = "all";
  int reps = 5, seed = 1;
  std::optional<int> threads;  // --threads; absent: PRIMBENCH_THREADS or the default
  Timing timing = Timing::layer;
  CacheState cache = CacheState::hot;
  std::string save;  // --save folder, "" for none
  bool check = false, json = false;
};
RunOptions parse_run_options(int argc, char** argv);

// `primbench net <network>|--list [options]`
struct NetCliOptions {
  std::string network;      // "" when listing
  bool list = false;        // list the networks: --list, or no network given (then exit 2)
  bool list_asked = false;  // --list
  std::string backend = "cpu", policy = "best", find_cache, json;
  std::string dt;  // --dt bf16|u8s8: convolution and fc layers in that type, "" for fp32
  std::optional<int> threads, batch;
  int reps = 3, seed = 1;
  bool train = false, composed = false, check = false;
  // --quantise-steps: every typed layer converts its input in a step of its own, instead of the
  // post-ops before it writing the typed copy (NetOptions::typed_handoff false).
  bool quantise_steps = false;
  double busbw = 0;            // --busbw GB/s, 0 when not given
  std::string allreduce_json;  // --allreduce-json files or folders, "" when not given
  // --data-parallel (with --train, under mpirun): kernels/net/data_parallel.h.
  bool data_parallel = false;
  bool overlap = true;                 // --no-overlap: false
  std::string allreduce = "mpi/ring";  // --allreduce
  double bucket_mb = 25;               // --bucket-mb
  int wait_sleep_us = 1000;            // --wait-sleep-us (default 0 with --no-overlap)
  std::optional<double> dp_timeout;    // --dp-timeout seconds (else PRIMBENCH_DP_TIMEOUT, 60)
};
NetCliOptions parse_net_options(int argc, char** argv);

}  // namespace pb::cli
