// bench_networks: whole networks composed from the kernels (kernels/net), one benchmark per
// (network, backend, policy, mode): net/<network>/<backend>/<policy>/<mode>, or, in a reduced data
// type (--primbench_dt=bf16,u8s8: convolution and fc layers in it), .../<mode>_<type> with the
// top-1 agreement and normwise logit error against the fp32 network as counters. Each is planned
// once (the `best` policy times every candidate on the first plan and caches the choice), then
// every iteration is one inference pass or one training step, timed by hand. Under mpirun with
// --primbench_ranks=P: data-parallel training across the P ranks instead (kernels/net/
// data_parallel.h), net/<network>/<backend>/<policy>/train_dp/<allreduce>/<overlap>/ranks:P,
// rank 0 reporting.
#include <benchmark/benchmark.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "benchmarks/bench_common.h"
#include "kernels/allreduce/world.h"
#include "kernels/core/error.h"
#include "kernels/core/io.h"
#include "kernels/core/problem.h"
#include "kernels/core/threads.h"
#include "kernels/environment.h"
#include "kernels/net/dp_report.h"
#include "kernels/net/precision.h"
#include "kernels/net/report.h"
#include "kernels/net/watchdog.h"

namespace {

using pb::bench::flag_int;
using pb::bench::split_list;

// Whether backend b has policy p (best, first, or one of its algorithms); why not in *why.
bool valid_policy(const std::string& b, const std::string& p, std::string* why) {
  pb::NetOptions opt;
  opt.backend = b, opt.policy = p;
  try {
    pb::check_net_options(opt);
    return true;
  } catch (const pb::InputError& e) {
    *why = e.what();
    return false;
  }
}

// A flag's value that must not be empty, or an InputError naming the flag.
std::string nonempty(const std::string& flag, const std::string& v, const char* what) {
  if (v.empty()) throw pb::InputError(flag, std::string("needs ") + what);
  return v;
}

struct Flags {
  std::vector<std::string> nets, backends = {"cpu", "onednn"}, policies = {"best"},
                                 modes = {"infer", "train"}, dts = {"f32"};
  bool only_default = false;
  int batch = 0;
  std::string find_cache, layers_dir;
  bool threads_given = false;
  // Data-parallel mode (--primbench_ranks): the ranks, all-reduces, bucket size, overlap modes.
  int ranks = 0;
  std::vector<std::string> allreduces = {"mpi/ring"}, overlaps = {"1"};
  double bucket_mb = 25;
};

// The quick default run: AlexNet both modes, ResNet-50 inference, FCN-5 training, on cpu/best
// and onednn (all layers oneDNN where it has them).
const std::vector<std::string> kDefault = {"alexnet/infer", "alexnet/train", "resnet50/infer",
                                           "fcn5/train"};

Flags take_flags(int* argc, char** argv) {
  Flags f;
  std::string dp_flag;  // a data-parallel flag given
  int out = 1;
  for (int i = 1; i < *argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--primbench_", 0) != 0) {
      argv[out++] = argv[i];
      continue;
    }
    const size_t eq = a.find('=');
    const std::string key = a.substr(0, eq), val = eq == std::string::npos ? "" : a.substr(eq + 1);
    if (key == "--primbench_allreduce" || key == "--primbench_overlap" ||
        key == "--primbench_bucket_mb")
      dp_flag = key;
    if (key == "--primbench_nets" || key == "--primbench_sets")
      f.nets = split_list(val);
    else if (key == "--primbench_backends")
      f.backends = split_list(val);
    else if (key == "--primbench_policies")
      f.policies = split_list(val);
    else if (key == "--primbench_modes")
      f.modes = split_list(val);
    else if (key == "--primbench_dt")
      f.dts = split_list(val);
    else if (key == "--primbench_default")
      f.only_default = pb::bench::flag_bool(key, val);
    else if (key == "--primbench_batch")
      f.batch = flag_int(key, val, 1);
    else if (key == "--primbench_find_cache")
      f.find_cache = nonempty(key, val, "a file, or off");
    else if (key == "--primbench_layers_dir")
      f.layers_dir = nonempty(key, val, "a folder");
    else if (key == "--primbench_threads")
      pb::set_threads(flag_int(key, val, 1)), f.threads_given = true;
    else if (key == "--primbench_ranks")
      f.ranks = flag_int(key, val, 1);
    else if (key == "--primbench_allreduce")
      f.allreduces = split_list(val);
    else if (key == "--primbench_overlap")
      f.overlaps = split_list(val);
    else if (key == "--primbench_bucket_mb") {
      char* end = nullptr;
      f.bucket_mb = std::strtod(val.c_str(), &end);
      if (val.empty() || *end || !(f.bucket_mb > 0) || f.bucket_mb > 1e6)
        throw pb::InputError(key, "needs a positive number of MB, got '" + val + "'");
    } else if (key == "--primbench_seed" || key == "--primbench_check")
      flag_int(key, val, 0);  // tools/bench's common flags: checked, but they do not apply here
    else if (key == "--primbench_dirs")
      for (const std::string& d : split_list(val)) try {
          pb::parse_dir(d);
        } catch (const pb::InputError& e) {
          throw pb::InputError(key, e.what());
        }
    else if (key == "--primbench_timing")
      pb::parse_timing(val, key);
    else if (key == "--primbench_cache")
      pb::parse_cache(val, key);
    else
      throw pb::InputError(key,
                           "unknown flag (bench_networks: --primbench_nets, _backends, "
                           "_policies, _modes, _dt, _default, _batch, _find_cache, _layers_dir, "
                           "_threads, _ranks, _allreduce, _overlap, _bucket_mb)");
  }
  *argc = out;
  for (const auto& m : f.modes)
    if (m != "infer" && m != "train")
      throw pb::InputError("--primbench_modes", "'" + m + "' is not infer or train");
  for (const auto& o : f.overlaps)
    if (o != "0" && o != "1")
      throw pb::InputError("--primbench_overlap", "'" + o + "' is not 1 (overlap) or 0");
  if (!dp_flag.empty() && !f.ranks)
    throw pb::InputError(dp_flag, "applies with --primbench_ranks only");
  // Every backend named exists, and every policy for at least one of them (a fixed algorithm
  // runs on the backends that have it; the others skip it): the Executor's own check, under the
  // flags' names.
  for (const auto& b : f.backends) {
    pb::NetOptions opt;
    opt.backend = b;
    try {
      pb::check_net_options(opt);
    } catch (const pb::InputError& e) {
      throw pb::InputError("--primbench_backends", e.what());
    }
  }
  for (const auto& p : f.policies) {
    std::string why;
    bool any = p == "composed";  // onednn's and cpu's layer-by-layer plans, below
    for (const auto& b : f.backends) any = any || valid_policy(b, p, &why);
    if (!any) throw pb::InputError("--primbench_policies", why);
  }
  if (!f.layers_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(f.layers_dir, ec);
    if (ec)
      throw pb::InputError("--primbench_layers_dir",
                           "cannot create '" + f.layers_dir + "': " + ec.message());
  }
  for (const auto& t : f.dts)  // the grammar, and a type a network runs (u8s8: inference)
    pb::check_net_dt(pb::DataType::parse(t, "--primbench_dt"), false, "cpu", "--primbench_dt");
  if (f.ranks && (f.dts.size() != 1 || f.dts[0] != "f32"))
    throw pb::InputError("--primbench_dt", "data-parallel training (--primbench_ranks) runs fp32");
  return f;
}

