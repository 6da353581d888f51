// Network measurement and reports (see report.h).
#include "kernels/net/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "kernels/core/error.h"
#include "kernels/core/io.h"
#include "kernels/core/threads.h"
#ifdef PRIMBENCH_HAVE_OPENCL
#include "kernels/opencl/runtime.h"
#endif

namespace pb {

NetResult measure_network(Executor& ex, const NetOptions& opt, int warmup, int reps) {
  NetResult r;
  const Network& net = ex.network();
  r.network = net.name, r.backend = opt.backend, r.policy = opt.policy;
  r.mode = opt.train ? "train" : "infer";
  r.batch = net.batch();
  for (int i = 0; i < warmup; ++i) ex.step();
  std::vector<std::pair<double, std::vector<double>>> steps;
  Meter meter(ex.baseline_rss_bytes());
#ifdef PRIMBENCH_HAVE_OPENCL
  ocl::reset_device_peak();
#endif
  meter.start();
  for (int i = 0; i < std::max(1, reps); ++i) {
    const double ms = ex.step();
    std::vector<double> per;
    for (const CallInfo& c : ex.calls()) per.push_back(c.last_ms);
    steps.emplace_back(ms, std::move(per));
  }
  r.meter = meter.stop(threads());
  r.metered_steps = static_cast<int>(steps.size());
#ifdef PRIMBENCH_HAVE_OPENCL
  r.device_peak_mb =
      (static_cast<double>(ocl::device_bytes_peak()) - ex.baseline_device_bytes()) / 1e6;
#endif
  for (const CallInfo& c : ex.calls()) r.step_flops += c.flops;
  std::sort(steps.begin(), steps.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  const auto& med = steps[steps.size() / 2];
  r.step_ms = med.first;
  if (opt.train) {  // what the overlap-aware data-parallel projection replays
    r.call_ms = med.second;
    r.update_begin = ex.update_begin();
    std::vector<double> bytes;
    for (const auto& [name, t] : ex.param_values())
      bytes.push_back(static_cast<double>(t->bytes()));
    r.buckets = plan_buckets(bytes, ex.grad_ready_after(), kDefaultBucketMb);
  }
  r.loss = ex.loss();
  std::vector<double> alone = ex.isolated_ms(std::max(1, std::min(reps, 3)));
  r.peak_mb = ex.planned_bytes() / 1e6;
  r.items_per_s = r.batch / (r.step_ms / 1e3);
  r.fallbacks = ex.fallbacks();
  r.residency = ex.residency();
  r.composition = ex.composition();
  r.reorders = ex.reorders();
  std::map<std::string, size_t> row_of;
  for (size_t i = 0; i < net.layers.size(); ++i) {
    LayerRow row;
    row.layer = net.layers[i].name;
    row.kind = layer_kind_str(net.layers[i].kind);
    row.grad_bytes = net.layers[i].params() * 4;
    row_of[row.layer] = r.layers.size();
    r.layers.push_back(row);
  }
  for (size_t i = 0; i < ex.calls().size(); ++i) {
    const CallInfo& c = ex.calls()[i];
    LayerRow& row = r.layers[row_of[c.layer]];
    row.ms += med.second[i];
    row.alone_ms += alone[i];
    r.predicted_ms += alone[i];
    if (c.impl.rfind("native", 0) != 0)
      row.impls += (row.impls.empty() ? "" : ", ") + c.phase + " " + c.impl;
    if (c.note.rfind("fallback", 0) == 0 || c.note.find("; fallback") != std::string::npos)
      row.notes += (row.notes.empty() ? "" : "; ") + c.phase + ": " + c.note;
  }
  for (LayerRow& row : r.layers) row.share = r.step_ms > 0 ? row.ms / r.step_ms : 0;
  return r;
}

double gradient_bytes(const NetResult& r) {
  double bytes = 0;
  for (const LayerRow& l : r.layers) bytes += l.grad_bytes;
  return bytes;
}

std::vector<Projection> project_data_parallel(const NetResult& r, const std::vector<Busbw>& busbw,
                                              double alpha_ms, double cpu_ms_per_byte) {
  const double bytes = gradient_bytes(r);
  std::vector<Projection> v;
  for (const Busbw& b : busbw) {
    Projection pr;
    pr.busbw = b;
    const int p = b.ranks;
    pr.allreduce_ms = b.gbs > 0 && p > 1 ? 2.0 * (p - 1) / p * bytes / (b.gbs * 1e9) * 1e3 : 0;
    pr.step_ms = r.step_ms + pr.allreduce_ms;
    pr.efficiency = r.step_ms / pr.step_ms;
    if (!r.buckets.empty() && !r.call_ms.empty() && b.gbs > 0) {
      // The measured step plus the communication the replay leaves exposed (the replay's
      // compute is the calls alone, without the time between them).
      double calls = 0;
      for (double ms : r.call_ms) calls += ms;
      pr.overlap_step_ms = r.step_ms +
                           replay_step(r.call_ms, r.update_begin, r.buckets, p, b.gbs, alpha_ms,
                                       true, cpu_ms_per_byte) -
                           calls;
      pr.overlap_efficiency = r.step_ms / pr.overlap_step_ms;
    }
    v.push_back(pr);
  }
  return v;
}

std::vector<GradBucket> plan_buckets(const std::vector<double>& bytes,
                                     const std::vector<size_t>& ready_after, double bucket_mb) {
  std::vector<size_t> order(bytes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return ready_after[a] < ready_after[b]; });
  const double cap = bucket_mb * 1e6;
  std::vector<GradBucket> v;
  for (size_t i : order) {
    if (v.empty() || (v.back().bytes > 0 && v.back().bytes + bytes[i] > cap)) v.emplace_back();
    v.back().bytes += bytes[i];
    v.back().ready_after = std::max(v.back().ready_after, ready_after[i]);
    v.back().tensors.push_back(i);
  }
  return v;
}

double replay_step(const std::vector<double>& call_ms, size_t update_begin,
                   const std::vector<GradBucket>& buckets, int ranks, double busbw_gbs,
                   double alpha_ms, bool overlap, double cpu_ms_per_byte) {
  if (ranks < 2) cpu_ms_per_byte = 0;
  const double per_byte_ms =
      ranks > 1 && busbw_gbs > 0 ? 2.0 * (ranks - 1) / ranks / (busbw_gbs * 1e9) * 1e3 : 0;
  double t = 0, comm_free = 0;  // the compute's clock; when the all-reduces are done
  size_t k = 0;
  auto start = [&](const GradBucket& b, bool during_backward) {
    comm_free = std::max(comm_free, t) + (ranks > 1 ? alpha_ms : 0) + b.bytes * per_byte_ms;
    if (during_backward) t += b.bytes * cpu_ms_per_byte;  // its CPU work, taken from compute
  };
  for (size_t i = 0; i <= call_ms.size(); ++i) {
    if (i == update_begin) {  // the updates wait for every all-reduce
      for (; k < buckets.size(); ++k) start(buckets[k], false);
      t = std::max(t, comm_free);
    }
    if (i == call_ms.size()) break;
    t += call_ms[i];
    for (; overlap && k < buckets.size() && buckets[k].ready_after <= i; ++k)
      start(buckets[k], i + 1 < update_begin);
  }
  return t;
}

std::vector<Busbw> read_allreduce_busbw(const std::string& file, double bytes) {
  std::ifstream f(file);
  if (!f) throw InputError("--allreduce-json", "cannot read '" + file + "'");
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string text = ss.str();
  // Google Benchmark's JSON, one benchmark object per "name"; our counters and label in each.
  // Names are allreduce/<impl>/<set>:<shape>/..., the implementation two segments.
  const std::regex busbw_re("\"busbw\":\\s*([0-9.eE+-]+)"), ranks_re("\"ranks\":\\s*([0-9.eE+-]+)"),
      size_re("\"label\":\\s*\"n([0-9]+)"), impl_re("^\"name\":\\s*\"allreduce/([^/\"]+/[^/\"]+)/");
  struct Acc {
    double n = 0, sum = 0;
  };
  // ranks -> message bytes -> implementation -> busbw
  std::map<int, std::map<double, std::map<std::string, Acc>>> runs;
  size_t pos = text.find("\"name\":");
  while (pos != std::string::npos) {
    const size_t next = text.find("\"name\":", pos + 1);
    const std::string obj = text.substr(pos, next == std::string::npos ? next : next - pos);
    pos = next;
    std::smatch bw, rk, sz, im;
    if (obj.find("\"run_type\": \"aggregate\"") != std::string::npos ||
        obj.find("\"error_occurred\": true") != std::string::npos ||
        !std::regex_search(obj, bw, busbw_re) || !std::regex_search(obj, rk, ranks_re) ||
        !std::regex_search(obj, sz, size_re) || !std::regex_search(obj, im, impl_re))
      continue;
    Acc& a = runs[static_cast<int>(std::stod(rk[1]))][4.0 * std::stod(sz[1])][im[1]];
    a.n += 1, a.sum += std::stod(bw[1]) / 1e9;
  }
  if (runs.empty())
    throw InputError("--allreduce-json", "'" + file + "' holds no bench_allreduce busbw results");
  std::vector<Busbw> v;
  for (const auto& [p, sizes] : runs) {
    auto near = sizes.begin();
    for (auto it = sizes.begin(); it != sizes.end(); ++it)
      if (std::fabs(std::log(it->first / bytes)) < std::fabs(std::log(near->first / bytes)))
        near = it;
    Busbw b;
    b.ranks = p, b.message_bytes = near->first;
    for (const auto& [impl, acc] : near->second)
      if (acc.sum / acc.n > b.gbs) b.gbs = acc.sum / acc.n, b.impl = impl;
    v.push_back(b);
  }
  return v;
}

std::string table(const NetResult& r) {
  std::string s;
  char buf[512];
  std::snprintf(buf, sizeof buf, "%-18s %-6s %10s %7s %10s  %s\n", "layer", "kind", "ms", "share",
                "alone_ms", "implementations");
  s += buf;
  for (const LayerRow& l : r.layers) {
    if (l.ms == 0 && l.impls.empty()) continue;
    std::snprintf(buf, sizeof buf, "%-18s %-6s %10.3f %6.1f%% %10.3f  %s%s%s\n", l.layer.c_str(),
                  l.kind.c_str(), l.ms, 100 * l.share, l.alone_ms, l.impls.c_str(),
                  l.notes.empty() ? "" : "  [", l.notes.empty() ? "" : (l.notes + "]").c_str());
    s += buf;
  }
  std::snprintf(buf, sizeof buf,
                "%s %s %s/%s batch %lld: %.2f ms per batch, %.1f %s/s; sum of layers alone "
                "%.2f ms (measured/predicted %.3f); planned memory %.1f MB; loss %.4f; "
                "%d fallback(s)%s%s; %s\n",
                r.network.c_str(), r.mode.c_str(), r.backend.c_str(), r.policy.c_str(),
                static_cast<long long>(r.batch), r.step_ms, r.items_per_s, "items", r.predicted_ms,
                r.step_ms / r.predicted_ms, r.peak_mb, r.loss, r.fallbacks,
                r.residency.empty() ? "" : "; tensors: ",
                r.residency == "device" ? "all on the device" : r.residency.c_str(),
                r.composition.c_str());
  s += buf;
  // What the timed steps used, measured.
  std::string measured = "measured over " + std::to_string(r.metered_steps) + " step(s): ";
  if (r.meter.peak_mb >= 0) {
    std::snprintf(buf, sizeof buf, "peak host memory %.1f MB (planned %.1f)", r.meter.peak_mb,
                  r.peak_mb);
    measured += buf;
  } else {
    measured += "peak host memory not measured (/proc/self/clear_refs not writable)";
  }
  if (r.device_peak_mb > 0) {
    std::snprintf(buf, sizeof buf, ", device buffers %.1f MB", r.device_peak_mb);
    measured += buf;
  }
  std::snprintf(buf, sizeof buf, ", CPU utilisation %.0f%% of %d thread(s)",
                100 * r.meter.utilisation, threads());
  measured += buf;
  if (r.meter.energy) {  // the figures the counters and --json carry
    std::map<std::string, double> c;
    for (const auto& [k, v] : meter_counters(r.meter, r.metered_steps, r.step_flops, r.batch))
      c[k] = v;
    std::snprintf(buf, sizeof buf, ", %.1f W, %.2f J per step, %.2f items/J", c["watts"],
                  c["J_per_iter"], c["items_per_J"]);
    measured += buf;
  } else {
    measured += ", energy: " + rapl().why_not();
  }
  return s + measured + "\n";
}

std::string to_json(const NetResult& r, const std::vector<Projection>& proj,
                    const std::string& busbw_source) {
  std::string s =
      "{\"network\":" + json_str(r.network) + ",\"backend\":" + json_str(r.backend) +
      ",\"policy\":" + json_str(r.policy) + ",\"mode\":" + json_str(r.mode) +
      ",\"batch\":" + json_num(static_cast<double>(r.batch)) +
      ",\"ms_per_batch\":" + json_num(r.step_ms) + ",\"items_per_s\":" + json_num(r.items_per_s) +
      ",\"predicted_ms\":" + json_num(r.predicted_ms) +
      ",\"measured_over_predicted\":" + json_num(r.step_ms / r.predicted_ms) +
      ",\"peak_MB\":" + json_num(r.peak_mb) + ",\"loss\":" + json_num(r.loss) +
      ",\"fallbacks\":" + json_num(r.fallbacks) + ",\"residency\":" + json_str(r.residency) +
      ",\"composition\":" + json_str(r.composition) + ",\"reorders\":" + json_num(r.reorders) +
      ",\"measured\":{\"steps\":" + json_num(r.metered_steps) +
      ",\"device_peak_MB\":" + json_num(r.device_peak_mb);
  for (const auto& [k, v] : meter_counters(r.meter, r.metered_steps, r.step_flops, r.batch))
    s += "," + json_str(k) + ":" + json_num(v);
  s += "},\"layers\":[";
  bool first = true;
  for (const LayerRow& l : r.layers) {
    s += std::string(first ? "" : ",") + "{\"layer\":" + json_str(l.layer) +
         ",\"kind\":" + json_str(l.kind) + ",\"ms\":" + json_num(l.ms) +
         ",\"share\":" + json_num(l.share) + ",\"alone_ms\":" + json_num(l.alone_ms) +
         ",\"impls\":" + json_str(l.impls) + ",\"notes\":" + json_str(l.notes) +
         ",\"grad_bytes\":" + json_num(static_cast<double>(l.grad_bytes)) + "}";
    first = false;
  }
  s += "],\"data_parallel_projection\":{\"note\":" +
       json_str(
           "a projection, not a measurement: step_ms is the step + all-reduce of all "
           "gradients, 2(p-1)/p x bytes / busbw for p ranks (the fastest measured "
           "implementation when read from bench_allreduce), no overlap; overlap_step_ms "
           "replays the step's calls with 25 MB buckets all-reduced as their gradients are "
           "final, overlapping the rest of the backward") +
       ",\"busbw_from\":" + json_str(busbw_source) + ",\"ranks\":[";
  first = true;
  for (const Projection& p : proj) {
    s += std::string(first ? "" : ",") + "{\"p\":" + json_num(p.busbw.ranks) +
         ",\"busbw_GBs\":" + json_num(p.busbw.gbs) +
         (p.busbw.impl.empty() ? std::string()
                               : ",\"allreduce_impl\":" + json_str(p.busbw.impl) +
                                     ",\"message_bytes\":" + json_num(p.busbw.message_bytes)) +
         ",\"allreduce_ms\":" + json_num(p.allreduce_ms) + ",\"step_ms\":" + json_num(p.step_ms) +
         ",\"efficiency\":" + json_num(p.efficiency) +
         ",\"overlap_step_ms\":" + json_num(p.overlap_step_ms) +
         ",\"overlap_efficiency\":" + json_num(p.overlap_efficiency) + "}";
    first = false;
  }
  return s + "]}}";
}

}  // namespace pb
