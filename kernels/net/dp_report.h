// Measuring data-parallel training (issue 19): the timed steps, the one-rank step they scale
// from, the busbw of the chosen all-reduce, and next to the measurement the projection that
// report.h's project_data_parallel makes from that busbw. Shared by `primbench net
// --data-parallel` and bench_networks' ranks mode.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "kernels/net/data_parallel.h"
#include "kernels/net/report.h"

namespace pb {

struct DataParallelResult {
  std::string network, backend, policy, allreduce;
  int ranks = 1;
  int ranks_on_machine = 1;  // rank 0's machine (namespace hosts of one machine are one)
  int cores = 0;             // CPUs the ranks on rank 0's machine may run on
  int threads = 0;           // compute threads per rank
  int64_t batch_per_rank = 0;
  double bucket_mb = 0;
  int buckets = 0;
  bool overlap = true;
  int wait_sleep_us = 0;
  double grad_bytes = 0;
  // The timed steps on rank 0, each with step_ms the slowest rank's; `median` is the one of
  // median step_ms.
  std::vector<DpStepTimes> steps;
  DpStepTimes median;
  double baseline_ms = 0;  // one rank's step alone (rank 0, the others waiting asleep)
  double efficiency = 0;   // baseline_ms / median.step_ms: 1 is perfect weak scaling
  double items_per_s = 0;  // every rank's samples per second
  // The projection from the busbw: measured here (the buckets' all-reduces back to back, no
  // compute, waiting as bench_allreduce does) or given (--busbw, --allreduce-json).
  Busbw busbw;
  std::string busbw_from;
  Projection projection;
  double measured_over_projected = 0;
  // The replayed projection (report.h replay_step): this run's buckets and mode (overlapped or
  // after the backward) replayed on the one-rank step's calls, each all-reduce alpha_ms + its
  // bytes at the busbw.
  double replay_ms = 0;
  double alpha_ms = 0;  // per all-reduce: measured on a small message here
  // The CPU time of a step's all-reduces (copies in and out included) on this rank, waited for as
  // the steps wait; and the share of it the replay charges to the backward: all of it where the
  // ranks of a machine leave it no spare core, none with a spare core per rank.
  double comm_cpu_ms = 0, comm_cpu_charged = 0;
  std::string warning;  // "" or why this is not a scaling measurement
};

// Runs `warmup` and `reps` data-parallel steps, then the one-rank step (rank 0 alone, `reps`
// steps after one warm-up, the weights restored after), then the busbw when `given` holds none
// for this rank count, and the latency of one all-reduce of one float. Every rank calls it
// (collectives inside).
DataParallelResult measure_data_parallel(Executor& ex, DataParallel& dp, const NetOptions& opt,
                                         int warmup, int reps, const std::vector<Busbw>& given,
                                         const std::string& given_from);

// The compute threads per rank when the user gave none: the CPUs the ranks on this machine may
// run on, shared out among them (at least 1). A collective.
int data_parallel_threads();
// "" or the warning that ranks x threads exceed the machine's cores.
std::string oversubscription_warning(int ranks_on_machine, int threads, int cores);

std::string dp_text(const DataParallelResult& r);  // the lines `primbench net` prints
std::string dp_json(const DataParallelResult& r);  // one JSON object
// bench_networks' counters.
std::vector<std::pair<std::string, double>> dp_counters(const DataParallelResult& r);

}  // namespace pb