int g_failures = 0;  // networks that failed to plan or run (FAIL rows): exit status 1

// Runs `plan`; false when it threw, the benchmark then skipped: "unsupported: ..." for
// Unsupported, a FAIL row (counted in g_failures) for any other error.
template <class F>
bool planned(benchmark::State& st, F&& plan) {
  try {
    plan();
    return true;
  } catch (const pb::Unsupported& e) {
    st.SkipWithError(("unsupported: " + std::string(e.what())).c_str());
  } catch (const std::exception& e) {
    ++g_failures;
    st.SkipWithError((std::string("FAIL: error: ") + e.what()).c_str());
  }
  return false;
}

void run(benchmark::State& st, const std::string& name, const pb::Network& net,
         const pb::NetOptions& opt, const std::string& layers_dir) {
  std::unique_ptr<pb::Executor> ex;
  pb::PrecisionCheck prec;
  const bool ok = planned(st, [&] {
    // A reduced type: the fp32 network's first step first (same seed, weights and batch), then
    // the typed network's first step (the warm-up) against it.
    pb::Tensor f32_logits;
    if (!opt.dt.is_f32()) {
      pb::NetOptions f = opt;
      f.dt = pb::DataType();
      pb::Executor e32(net, f);
      e32.step();
      f32_logits = e32.output().clone();
    }
    ex = std::make_unique<pb::Executor>(net, opt);
    ex->step();  // warm-up
    if (!opt.dt.is_f32()) prec = pb::compare_logits(ex->output(), f32_logits, net.mb);
  });
  if (!ok) return;
  std::vector<double> steps;
  for (auto _ : st) {
    steps.push_back(ex->step());
    st.SetIterationTime(steps.back() / 1e3);
  }
  // One more step with the per-call breakdown, then every call timed alone (best of 2).
  pb::NetResult r = pb::measure_network(*ex, opt, 0, 2);
  std::sort(steps.begin(), steps.end());
  const double median_ms = steps[steps.size() / 2];
  double total_ms = 0;
  for (double ms : steps) total_ms += ms;
  // images_per_s for image networks, samples_per_s (vectors, sequences) for FCN and LSTM.
  const bool images = net.layers[0].out.h > 1;
  st.counters[images ? "images_per_s" : "samples_per_s"] =
      net.batch() * steps.size() / (total_ms / 1e3);
  st.counters["ms_per_batch"] = median_ms;
  st.counters["predicted_ms"] = r.predicted_ms;
  st.counters["measured_over_predicted"] = median_ms / r.predicted_ms;
  st.counters["peak_MB"] = r.peak_mb;  // planned; peak_rss_MB and device_peak_MB measured
  for (const auto& [k, v] :
       pb::meter_counters(r.meter, r.metered_steps, r.step_flops, static_cast<double>(net.batch())))
    st.counters[k == "items_per_J" ? (images ? "images_per_J" : "samples_per_J") : k] = v;
  if (r.device_peak_mb >= 0 && opt.backend == "ocl")
    st.counters["device_peak_MB"] = r.device_peak_mb;
  st.counters["fallbacks"] = r.fallbacks;
  if (opt.backend == "ocl") st.counters["on_device"] = r.residency == "device" ? 1 : 0;
  // onednn: 1 when fused (oneDNN's layouts between layers), and its reorders per step; cpu: 1
  // when the bias, batch-norm, add and ReLU after each convolution or fc ran as one pass.
  if (opt.backend == "onednn" || opt.backend == "cpu")
    st.counters["fused"] = r.composition.rfind("fused", 0) == 0 ? 1 : 0;
  if (opt.backend == "onednn") st.counters["reorders"] = r.reorders;
  st.counters["batch"] = static_cast<double>(net.batch());
  if (!opt.dt.is_f32()) {
    st.counters["top1_agree"] = prec.top1();
    st.counters["logit_err"] = prec.logit_err;
  }
  // Time per kind of layer in the breakdown step (the stacked bars of tools/plot): fc layers are
  // GEMMs; input, add and loss are "other".
  std::map<std::string, double> by_kind = {{"conv", 0}, {"gemm", 0}, {"pool", 0}, {"bnorm", 0},
                                           {"act", 0},  {"rnn", 0},  {"other", 0}};
  for (const pb::LayerRow& l : r.layers) {
    const std::string k = l.kind == "fc" ? "gemm" : by_kind.count(l.kind) ? l.kind : "other";
    by_kind[k] += l.ms;
  }
  for (const auto& [k, ms] : by_kind) st.counters["ms_" + k] = ms;
  st.SetLabel(net.name + " batch " + std::to_string(net.batch()));
  // One line per benchmark for tools/report and tools/plot: every layer's time and choices.
  if (const char* out = std::getenv("PRIMBENCH_LAYERS_OUT"); out && *out) {
    // {"name":..., "threads":..., then primbench net --json's fields (network, ..., layers)}
    const std::string line = "{\"name\":" + pb::json_str(name) +
                             ",\"threads\":" + std::to_string(pb::threads()) + "," +
                             pb::to_json(r, {}, "").substr(1) + "\n";
    std::FILE* fp = std::fopen(out, "a");
    const bool ok = fp && std::fputs(line.c_str(), fp) >= 0;
    if (fp) std::fclose(fp);
    if (!ok) {  // main() checked the file opens: a full disk, say
      ++g_failures;
      std::fprintf(stderr, "bench_networks: PRIMBENCH_LAYERS_OUT: cannot append to %s\n", out);
    }
  }
  if (!layers_dir.empty())
    pb::write_file_atomic(
        layers_dir + "/" + net.name + "_" + opt.backend + "_" + opt.policy + "_" + r.mode + ".json",
        pb::to_json(r, {}, "") + "\n");
}

