// `primbench net <network>`: plan and time one network (inference or a training step) on one
// backend and algorithm policy; prints the per-layer breakdown, optionally saves it as JSON.
#include <cstdio>
#include <string>

#include "cli/args.h"
#include "cli/commands.h"
#include "kernels/core/error.h"
#include "kernels/core/io.h"
#include "kernels/core/threads.h"
#include "kernels/net/report.h"

namespace pb::cli {

int cmd_net(int argc, char** argv) {
  Args a = parse_args(argc, argv, 2,
                      {"--backend", "--policy", "--batch", "--reps", "--threads", "--json",
                       "--find-cache", "--busbw", "--seed"},
                      {"--train", "--list"});
  if (a.has("--list") || a.positional.empty()) {
    for (const auto& n : Network::list()) std::printf("%s\n", n.c_str());
    return a.positional.empty() && !a.has("--list") ? 2 : 0;
  }
  if (a.positional.size() != 1)
    throw InputError("network", "give one network name (primbench net --list)");
  if (a.has("--threads")) set_threads(a.get_int("--threads", 0, 1, 1024));
  Network net = Network::load(a.positional[0]);
  if (a.has("--batch")) net = net.with_batch(a.get_int("--batch", 0, 1, 1 << 20));
  NetOptions opt;
  opt.backend = a.get("--backend", "cpu");
  opt.policy = a.get("--policy", "best");
  opt.train = a.has("--train");
  opt.find_cache = a.get("--find-cache", "");
  opt.seed = static_cast<uint64_t>(a.get_int("--seed", 1, 0, 1 << 30));
  double busbw = 0;
  if (a.has("--busbw")) {
    try {
      busbw = std::stod(a.get("--busbw", "0"));
    } catch (...) {
      busbw = -1;
    }
    if (!(busbw > 0)) throw InputError("--busbw", "needs a positive GB/s value");
  }
  Executor ex(net, opt);
  NetResult r = measure_network(ex, opt, 1, a.get_int("--reps", 3, 1, 1000));
  std::fputs(table(r).c_str(), stdout);
  std::vector<Projection> proj;
  if (busbw > 0) {
    proj = project_data_parallel(r, busbw, {2, 4, 8, 16});
    std::printf(
        "data-parallel PROJECTION (not measured; ring all-reduce of %.1f MB of "
        "gradients at %.2f GB/s busbw, no overlap):\n",
        net.params() * 4 / 1e6, busbw);
    for (const Projection& p : proj)
      std::printf("  p=%-3d all-reduce %9.2f ms  step %9.2f ms  efficiency %.2f\n", p.ranks,
                  p.allreduce_ms, p.step_ms, p.efficiency);
  }
  if (a.has("--json")) write_file_atomic(a.get("--json", ""), to_json(r, proj, busbw) + "\n");
  return 0;
}

}  // namespace pb::cli
