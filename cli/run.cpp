// `primbench run <prim> <descriptor>`: time (and check) one shape on one or every implementation.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/options.h"
#include "kernels/allreduce/world.h"
#include "kernels/core/error.h"
#include "kernels/core/grammar.h"
#include "kernels/core/io.h"
#include "kernels/core/machine.h"
#include "kernels/core/problem.h"
#include "kernels/core/threads.h"
#include "kernels/environment.h"

namespace pb::cli {

namespace {

struct Row {
  std::string impl, status, reason;
  double time_ms = 0, gflops = 0, peak_pct = 0, prep_ms = 0, ws_mb = 0;
  PhaseTimes phases;                                  // per repetition, in ms
  std::vector<std::pair<std::string, double>> extra;  // the implementation's own figures
  CheckResult check;
  bool checked = false;
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

void make_dir(const std::string& dir) {
  std::string path;
  for (size_t i = 0; i <= dir.size(); ++i) {
    if (i == dir.size() || dir[i] == '/') {
      if (!path.empty() && mkdir(path.c_str(), 0755) != 0 && errno != EEXIST)
        throw InputError("--save", "cannot create '" + path + "': " + std::strerror(errno));
    }
    if (i < dir.size()) path += dir[i];
  }
}

std::string file_safe(std::string s) {
  for (char& c : s)
    if (c == '/') c = '_';
  return s;
}

std::string row_json(const Problem& p, const Row& r, Timing timing, CacheState cache,
                     const std::string& context) {
  std::string s = "{\"impl\":" + json_str(r.impl) + ",\"desc\":" + json_str(p.desc_str()) +
                  ",\"dir\":" + json_str(dir_str(p.dir())) + ",\"status\":" + json_str(r.status);
  const std::string contract =
      ",\"timing\":" + json_str(timing_str(timing)) + ",\"cache\":" + json_str(cache_str(cache));
  if (r.status == "unsupported")
    return s + ",\"reason\":" + json_str(r.reason) + contract + ",\"context\":" + context + "}";
  s += ",\"time_ms\":" + json_num(r.time_ms) + ",\"gflops\":" + json_num(r.gflops) +
       ",\"peak_pct\":" + json_num(r.peak_pct) + ",\"prep_ms\":" + json_num(r.prep_ms) +
       ",\"compute_ms\":" + json_num(r.phases.compute) +
       ",\"act_reorder_ms\":" + json_num(r.phases.act_reorder) +
       ",\"wei_transform_ms\":" + json_num(r.phases.wei_transform);
  if (r.checked)
    s += ",\"err_l2\":" + json_num(r.check.l2_rel) +
         ",\"max_abs_err\":" + json_num(r.check.max_abs) +
         ",\"max_rel_err\":" + json_num(r.check.max_rel) +
         ",\"worst_index\":" + std::to_string(r.check.worst_index) +
         ",\"zero_frac\":" + json_num(r.check.zero_frac) +
         ",\"checked_elems\":" + std::to_string(r.check.checked) +
         ",\"sampled\":" + (r.check.sampled ? "true" : "false");
  else
    s += ",\"err_l2\":null,\"max_abs_err\":null,\"max_rel_err\":null";
  s += ",\"ws_MB\":" + json_num(r.ws_mb) + ",\"counters\":{";
  for (size_t i = 0; i < r.extra.size(); ++i)
    s += (i ? "," : "") + json_str(r.extra[i].first) + ":" + json_num(r.extra[i].second);
  s += "}";
  if (!r.reason.empty()) s += ",\"reason\":" + json_str(r.reason);
  return s + contract + ",\"context\":" + context + "}";
}

void print_text(const Problem& p, const Row& r) {
  if (r.status == "unsupported") {
    std::printf("%-20s unsupported: %s\n", r.impl.c_str(), r.reason.c_str());
    return;
  }
  if (r.status == "fail" && !r.checked) {  // the reason says "error: ..."
    std::printf("%-20s %s\n", r.impl.c_str(), r.reason.c_str());
    return;
  }
  std::printf("%-20s %10.3f ms %9.2f GFLOP/s %6.1f%% peak  prep %8.1f ms", r.impl.c_str(),
              r.time_ms, r.gflops, r.peak_pct, r.prep_ms);
  if (r.checked) std::printf("  %s", r.check.summary().c_str());
  std::printf("  compute %.3f reorder %.3f wei %.3f ms", r.phases.compute, r.phases.act_reorder,
              r.phases.wei_transform);
  for (const auto& [k, v] : r.extra) std::printf("  %s=%.4g", k.c_str(), v);
  std::printf("\n");
}

void save_problem(const std::string& dir, Problem& p, const std::vector<std::string>& impls) {
  std::string j = "{\"prim\":" + json_str(p.prim()) + ",\"desc\":" + json_str(p.desc_str()) +
                  ",\"dir\":" + json_str(dir_str(p.dir())) + ",\"layout\":" + json_str(p.layout()) +
                  ",\"inputs\":[";
  bool first = true;
  for (const auto& t : p.inputs()) {
    j += std::string(first ? "" : ",") + "{\"name\":" + json_str(t.name) +
         ",\"file\":" + json_str(t.name + ".npy") +
         ",\"shape\":" + json_str(dims_str(t.tensor.dims())) + "}";
    first = false;
  }
  j += "],\"outputs\":[";
  first = true;
  for (const auto& impl : impls)
    for (const auto& o : p.output_names()) {
      j += std::string(first ? "" : ",") + "{\"impl\":" + json_str(impl) +
           ",\"name\":" + json_str(o) +
           ",\"file\":" + json_str(file_safe(impl) + "." + o + ".npy") + "}";
      first = false;
    }
  write_file_atomic(dir + "/problem.json", j + "]}\n");
}

}  // namespace

int cmd_run(int argc, char** argv) {
  const RunOptions o = parse_run_options(argc, argv);
  const PrimitiveInfo& prim = find_primitive(o.prim);
  const Dir dir = o.dir.value_or(prim.dirs.front());
  const int reps = o.reps, seed = o.seed;
  if (o.threads)
    set_threads(*o.threads);
  else
    init_threads_from_env();
  check_environment();
  const bool check = o.check, json = o.json;
  const Timing timing = o.timing;
  const CacheState cache = o.cache;
  std::string save = o.save;
  // Under mpirun (allreduce): every rank runs and checks; rank 0 prints and saves; the exit
  // status is the worst over ranks.
  if (world::launched() && world::rank() != 0) {
    if (!std::freopen("/dev/null", "w", stdout)) throw RuntimeError("cannot silence stdout");
    save.clear();
  }

  std::unique_ptr<Problem> p = prim.make(o.desc, dir, static_cast<uint64_t>(seed));
  const std::string& want = o.impl;
  bool all = want == "all";
  const std::vector<std::string> registered = p->impls();
  std::vector<std::string> impls = all ? registered : std::vector<std::string>{want};
  if (!all && std::find(registered.begin(), registered.end(), want) == registered.end()) {
    std::string known;
    for (const auto& i : registered) known += (known.empty() ? "" : ", ") + i;
    throw InputError(
        "--impl", "no implementation '" + want + "' for " + p->prim() + " (have: " + known + ")");
  }
  if (!save.empty()) make_dir(save);

  // A reduced data type's peak: the probe's rate of its dot-product instruction (machine.h).
  const double peak = machine_info().peak_flops * p->peak_scale();
  char scale[32];
  std::snprintf(scale, sizeof scale, "%.2f", p->peak_scale());
  const std::string peak_how =
      p->peak_scale() == 1 ? "" : " = " + std::string(scale) + " x fp32 FMA, measured";
  if (!json)
    std::printf(
        "%s %s %s  (%.4g GFLOP, %.4g MB moved, %d threads, peak %.1f GFLOP/s%s, timing %s, %s "
        "cache)\n",
        p->prim().c_str(), p->desc_str().c_str(), dir_str(dir).c_str(), p->flops() / 1e9,
        p->bytes() / 1e6, threads(), peak / 1e9, peak_how.c_str(), timing_str(timing).c_str(),
        cache_str(cache).c_str());
  int ran = 0, failed = 0, unsupported = 0;
  std::string context;  // the JSON rows' "context" (environment_json())
  std::vector<std::string> saved;
  for (const std::string& impl : impls) {
    Row r;
    r.impl = impl;
    std::string why;
    std::unique_ptr<Runner> runner = p->runner(impl, &why);  // InputError for unknown names
    if (!runner) {
      r.status = "unsupported";
      r.reason = why;
      ++unsupported;
    } else {
      try {
        std::vector<Tensor> outputs;
        MeasureOptions o;
        o.reps = reps, o.check = check, o.timing = timing, o.cache = cache;
        Measured m = measure(*p, *runner, o, save.empty() ? nullptr : &outputs);
        r.prep_ms = m.prep_ms;
        r.phases.compute = 1e3 * m.phases.compute / reps;
        r.phases.act_reorder = 1e3 * m.phases.act_reorder / reps;
        r.phases.wei_transform = 1e3 * m.phases.wei_transform / reps;
        r.time_ms = 1e3 * median(m.times_s);
        r.gflops = r.time_ms > 0 ? p->flops() / (r.time_ms * 1e6) : 0;
        // On a GPU an OpenCL implementation's percentage is of the device's own probe.
        const PeakRates rates = peak_rates(impl);
        r.peak_pct = 100 * r.gflops * 1e9 / (rates.flops * p->peak_scale());
        r.checked = m.checked;
        r.check = m.check;
        r.ws_mb = runner->workspace_bytes() / 1e6;
        r.extra = runner->extra_counters();
        if (rates.device) r.extra.push_back({"device_peak_gflops", rates.flops / 1e9});
        r.status = !check               ? "unchecked"
                   : !m.check.pass      ? "fail"
                   : m.check.mistrusted ? "mistrusted"
                                        : "pass";
        if (r.status == "mistrusted") r.reason = "reference is mostly zeros";
        ++ran;
        if (check && r.status != "pass") ++failed;
        if (!save.empty()) {
          auto names = p->output_names();
          for (size_t o = 0; o < outputs.size() && o < names.size(); ++o)
            write_file_atomic(save + "/" + file_safe(impl) + "." + names[o] + ".npy",
                              npy_bytes(outputs[o]));
          saved.push_back(impl);
        }
      } catch (const Unsupported& e) {
        r.status = "unsupported";
        r.reason = e.what();
        ++unsupported;
      } catch (const InputError&) {
        throw;
      } catch (const std::exception& e) {
        r.status = "fail";
        r.reason = std::string("error: ") + e.what();
        ++failed;
      }
    }
    if (json) {
      if (context.empty()) context = environment_json();  // once per command, not per row
      std::printf("%s\n", row_json(*p, r, timing, cache, context).c_str());
    } else
      print_text(*p, r);
    std::fflush(stdout);
  }
  if (!save.empty()) {
    for (const auto& t : p->inputs())
      write_file_atomic(save + "/" + t.name + ".npy", npy_bytes(t.tensor));
    save_problem(save, *p, saved);
  }
  return world::max_over_ranks(failed ? 1 : (ran == 0 || (!all && unsupported)) ? 3 : 0);
}

}  // namespace pb::cli