// Data-parallel training across the mpirun ranks: one replica per rank, measured as `primbench
// net --data-parallel` does (kernels/net/dp_report.h); every rank runs it, rank 0 reports. The
// iterations are the measured steps (the slowest rank's).
void run_dp(benchmark::State& st, const pb::Network& net, const pb::NetOptions& opt,
            const pb::DataParallelOptions& dpo) {
  const int rank = pb::world::rank(), ranks = pb::world::size();
  pb::DataParallelResult r;
  const bool ok = planned(st, [&] {
    pb::agree_across_ranks({{"--primbench_batch", std::to_string(net.batch())},
                            {"network", pb::network_signature(net)},
                            {"backend", opt.backend},
                            {"policy", opt.policy},
                            {"--primbench_allreduce", dpo.allreduce},
                            {"--primbench_bucket_mb", std::to_string(dpo.bucket_mb)},
                            {"--primbench_overlap", dpo.overlap ? "1" : "0"}});
    pb::net::watchdog_phase("planning " + net.name);
    pb::Executor ex(net, pb::replica_options(opt, rank, ranks));
    std::unique_ptr<pb::DataParallel> dp;
    {
      pb::net::WatchdogWait wait("planning the gradient buckets", 600);
      dp = std::make_unique<pb::DataParallel>(ex, dpo);
    }
    r = pb::measure_data_parallel(ex, *dp, opt, 1, static_cast<int>(st.max_iterations), {}, "");
  });
  if (!ok) return;
  size_t i = 0;
  for (auto _ : st) st.SetIterationTime(r.steps[std::min(i++, r.steps.size() - 1)].step_ms / 1e3);
  const bool images = net.layers[0].out.h > 1;
  st.counters[images ? "images_per_s" : "samples_per_s"] = r.items_per_s;
  st.counters["ms_per_batch"] = r.median.step_ms;
  st.counters["batch"] = static_cast<double>(net.batch());
  for (const auto& [k, v] : pb::dp_counters(r)) st.counters[k] = v;
  st.SetLabel(net.name + " batch " + std::to_string(net.batch()) + " per rank" +
              (r.warning.empty() ? "" : "; WARNING: " + r.warning));
}

