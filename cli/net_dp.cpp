// `primbench net <network> --train --data-parallel` under mpirun: every rank trains a replica of
// the network on its own batch, the gradients all-reduced every step (kernels/net/data_parallel.h);
// rank 0 prints the measured step, its one-rank step and the projection, and saves --json.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/options.h"
#include "kernels/allreduce/world.h"
#include "kernels/core/error.h"
#include "kernels/core/io.h"
#include "kernels/core/threads.h"
#include "kernels/environment.h"
#include "kernels/net/dp_report.h"
#include "kernels/net/watchdog.h"

namespace pb::cli {

namespace {

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.10g", v);
  return b;
}

int run(const NetCliOptions& o, const Network& net, NetOptions opt, const std::vector<Busbw>& busbw,
        const std::string& busbw_source) {
  const int rank = world::rank(), ranks = world::size();
  std::string json = o.json;
  if (rank != 0) {  // rank 0 prints and saves; every rank reports its errors on stderr
    if (!std::freopen("/dev/null", "w", stdout)) throw RuntimeError("cannot silence stdout");
    json.clear();
  }
  char host[256] = "?";
  gethostname(host, sizeof host - 1);
  const double limit =
      o.dp_timeout ? *o.dp_timeout : net::watchdog_seconds_from_env(net::kDefaultWatchdogSeconds);
  net::watchdog_start(limit, "primbench: rank " + std::to_string(rank) + " of " +
                                 std::to_string(ranks) + " (" + host + ")");
  net::watchdog_phase("agreeing on the configuration");
  // Before anything is planned: what every rank must share (a difference names its flag).
  agree_across_ranks({
      {"--batch", std::to_string(net.batch())},
      {"network", network_signature(net)},
      {"--backend", opt.backend},
      {"--policy", opt.policy},
      {"--composed", opt.composed ? "yes" : "no"},
      {"--seed", std::to_string(opt.seed)},
      {"--reps", std::to_string(o.reps)},
      {"--allreduce", o.allreduce},
      {"--bucket-mb", num(o.bucket_mb)},
      {"--no-overlap", o.overlap ? "overlap" : "no overlap"},
      {"--wait-sleep-us", std::to_string(o.wait_sleep_us)},
      {"--dp-timeout", num(limit)},
      {"--busbw/--allreduce-json", busbw_source.empty() ? "measured" : busbw_source},
  });
  // Threads: given, or the machine's cores shared by the ranks on it.
  if (!o.threads && !std::getenv("PRIMBENCH_THREADS")) set_threads(data_parallel_threads());
  opt = replica_options(opt, rank, ranks);
  net::watchdog_phase("planning " + net.name);
  const auto t0 = std::chrono::steady_clock::now();
  Executor ex(net, opt);
  const double plan_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  DataParallelOptions dpo;
  dpo.allreduce = o.allreduce;
  dpo.bucket_mb = o.bucket_mb;
  dpo.overlap = o.overlap;
  dpo.wait_sleep_us = o.wait_sleep_us;
  net::watchdog_phase("planning the gradient buckets");
  std::unique_ptr<DataParallel> dp;
  {
    // The others may still be planning: as long again as this rank took.
    net::WatchdogWait wait("planning the gradient buckets", 2 * plan_s);
    dp = std::make_unique<DataParallel>(ex, dpo);
  }
  const DataParallelResult r = measure_data_parallel(ex, *dp, opt, 1, o.reps, busbw, busbw_source);
  net::watchdog_phase("reporting");
  std::fputs(dp_text(r).c_str(), stdout);
  std::fflush(stdout);
  if (!json.empty()) {
    std::string j = dp_json(r);
    j = j.substr(0, j.rfind('}')) +
        ",\"mode\":\"train\",\"data_parallel\":true,\"context\":" + environment_json() + "}";
    write_file_atomic(json, j + "\n");
  }
  return 0;
}

}  // namespace

int net_data_parallel(const NetCliOptions& o, const Network& net, NetOptions opt,
                      const std::vector<Busbw>& busbw, const std::string& busbw_source) {
  // Ending with a result or with its own one-line error: the watchdog has nothing more to say.
  try {
    const int rc = run(o, net, opt, busbw, busbw_source);
    net::watchdog_stop();
    return rc;
  } catch (...) {
    net::watchdog_stop();
    throw;
  }
}

}  // namespace pb::cli
