// The CLI's options (see options.h).
#include "cli/options.h"

#include <cmath>
#include <cstdlib>

#include "cli/args.h"
#include "kernels/core/dtype.h"
#include "kernels/core/error.h"

namespace pb::cli {

RunOptions parse_run_options(int argc, char** argv) {
  Args a = parse_args(
      argc, argv, 2,
      {"--dir", "--impl", "--reps", "--threads", "--seed", "--save", "--timing", "--cache"},
      {"--check", "--json"});
  if (a.positional.size() != 2)
    throw InputError("usage", "primbench run <prim> <descriptor> [options] (see --help)");
  RunOptions o;
  o.prim = a.positional[0];
  o.desc = a.positional[1];
  if (a.has("--dir")) {
    try {
      o.dir = parse_dir(a.get("--dir", ""));
    } catch (const InputError& e) {  // name the flag the user typed
      throw InputError("--dir", std::string(e.what()).substr(e.field().size() + 2));
    }
  }
  o.impl = a.get("--impl", "all");
  if (o.impl.empty()) throw InputError("--impl", "needs an implementation name or all");
  o.reps = a.get_int("--reps", 5, 1, 1000000);
  o.seed = a.get_int("--seed", 1, 0, 1 << 30);
  if (a.has("--threads")) o.threads = a.get_int("--threads", 1, 1, 4096);
  o.check = a.has("--check");
  o.json = a.has("--json");
  o.timing = parse_timing(a.get("--timing", "layer"), "--timing");
  o.cache = parse_cache(a.get("--cache", "hot"), "--cache");
  o.save = a.get("--save", "");
  if (a.has("--save") && o.save.empty()) throw InputError("--save", "needs a folder");
  return o;
}

NetCliOptions parse_net_options(int argc, char** argv) {
  Args a = parse_args(argc, argv, 2,
                      {"--backend", "--policy", "--batch", "--reps", "--threads", "--json",
                       "--find-cache", "--busbw", "--allreduce-json", "--seed", "--allreduce",
                       "--bucket-mb", "--wait-sleep-us", "--dp-timeout", "--dt"},
                      {"--train", "--list", "--check", "--composed", "--data-parallel",
                       "--no-overlap", "--quantise-steps"});
  NetCliOptions o;
  o.list_asked = a.has("--list");
  o.list = o.list_asked || a.positional.empty();
  if (!o.list) {
    if (a.positional.size() != 1)
      throw InputError("network", "give one network name (primbench net --list)");
    o.network = a.positional[0];
  }
  if (a.has("--threads")) o.threads = a.get_int("--threads", 0, 1, 1024);
  if (a.has("--batch")) o.batch = a.get_int("--batch", 0, 1, 1 << 20);
  o.backend = a.get("--backend", "cpu");
  o.policy = a.get("--policy", "best");
  o.train = a.has("--train");
  o.composed = a.has("--composed");
  o.check = a.has("--check");
  o.find_cache = a.get("--find-cache", "");
  o.seed = a.get_int("--seed", 1, 0, 1 << 30);
  o.reps = a.get_int("--reps", 3, 1, 1000);
  o.json = a.get("--json", "");
  if (a.has("--json") && o.json.empty()) throw InputError("--json", "needs a file name");
  if (a.has("--busbw")) {
    const std::string v = a.get("--busbw", "");
    char* end = nullptr;
    o.busbw = std::strtod(v.c_str(), &end);
    if (v.empty() || *end || !std::isfinite(o.busbw) || !(o.busbw > 0))
      throw InputError("--busbw", "needs a positive, finite GB/s value, got '" + v + "'");
  }
  o.dt = a.get("--dt", "");
  if (a.has("--dt")) {  // the type's grammar here; what a network runs, the executor says
    const DataType t = DataType::parse(o.dt, "--dt");
    if (t.is_f32()) o.dt.clear();
  }
  o.quantise_steps = a.has("--quantise-steps");
  if (o.quantise_steps && o.dt.empty())
    throw InputError("--quantise-steps", "applies with --dt bf16 or u8s8 only");
  o.allreduce_json = a.get("--allreduce-json", "");
  if (a.has("--allreduce-json") && o.allreduce_json.empty())
    throw InputError("--allreduce-json", "needs files or folders");
  if (a.has("--busbw") && a.has("--allreduce-json"))
    throw InputError("--allreduce-json", "give --busbw or --allreduce-json, not both");
  o.data_parallel = a.has("--data-parallel");
  for (const char* f :
       {"--no-overlap", "--allreduce", "--bucket-mb", "--wait-sleep-us", "--dp-timeout"})
    if (a.has(f) && !o.data_parallel) throw InputError(f, "applies with --data-parallel only");
  if (o.data_parallel && !o.train)
    throw InputError("--data-parallel", "trains: give --train as well");
  if (o.data_parallel && o.check)
    throw InputError("--check", "check the network alone first (without --data-parallel)");
  o.overlap = !a.has("--no-overlap");
  o.allreduce = a.get("--allreduce", "mpi/ring");
  if (o.allreduce.empty()) throw InputError("--allreduce", "needs an implementation name");
  auto positive = [&](const char* flag, double fallback, double hi) {
    if (!a.has(flag)) return fallback;
    const std::string v = a.get(flag, "");
    char* end = nullptr;
    const double x = std::strtod(v.c_str(), &end);
    if (v.empty() || *end || !std::isfinite(x) || !(x > 0) || x > hi)
      throw InputError(flag,
                       "needs a positive number up to " + std::to_string(hi) + ", got '" + v + "'");
    return x;
  };
  o.bucket_mb = positive("--bucket-mb", 25, 1e6);
  if (a.has("--dp-timeout")) o.dp_timeout = positive("--dp-timeout", 60, 1e6);
  // Overlapped, the waiting thread sleeps beside the compute; after the backward it has the
  // core to itself and spins, as bench_allreduce does (data_parallel.h).
  o.wait_sleep_us = a.get_int("--wait-sleep-us", o.overlap ? 1000 : 0, 0, 1000000);
  return o;
}

}  // namespace pb::cli