// The data-parallel benchmarks: every network, backend and policy asked for, in training, per
// all-reduce and overlap mode.
void register_dp(const Flags& f, const std::vector<std::string>& nets,
                 std::vector<std::string>* registered) {
  const int ranks = pb::world::size();
  if (f.ranks != ranks)
    throw pb::InputError("--primbench_ranks", std::to_string(f.ranks) +
                                                  " asked for, but mpirun "
                                                  "started " +
                                                  std::to_string(ranks) + " rank(s)");
  for (const std::string& n : nets) {
    pb::Network net = pb::Network::load(n);
    if (f.batch) net = net.with_batch(f.batch);
    for (const std::string& backend : f.backends)
      for (const std::string& policy : f.policies)
        for (const std::string& allreduce : f.allreduces)
          for (const std::string& overlap : f.overlaps) {
            pb::NetOptions opt;
            opt.backend = backend;
            opt.policy = backend == "onednn" && policy == "best" ? "first" : policy;
            opt.train = true;
            opt.find_cache = f.find_cache;
            pb::DataParallelOptions dpo;
            dpo.allreduce = allreduce;
            dpo.bucket_mb = f.bucket_mb;
            dpo.overlap = overlap == "1";
            dpo.wait_sleep_us = dpo.overlap ? 1000 : 0;  // as primbench net's defaults
            const std::string name =
                "net/" + net.name + "/" + backend + "/" + opt.policy + "/train_dp/" + allreduce +
                "/" + (dpo.overlap ? "overlap" : "no_overlap") + "/ranks:" + std::to_string(ranks);
            registered->push_back(name);
            benchmark::RegisterBenchmark(
                name.c_str(), [net, opt, dpo](benchmark::State& st) { run_dp(st, net, opt, dpo); })
                ->UseManualTime()
                ->Unit(benchmark::kMillisecond)
                ->Iterations(3);
          }
  }
}

class NullReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> registered;
  int rank = 0, f_ranks = 0;
  try {
    pb::init_threads_from_env();
    pb::check_environment();
    Flags f = take_flags(&argc, argv);
    if (const char* out = std::getenv("PRIMBENCH_LAYERS_OUT"); out && *out) {
      std::FILE* fp = std::fopen(out, "a");
      if (!fp) throw pb::InputError("PRIMBENCH_LAYERS_OUT", std::string("cannot open ") + out);
      std::fclose(fp);
    }
    std::vector<std::string> nets = f.nets.empty() ? pb::Network::list() : f.nets;
    if (f.ranks) {  // data-parallel: MPI first, every rank registers alike
      if (f.nets.empty())
        throw pb::InputError("--primbench_ranks", "name the networks (--primbench_nets)");
      rank = pb::world::rank();
      char host[256] = "?";
      gethostname(host, sizeof host - 1);
      pb::net::watchdog_start(pb::net::watchdog_seconds_from_env(pb::net::kDefaultWatchdogSeconds),
                              std::string(argv[0]) + ": rank " + std::to_string(rank) + " of " +
                                  std::to_string(pb::world::size()) + " (" + host + ")");
      if (!f.threads_given && !std::getenv("PRIMBENCH_THREADS"))
        pb::set_threads(pb::data_parallel_threads());
      register_dp(f, nets, &registered);
      nets.clear();
    }
    for (const std::string& n : nets) {
      if (n.rfind("tiny_", 0) == 0 && f.nets.empty()) continue;  // check networks
      pb::Network net;
      try {
        net = pb::Network::load(n);
      } catch (const pb::InputError& e) {
        throw pb::InputError(f.nets.empty() ? e.field() : "--primbench_nets", e.what());
      }
      if (f.batch) net = net.with_batch(f.batch);
      for (const std::string& backend : f.backends)
        for (const std::string& policy : f.policies)
          for (const std::string& mode : f.modes)
            for (const std::string& dt_text : f.dts) {
              const pb::DataType dt = pb::DataType::parse(dt_text, "--primbench_dt");
              if (f.only_default &&
                  std::find(kDefault.begin(), kDefault.end(), n + "/" + mode) == kDefault.end())
                continue;
              pb::NetOptions opt;
              opt.backend = backend;
              // oneDNN's own choice per layer is its "auto" algorithm: one candidate, no search.
              // Policy "composed": one call per layer (onednn: through NCHW, not the fused plan;
              // cpu: inference without the passes after each convolution or fc).
              if (policy == "composed" && backend != "onednn" &&
                  (backend != "cpu" || mode != "infer"))
                continue;
              std::string why;
              if (policy != "composed" && !valid_policy(backend, policy, &why)) continue;
              opt.composed = policy == "composed";
              opt.policy = backend == "onednn" && (policy == "best" || opt.composed) ? "first"
                           : opt.composed                                            ? "best"
                                                                                     : policy;
              opt.train = mode == "train";
              if (dt.integer() && opt.train) continue;  // u8s8 is inference
              opt.dt = dt;
              opt.find_cache = f.find_cache;
              const std::string name = "net/" + net.name + "/" + backend + "/" +
                                       (opt.composed ? "composed" : opt.policy) + "/" + mode +
                                       (dt.is_f32() ? "" : "_" + dt.str());
              const std::string dir = f.layers_dir;
              registered.push_back(name);
              benchmark::RegisterBenchmark(
                  name.c_str(),
                  [name, net, opt, dir](benchmark::State& st) { run(st, name, net, opt, dir); })
                  ->UseManualTime()
                  ->Unit(benchmark::kMillisecond)
                  ->Iterations(3);
            }
    }
    for (const auto& [k, v] : pb::environment_facts()) benchmark::AddCustomContext(k, v);
    if (f.batch) benchmark::AddCustomContext("primbench_batch", std::to_string(f.batch));
    if (f.ranks) {
      f_ranks = f.ranks;
      benchmark::AddCustomContext("mpi_ranks", std::to_string(f.ranks));
      benchmark::AddCustomContext("mpi_library", pb::world::library_version());
    }
  } catch (const pb::InputError& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 2;
  }
  if (rank != 0) {  // only rank 0 writes --benchmark_out
    int out = 1;
    for (int i = 1; i < argc; ++i)
      if (std::string(argv[i]).rfind("--benchmark_out", 0) != 0) argv[out++] = argv[i];
    argc = out;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  if (rank == 0) {
    pb::bench::run_with_progress(registered);
  } else {
    NullReporter quiet;
    benchmark::RunSpecifiedBenchmarks(&quiet);
  }
  benchmark::Shutdown();
  pb::net::watchdog_stop();
  if (g_failures) std::fprintf(stderr, "%s: %d network benchmark(s) FAILED\n", argv[0], g_failures);
  return f_ranks ? pb::world::max_over_ranks(g_failures ? 1 : 0) : (g_failures ? 1 : 0);
}
