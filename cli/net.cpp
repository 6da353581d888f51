// `primbench net <network>`: plan and time one network (inference or a training step) on one
// backend and algorithm policy; prints the per-layer breakdown, optionally saves it as JSON.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "cli/options.h"
#include "kernels/core/check.h"
#include "kernels/core/error.h"
#include "kernels/core/grammar.h"
#include "kernels/core/io.h"
#include "kernels/core/threads.h"
#include "kernels/environment.h"
#include "kernels/net/precision.h"
#include "kernels/net/report.h"

namespace pb::cli {

// cli/net_dp.cpp: --data-parallel under mpirun.
int net_data_parallel(const NetCliOptions& o, const Network& net, NetOptions opt,
                      const std::vector<Busbw>& busbw, const std::string& busbw_source);

int cmd_net(int argc, char** argv) {
  const NetCliOptions o = parse_net_options(argc, argv);
  if (o.list) {
    for (const auto& n : Network::list()) std::printf("%s\n", n.c_str());
    return o.list_asked ? 0 : 2;
  }
  if (o.threads)
    set_threads(*o.threads);
  else
    init_threads_from_env();
  check_environment();
  Network net = Network::load(o.network);
  if (o.batch) net = net.with_batch(*o.batch);
  NetOptions opt;
  opt.backend = o.backend;
  opt.policy = o.policy;
  opt.train = o.train;
  opt.composed = o.composed;
  opt.find_cache = o.find_cache;
  opt.seed = static_cast<uint64_t>(o.seed);
  const double busbw = o.busbw;
  // The projection's busbw per rank count: one figure for p = 2..16, or bench_allreduce's.
  std::vector<Busbw> per_p;
  std::string source;
  if (busbw > 0) {
    for (int p : {2, 4, 8, 16}) per_p.push_back({p, busbw, "", 0});
    source = "--busbw " + number_str(busbw);
  } else if (!o.allreduce_json.empty()) {
    // Files, or folders of tools/allreduce's bench_allreduce_np<N>.json.
    std::vector<std::string> files;
    std::stringstream list(o.allreduce_json);
    for (std::string f; std::getline(list, f, ',');) {
      std::error_code ec;
      if (!std::filesystem::is_directory(f, ec)) {
        if (!f.empty()) files.push_back(f);
        continue;
      }
      for (const auto& e : std::filesystem::directory_iterator(f, ec)) {
        const std::string n = e.path().filename().string();
        if (n.rfind("bench_allreduce_np", 0) == 0 && e.path().extension() == ".json")
          files.push_back(e.path().string());
      }
    }
    if (files.empty())
      throw InputError("--allreduce-json", "no bench_allreduce JSON in '" + o.allreduce_json + "'");
    for (const std::string& f : files) {
      for (const Busbw& b : read_allreduce_busbw(f, 4.0 * net.params())) per_p.push_back(b);
      source += (source.empty() ? "" : ",") + f;
    }
    std::sort(per_p.begin(), per_p.end(),
              [](const Busbw& x, const Busbw& y) { return x.ranks < y.ranks; });
  }
  if (o.data_parallel) {
    if (!o.dt.empty())
      throw InputError("--dt", "data-parallel training (--data-parallel) runs in fp32 only");
    return net_data_parallel(o, net, opt, per_p, source);
  }
  // --dt: the fp32 network first, timed the same way (the speed-up), its first step's logits
  // kept (the comparison), then the typed network (which takes its calibration from a composed
  // fp32 plan of its own: lowp.cpp).
  const bool typed = !o.dt.empty();
  if (typed) check_net_dt(DataType::parse(o.dt, "--dt"), opt.train, opt.backend, "--dt");
  if (typed && o.check)
    throw InputError("--check",
                     "compares with the fp64 reference composition in fp32: with --dt the report "
                     "compares the logits with the fp32 network's instead");
  Tensor f32_logits;
  NetResult r32;
  if (typed) {
    Executor e32(net, opt);
    e32.step();
    f32_logits = e32.output().clone();
    r32 = measure_network(e32, opt, 0, o.reps);
    opt.dt = DataType::parse(o.dt, "--dt");
    opt.typed_handoff = !o.quantise_steps;
  }
  Executor ex(net, opt);
  PrecisionCheck prec;
  if (typed) {  // the first step of both starts from the same weights and batch
    ex.step();
    prec = compare_logits(ex.output(), f32_logits, net.mb);
  }
  // --check: one step against the same network composed of the fp64 reference kernels (same
  // seed, weights and batch): the output (logits) normwise and the loss, and in training every
  // weight gradient of that step (both from the same initial weights); a mismatch exits 1.
  std::string check_json;
  bool check_failed = false;
  if (o.check) {
    NetOptions ro = opt;
    ro.backend = "ref", ro.policy = "first", ro.find_cache = "off";
    Executor ref(net, ro);
    ex.step();
    ref.step();
    const Tolerance tol = tolerance("net", "*", false);
    const CheckResult c = compare_tensors(ex.output(), ref.output(), tol);
    const double loss_err =
        std::fabs(ex.loss() - ref.loss()) / std::max(1e-30, std::fabs(ref.loss()));
    check_failed = !c.pass || c.mistrusted || !(loss_err <= 1e-4);
    // Training: every trainable tensor's gradient; the worst one is shown, the first failing
    // one named.
    std::string grads;
    double worst_grad = 0;
    if (opt.train) {
      const auto names = ex.params();
      const std::vector<const Tensor*> g = ex.param_grads(), want = ref.param_grads();
      std::string failed, worst_name;
      for (size_t i = 0; i < g.size() && i < want.size(); ++i) {
        const CheckResult r = compare_tensors(*g[i], *want[i], tol);
        if (!(r.l2_rel <= worst_grad)) worst_grad = r.l2_rel, worst_name = names[i].first;
        if ((!r.pass || r.mistrusted) && failed.empty())
          failed = names[i].first + " " + r.summary();
      }
      if (g.size() != want.size())
        failed =
            "gradient count " + std::to_string(g.size()) + " vs " + std::to_string(want.size());
      check_failed = check_failed || !failed.empty();
      char buf[160];
      std::snprintf(buf, sizeof buf, "  gradients %s (%zu tensors, worst err_l2=%.3g at %s)",
                    failed.empty() ? "PASS" : "FAIL", g.size(), worst_grad, worst_name.c_str());
      grads = buf;
      if (!failed.empty()) grads += ": " + failed;
    }
    std::printf(
        "check against the reference composition: %s  output %s  loss %.6g vs %.6g (rel "
        "%.2g)%s\n",
        check_failed ? "FAIL" : "PASS", c.summary().c_str(), ex.loss(), ref.loss(), loss_err,
        grads.c_str());
    check_json = std::string("{\"status\":") + (check_failed ? "\"fail\"" : "\"pass\"") +
                 ",\"err_l2\":" + json_num(c.l2_rel) + ",\"loss\":" + json_num(ex.loss()) +
                 ",\"ref_loss\":" + json_num(ref.loss()) +
                 (opt.train ? ",\"grad_err_l2\":" + json_num(worst_grad) : std::string()) + "}";
  }
  NetResult r = measure_network(ex, opt, o.check || typed ? 0 : 1, o.reps);
  std::fputs(table(r).c_str(), stdout);
  std::string dt_json;
  if (typed) {
    const bool images = net.layers[0].out.h > 1;
    const char* unit = images ? "images" : "samples";
    std::printf("dt %s: %s\n", opt.dt.str().c_str(), precision_summary(opt.dt, opt.train).c_str());
    std::printf(
        "against fp32 (same seed, weights and batch; the first step): top-1 agreement %lld/%lld "
        "(%.1f%%), logit error %.3g normwise; %.4g %s/s vs %.4g in fp32: %.2fx\n",
        static_cast<long long>(prec.agree), static_cast<long long>(prec.images),
        100.0 * prec.top1(), prec.logit_err, r.items_per_s, unit, r32.items_per_s,
        r.items_per_s / r32.items_per_s);
    if (r32.composition != r.composition) std::printf("(fp32 plan: %s)\n", r32.composition.c_str());
    dt_json = "{\"type\":" + json_str(opt.dt.str()) + ",\"top1_agree\":" + json_num(prec.top1()) +
              ",\"top1_images\":" + std::to_string(prec.images) +
              ",\"logit_err\":" + json_num(prec.logit_err) +
              ",\"f32_items_per_s\":" + json_num(r32.items_per_s) +
              ",\"speedup_over_f32\":" + json_num(r.items_per_s / r32.items_per_s) + "}";
  }
  std::vector<Projection> proj = project_data_parallel(r, per_p);
  if (!proj.empty()) {
    std::printf(
        "data-parallel PROJECTION (not measured; step + all-reduce of %.1f MB of gradients, "
        "2(p-1)/p x bytes / busbw, busbw from %s, no overlap; overlapped: the step's calls "
        "replayed with %.0f MB buckets all-reduced as their gradients are final):\n",
        gradient_bytes(r) / 1e6, source.c_str(), kDefaultBucketMb);
    for (const Projection& p : proj) {
      const std::string run = p.busbw.impl.empty()
                                  ? ""
                                  : "  (" + p.busbw.impl + ", " +
                                        std::to_string(std::lround(p.busbw.message_bytes / 1e6)) +
                                        " MB messages)";
      std::printf(
          "  p=%-3d busbw %7.2f GB/s  all-reduce %9.2f ms  step %9.2f ms  efficiency %.2f  "
          "overlapped: step %9.2f ms  efficiency %.2f%s\n",
          p.busbw.ranks, p.busbw.gbs, p.allreduce_ms, p.step_ms, p.efficiency, p.overlap_step_ms,
          p.overlap_efficiency, run.c_str());
    }
  }
  if (!o.json.empty()) {
    std::string j = to_json(r, proj, source);
    if (!check_json.empty()) j = j.substr(0, j.rfind('}')) + ",\"check\":" + check_json + "}";
    if (!dt_json.empty()) j = j.substr(0, j.rfind('}')) + ",\"dt\":" + dt_json + "}";
    j = j.substr(0, j.rfind('}')) + ",\"context\":" + environment_json() + "}";
    write_file_atomic(o.json, j + "\n");
  }
  return check_failed ? 1 : 0;
}

}  // namespace pb::cli
