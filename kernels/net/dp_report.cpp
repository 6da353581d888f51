// Measuring data-parallel training (see dp_report.h): steps, the one-rank baseline, the busbw,
// the projections, and their text, JSON and counters.
#include "kernels/net/dp_report.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "kernels/allreduce/allreduce.h"
#include "kernels/allreduce/world.h"
#include "kernels/core/error.h"
#include "kernels/core/io.h"
#include "kernels/core/threads.h"
#include "kernels/net/watchdog.h"

namespace pb {

namespace {

double now_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The one-rank step: rank 0 runs `reps` steps (after one warm-up) alone with its weights put
// back afterwards, while the others wait asleep. Returns its median (every rank) and, on rank 0,
// the calls' times in that step.
double one_rank_step(Executor& ex, int reps, double expected_s, std::vector<double>* calls) {
  {
    net::WatchdogWait wait("lining up for the one-rank step", expected_s);
    world::sleeping_barrier(1);
  }
  double median = 0;
  if (world::rank() == 0) {
    net::watchdog_phase("the one-rank step (rank 0 alone)");
    std::vector<Tensor> saved;
    for (const auto& [name, t] : ex.param_values()) saved.push_back(t->clone());
    std::vector<std::pair<double, std::vector<double>>> steps;
    ex.step();
    for (int i = 0; i < reps; ++i) {
      const double ms = ex.step();
      std::vector<double> per;
      for (const CallInfo& c : ex.calls()) per.push_back(c.last_ms);
      steps.emplace_back(ms, std::move(per));
    }
    std::sort(steps.begin(), steps.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    median = steps[steps.size() / 2].first;
    *calls = steps[steps.size() / 2].second;
    const auto params = ex.params();
    for (size_t i = 0; i < params.size(); ++i)
      std::memcpy(params[i].second->data(), saved[i].data(), saved[i].bytes());
  }
  {
    // The others wait for rank 0's warm-up and reps steps.
    net::WatchdogWait wait("waiting for rank 0's one-rank step", expected_s * (reps + 1));
    world::sleeping_barrier(1);
  }
  return world::max_over_ranks(median);
}

// Median time (the slowest rank's) of `reps` all-reduces of n floats with `impl`, after one.
double allreduce_ms(const std::string& impl_name, int64_t n, int reps, double expected_s,
                    int wait_sleep_us) {
  std::unique_ptr<AllreduceImpl> impl;
  for (const auto& e : allreduce_registry())
    if (e.name == impl_name) impl = e.make();
  if (!impl) throw InputError("--allreduce", "'" + impl_name + "' is not an implementation");
  Tensor x({n});
  x.fill(1.0f);
  AllreduceDesc d;
  d.n = n;
  impl->plan(d, Dir::fwd, {&x});
  net::WatchdogWait wait("measuring the busbw of " + impl_name, expected_s);
  std::vector<double> t;
  world::set_wait_sleep_us(wait_sleep_us);
  for (int r = 0; r <= reps; ++r) {
    world::max_over_ranks(0);  // line up
    const double t0 = now_ms();
    run_phases(*impl);
    const double ms = world::max_over_ranks(now_ms() - t0);
    if (r > 0) t.push_back(ms);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

std::string num(double v, const char* fmt = "%.2f") {
  char b[64];
  std::snprintf(b, sizeof b, fmt, v);
  return b;
}

}  // namespace

int data_parallel_threads() {
  const world::MachineShare m = world::machine_share();
  return std::max(1, m.cpus / m.ranks);
}

std::string oversubscription_warning(int ranks_on_machine, int threads, int cores) {
  if (static_cast<int64_t>(ranks_on_machine) * threads <= cores) return "";
  return std::to_string(ranks_on_machine) + " ranks x " + std::to_string(threads) +
         " threads share this machine's " + std::to_string(cores) +
         " cores (oversubscribed): this is not a scaling measurement";
}

DataParallelResult measure_data_parallel(Executor& ex, DataParallel& dp, const NetOptions& opt,
                                         int warmup, int reps, const std::vector<Busbw>& given,
                                         const std::string& given_from) {
  DataParallelResult r;
  const Network& net = ex.network();
  r.network = net.name, r.backend = opt.backend, r.policy = opt.policy;
  r.allreduce = dp.options().allreduce;
  r.ranks = world::size();
  const world::MachineShare share = world::machine_share();
  r.ranks_on_machine = share.ranks;
  r.cores = share.cpus;
  r.threads = threads();
  r.batch_per_rank = net.batch();
  r.bucket_mb = dp.options().bucket_mb;
  r.buckets = static_cast<int>(dp.buckets().size());
  r.overlap = dp.options().overlap;
  r.wait_sleep_us = dp.options().wait_sleep_us;
  r.grad_bytes = dp.gradient_bytes();
  r.warning = oversubscription_warning(r.ranks_on_machine, r.threads, r.cores);

  int index = 0;
  for (int i = 0; i < warmup; ++i) dp.step(++index);
  double longest_s = 0;
  for (int i = 0; i < std::max(1, reps); ++i) {
    DpStepTimes t = dp.step(++index);
    t.step_ms = world::max_over_ranks(t.step_ms);
    longest_s = std::max(longest_s, t.step_ms / 1e3);
    r.steps.push_back(t);
  }
  std::vector<DpStepTimes> sorted = r.steps;
  std::sort(sorted.begin(), sorted.end(),
            [](const DpStepTimes& a, const DpStepTimes& b) { return a.step_ms < b.step_ms; });
  r.median = sorted[sorted.size() / 2];
  r.items_per_s = r.ranks * static_cast<double>(r.batch_per_rank) / (r.median.step_ms / 1e3);

  std::vector<double> calls;
  r.baseline_ms = one_rank_step(ex, std::max(1, reps), 2 * longest_s, &calls);
  r.efficiency = r.median.step_ms > 0 ? r.baseline_ms / r.median.step_ms : 0;

  // The busbw: given for this rank count, or measured as bench_allreduce would.
  for (const Busbw& b : given)
    if (b.ranks == r.ranks) r.busbw = b, r.busbw_from = given_from;
  if (r.busbw.gbs <= 0 && r.ranks > 1) {
    // The buckets' all-reduces back to back, waiting as bench_allreduce does (spinning), in the
    // buckets' own memory: the median of 3 after one.
    std::vector<double> t;
    for (int i = 0; i <= 3; ++i) {
      const double ms = dp.time_allreduces(0);
      if (i > 0) t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    const double ms = t[1];
    r.busbw.ranks = r.ranks, r.busbw.impl = r.allreduce, r.busbw.message_bytes = r.grad_bytes;
    r.busbw.gbs = 2.0 * (r.ranks - 1) / r.ranks * r.grad_bytes / (ms / 1e3) / 1e9;
    r.busbw_from = "measured here: " + r.allreduce + " on the " + std::to_string(r.buckets) +
                   " bucket(s), " + num(r.grad_bytes / 1e6, "%.1f") + " MB, median of 3";
  }
  // The latency of one all-reduce, waited for as the data-parallel steps wait.
  if (r.ranks > 1) r.alpha_ms = allreduce_ms(r.allreduce, 1, 5, 2 * longest_s, r.wait_sleep_us);
  // The all-reduces' CPU work per step (the best of 2), as the steps do them.
  if (r.ranks > 1) {
    r.comm_cpu_ms = 1e300;
    for (int i = 0; i < 2; ++i) {
      double cpu = 0;
      dp.time_allreduces(r.wait_sleep_us, true, &cpu);
      r.comm_cpu_ms = std::min(r.comm_cpu_ms, cpu);
    }
    const int spare = r.cores - r.ranks_on_machine * r.threads;
    r.comm_cpu_charged =
        r.overlap ? std::clamp(1.0 - static_cast<double>(spare) / r.ranks_on_machine, 0.0, 1.0) : 0;
  }

  if (world::rank() == 0 && r.ranks > 1 && r.busbw.gbs > 0) {
    // The projection of report.h from the one-rank step: no overlap, and the buckets replayed
    // on its calls, overlapping the backward.
    NetResult base;
    base.step_ms = r.baseline_ms;
    LayerRow all;
    all.grad_bytes = static_cast<int64_t>(r.grad_bytes);
    base.layers.push_back(all);
    base.call_ms = calls;
    base.update_begin = ex.update_begin();
    for (const DataParallel::Bucket& b : dp.buckets()) {
      GradBucket g;
      g.bytes = 4.0 * static_cast<double>(b.elems);
      g.ready_after = b.ready_after;
      base.buckets.push_back(g);
    }
    const double cpu_per_byte = r.comm_cpu_charged * r.comm_cpu_ms / r.grad_bytes;
    r.projection = project_data_parallel(base, {r.busbw}, r.alpha_ms, cpu_per_byte)[0];
    r.measured_over_projected = r.median.step_ms / r.projection.step_ms;
    // The run's own mode: overlapped, or every bucket after the backward.
    double sum = 0;
    for (double ms : calls) sum += ms;
    r.replay_ms = r.overlap ? r.projection.overlap_step_ms
                            : r.baseline_ms +
                                  replay_step(calls, base.update_begin, base.buckets, r.ranks,
                                              r.busbw.gbs, r.alpha_ms, false) -
                                  sum;
  }
  return r;
}

std::string dp_text(const DataParallelResult& r) {
  std::string s;
  if (!r.warning.empty()) s += "WARNING: " + r.warning + "\n";
  s += "data-parallel " + r.network + " " + r.backend + "/" + r.policy + " on " +
       std::to_string(r.ranks) + " rank(s) (" + std::to_string(r.ranks_on_machine) +
       " on rank 0's machine, " + std::to_string(r.threads) + " thread(s) each, " +
       std::to_string(r.cores) + " cores), batch " + std::to_string(r.batch_per_rank) +
       " per rank; " + r.allreduce + ", " + std::to_string(r.buckets) +
       " bucket(s) of <= " + num(r.bucket_mb, "%g") + " MB, " + num(r.grad_bytes / 1e6, "%.1f") +
       " MB of gradients, " +
       (r.overlap ? "overlapped with the backward" : "no overlap (after the backward)") + "\n";
  const DpStepTimes& m = r.median;
  s += "  measured step " + num(m.step_ms) + " ms (median of " + std::to_string(r.steps.size()) +
       ", slowest rank): compute " + num(m.compute_ms) + " ms, all-reduce " + num(m.allreduce_ms) +
       " ms, exposed communication " + num(m.exposed_ms) +
       " ms; weights identical on every rank after every step (hash, " + num(m.check_ms) +
       " ms after each)\n";
  s += "  one-rank step " + num(r.baseline_ms) + " ms (same threads): scaling efficiency " +
       num(r.efficiency, "%.3f") + ", " + num(r.items_per_s, "%.1f") + " items/s over all ranks\n";
  if (r.projection.step_ms > 0) {
    s += "  PROJECTION from busbw " + num(r.busbw.gbs, "%.3f") + " GB/s (" + r.busbw_from +
         "): step " + num(r.projection.step_ms) + " ms (one-rank step + " +
         num(r.projection.allreduce_ms) + " ms of all-reduce, no overlap), efficiency " +
         num(r.projection.efficiency, "%.3f") + "; measured/projected " +
         num(r.measured_over_projected, "%.3f") + "\n";
    s += "  replayed projection (these " + std::to_string(r.buckets) + " bucket(s), " +
         (r.overlap ? "overlapped" : "after the backward") + ", on the one-rank step's calls; " +
         num(r.alpha_ms, "%.3f") + " ms per all-reduce + bytes at the busbw" +
         (r.comm_cpu_charged > 0 ? "; " + num(r.comm_cpu_charged * r.comm_cpu_ms, "%.0f") +
                                       " ms of the all-reduces' CPU work taken from the backward "
                                       "(no spare core)"
                                 : std::string()) +
         "): step " + num(r.replay_ms) + " ms; measured/projected " +
         num(r.median.step_ms / r.replay_ms, "%.3f") + "\n";
  }
  return s;
}

std::vector<std::pair<std::string, double>> dp_counters(const DataParallelResult& r) {
  const DpStepTimes& m = r.median;
  std::vector<std::pair<std::string, double>> v = {
      {"ranks", r.ranks},
      {"ranks_on_machine", r.ranks_on_machine},
      {"threads_per_rank", r.threads},
      {"oversubscribed", r.warning.empty() ? 0 : 1},
      {"overlap", r.overlap ? 1 : 0},
      {"buckets", r.buckets},
      {"bucket_MB", r.bucket_mb},
      {"grad_MB", r.grad_bytes / 1e6},
      {"step_ms", m.step_ms},
      {"compute_ms", m.compute_ms},
      {"allreduce_ms", m.allreduce_ms},
      {"exposed_ms", m.exposed_ms},
      {"check_ms", m.check_ms},
      {"one_rank_ms", r.baseline_ms},
      {"efficiency", r.efficiency},
      {"busbw_GBs", r.busbw.gbs},
      {"alpha_ms", r.alpha_ms},
      {"comm_cpu_ms", r.comm_cpu_ms},
      {"comm_cpu_charged", r.comm_cpu_charged},
      {"projected_ms", r.projection.step_ms},
      {"projected_efficiency", r.projection.efficiency},
      {"measured_over_projected", r.measured_over_projected},
      {"replay_projected_ms", r.replay_ms},
      {"measured_over_replay", r.replay_ms > 0 ? m.step_ms / r.replay_ms : 0},
  };
  return v;
}

std::string dp_json(const DataParallelResult& r) {
  std::string s =
      "{\"network\":" + json_str(r.network) + ",\"backend\":" + json_str(r.backend) +
      ",\"policy\":" + json_str(r.policy) + ",\"allreduce\":" + json_str(r.allreduce) +
      ",\"batch_per_rank\":" + json_num(static_cast<double>(r.batch_per_rank)) +
      ",\"cores\":" + json_num(r.cores) + ",\"wait_sleep_us\":" + json_num(r.wait_sleep_us) +
      ",\"items_per_s\":" + json_num(r.items_per_s) + ",\"busbw_from\":" + json_str(r.busbw_from) +
      ",\"warning\":" + json_str(r.warning);
  for (const auto& [k, v] : dp_counters(r)) s += "," + json_str(k) + ":" + json_num(v);
  s += ",\"steps\":[";
  for (size_t i = 0; i < r.steps.size(); ++i) {
    const DpStepTimes& t = r.steps[i];
    s += std::string(i ? "," : "") + "{\"step_ms\":" + json_num(t.step_ms) +
         ",\"compute_ms\":" + json_num(t.compute_ms) +
         ",\"allreduce_ms\":" + json_num(t.allreduce_ms) +
         ",\"exposed_ms\":" + json_num(t.exposed_ms) + ",\"check_ms\":" + json_num(t.check_ms) +
         "}";
  }
  return s + "]}";
}

}  // namespace pb
