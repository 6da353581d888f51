// bench_networks: whole networks composed from the kernels (kernels/net), one benchmark per
// (network, backend, policy, mode): net/<network>/<backend>/<policy>/<mode>, or, in a reduced data
// type (--primbench_dt=bf16,u8s8: convolution and fc layers in it), .../<mode>_<type> with the
// top-1 agreement and normwise logit error against the fp32 network as counters. Each is planned
// once (the `best` policy times every candidate on the first plan and caches the choice), then
// every iteration is one inference pass or one training step, timed by hand.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "benchmarks/bench_common.h"
#include "kernels/core/error.h"
#include "kernels/core/io.h"
#include "kernels/core/threads.h"
#include "kernels/environment.h"
#include "kernels/net/precision.h"
#include "kernels/net/report.h"

namespace {

using pb::bench::flag_int;
using pb::bench::split_list;

struct Flags {
  std::vector<std::string> nets, backends = {"cpu", "onednn"}, policies = {"best"},
                                 modes = {"infer", "train"}, dts = {"f32"};
  bool only_default = false;
  int batch = 0;
  std::string find_cache, layers_dir;
};

// The quick default run: AlexNet both modes, ResNet-50 inference, FCN-5 training, on cpu/best
// and onednn (all layers oneDNN where it has them).
const std::vector<std::string> kDefault = {"alexnet/infer", "alexnet/train", "resnet50/infer",
                                           "fcn5/train"};

Flags take_flags(int* argc, char** argv) {
  Flags f;
  int out = 1;
  for (int i = 1; i < *argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--primbench_", 0) != 0) {
      argv[out++] = argv[i];
      continue;
    }
    const size_t eq = a.find('=');
    const std::string key = a.substr(0, eq), val = eq == std::string::npos ? "" : a.substr(eq + 1);
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
      f.only_default = true;
    else if (key == "--primbench_batch")
      f.batch = flag_int(key, val, 1);
    else if (key == "--primbench_find_cache")
      f.find_cache = val;
    else if (key == "--primbench_layers_dir")
      f.layers_dir = val;
    else if (key == "--primbench_threads")
      pb::set_threads(flag_int(key, val, 1));
    else if (key == "--primbench_seed" || key == "--primbench_check" || key == "--primbench_dirs" ||
             key == "--primbench_timing" || key == "--primbench_cache")
      continue;  // accepted for tools/bench's common flags; they do not apply here
    else
      throw pb::InputError(key,
                           "unknown flag (bench_networks: --primbench_nets, _backends, "
                           "_policies, _modes, _dt, _default, _batch, _find_cache, _layers_dir, "
                           "_threads)");
  }
  *argc = out;
  for (const auto& m : f.modes)
    if (m != "infer" && m != "train")
      throw pb::InputError("--primbench_modes", "'" + m + "' is not infer or train");
  for (const auto& t : f.dts)  // the grammar, and a type a network runs (u8s8: inference)
    pb::check_net_dt(pb::DataType::parse(t, "--primbench_dt"), false, "cpu", "--primbench_dt");
  return f;
}

int g_failures = 0;  // networks that failed to plan or run (FAIL rows): exit status 1

void run(benchmark::State& st, const std::string& name, const pb::Network& net,
         const pb::NetOptions& opt, const std::string& layers_dir) {
  std::unique_ptr<pb::Executor> ex;
  pb::PrecisionCheck prec;
  try {
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
  } catch (const pb::Unsupported& e) {
    st.SkipWithError(("unsupported: " + std::string(e.what())).c_str());
    return;
  } catch (const std::exception& e) {
    ++g_failures;
    st.SkipWithError((std::string("FAIL: error: ") + e.what()).c_str());
    return;
  }
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
  // onednn: 1 when fused (oneDNN's layouts between layers), and its reorders per step.
  if (opt.backend == "onednn") {
    st.counters["fused"] = r.composition.rfind("fused", 0) == 0 ? 1 : 0;
    st.counters["reorders"] = r.reorders;
  }
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

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> registered;
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
    for (const std::string& n : nets) {
      if (n.rfind("tiny_", 0) == 0 && f.nets.empty()) continue;  // check networks
      pb::Network net = pb::Network::load(n);
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
              // Policy "composed" (onednn): layer by layer through NCHW, not the fused plan.
              if (policy == "composed" && backend != "onednn") continue;
              opt.composed = policy == "composed";
              opt.policy =
                  backend == "onednn" && (policy == "best" || opt.composed) ? "first" : policy;
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
  } catch (const pb::InputError& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 2;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  pb::bench::run_with_progress(registered);
  benchmark::Shutdown();
  if (g_failures) std::fprintf(stderr, "%s: %d network benchmark(s) FAILED\n", argv[0], g_failures);
  return g_failures ? 1 : 0;
}
