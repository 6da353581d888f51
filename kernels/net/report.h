// Measuring a planned network: step times, the per-layer breakdown, predicted (sum of the
// calls timed alone) vs measured, and a data-parallel projection. Shared by `primbench net`
// and bench_networks.
#pragma once

#include <string>
#include <vector>

#include "kernels/core/meter.h"
#include "kernels/net/executor.h"

namespace pb {

struct LayerRow {
  std::string layer, kind, impls;  // impls: "fwd cpu/im2col, bwd_d ..., bwd_w ..."
  double ms = 0, share = 0;        // summed over its calls in the median step
  double alone_ms = 0;             // its calls timed alone
  std::string notes;               // fallbacks
  int64_t grad_bytes = 0;          // trainable parameters' bytes (what all-reduce moves)
};

struct NetResult {
  std::string network, backend, policy, mode;
  int64_t batch = 0;
  double step_ms = 0;       // median over reps
  double predicted_ms = 0;  // sum of the calls' isolated times
  double items_per_s = 0;
  double peak_mb = 0;  // planned: every buffer the plan holds (Executor::planned_bytes)
  // Measured over the timed steps (metered_steps of them): the process's peak resident memory
  // over what it held before the plan (meter.peak_mb), CPU utilisation, energy where RAPL is
  // readable; device_peak_mb: the OpenCL buffers' peak over what was allocated before the plan
  // (-1 without OpenCL).
  MeterResult meter;
  int metered_steps = 0;
  double step_flops = 0;  // the calls' FLOPs per step
  double device_peak_mb = -1;
  double loss = 0;
  int fallbacks = 0;
  std::string residency;    // backend ocl: Executor::residency()
  std::string composition;  // Executor::composition(): "composed", or onednn's "fused ..."
  int reorders = -1;        // Executor::reorders(): layout conversions per step (-1: not counted)
  std::vector<LayerRow> layers;
  // Training: the calls' times in the median step, the first SGD update call, and the gradients
  // packed into buckets of kDefaultBucketMb as data-parallel training packs them (the
  // overlap-aware projection replays them).
  std::vector<double> call_ms;
  size_t update_begin = 0;
  std::vector<struct GradBucket> buckets;
};

// Data-parallel training's gradient buckets (kernels/net/data_parallel.h): the trainable tensors
// in the order the backward makes their gradients final (ready_after: the call after which a
// tensor's gradient is; stable for ties), packed greedily into buckets of at most bucket_mb MB
// (1e6 bytes); a larger tensor has a bucket of its own. Each bucket lists its tensors (indices
// into `bytes`), its bytes and the call after which all of them are final.
constexpr double kDefaultBucketMb = 25;
struct GradBucket {
  double bytes = 0;
  size_t ready_after = 0;
  std::vector<size_t> tensors;
};
std::vector<GradBucket> plan_buckets(const std::vector<double>& bytes,
                                     const std::vector<size_t>& ready_after, double bucket_mb);
// The data-parallel step replayed on a one-rank step's calls (`call_ms`, the updates from
// `update_begin`): each bucket's all-reduce takes alpha_ms + 2(p-1)/p x its bytes / busbw and
// starts once its gradients are final and the previous all-reduce is done (overlap), or all
// start after the backward (no overlap); the updates follow the last. The compute runs as fast
// as alone, but where the ranks have no spare core, an all-reduce that starts while the
// backward still runs takes `cpu_ms_per_byte` x its bytes of CPU time from it (the
// communication's own work: copies, sums, the kernel's TCP).
double replay_step(const std::vector<double>& call_ms, size_t update_begin,
                   const std::vector<GradBucket>& buckets, int ranks, double busbw_gbs,
                   double alpha_ms, bool overlap, double cpu_ms_per_byte = 0);

// Runs `warmup` steps, then `reps` timed steps (median), then times every call alone.
NetResult measure_network(Executor& ex, const NetOptions& opt, int warmup, int reps);

// The busbw (GB/s) to project with for `ranks` ranks: a figure the user gave, or one measured by
// bench_allreduce (then `impl` and `message_bytes` say which run it is).
struct Busbw {
  int ranks = 0;
  double gbs = 0;
  std::string impl;
  double message_bytes = 0;
};
// Projected step time with data-parallel training on p ranks: each step adds the all-reduce of
// every gradient (2(p-1)/p * bytes / busbw, with busbw in GB/s as bench_allreduce reports it),
// with no overlap of communication and backward (an upper bound): step_ms. And, where the result
// has its buckets (training), overlap_step_ms: replay_step with the all-reduces overlapping the
// backward, `alpha_ms` per all-reduce.
struct Projection {
  Busbw busbw;
  double allreduce_ms = 0, step_ms = 0, efficiency = 0;
  double overlap_step_ms = 0, overlap_efficiency = 0;  // 0: no buckets known
};
// One projection per entry of `busbw`; `cpu_ms_per_byte`: as replay_step.
std::vector<Projection> project_data_parallel(const NetResult& r, const std::vector<Busbw>& busbw,
                                              double alpha_ms = 0, double cpu_ms_per_byte = 0);
double gradient_bytes(const NetResult& r);
// bench_allreduce's JSON (--benchmark_out): for each rank count in it, the message size nearest
// `bytes`, and there the fastest implementation's busbw (mean over its repetitions; aggregates and
// failed runs left out). Throws InputError("--allreduce-json") when the file cannot be read or
// holds no busbw results.
std::vector<Busbw> read_allreduce_busbw(const std::string& file, double bytes);

std::string table(const NetResult& r);  // the per-layer breakdown, text
// `busbw_source`: where the projection's busbw came from (a file, or "--busbw").
std::string to_json(const NetResult& r, const std::vector<Projection>& proj,
                    const std::string& busbw_source);

}  // namespace pb
