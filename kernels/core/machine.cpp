// Machine facts and probe: FMA-loop peak and triad bandwidth with the current thread count
// (warmed up, best of several passes, cached per machine, thread count and build).
#include "kernels/core/machine.h"

#include "kernels/core/amx.h"

#include <omp.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/core/error.h"
#include "kernels/core/machine_dot.h"
#include "kernels/core/tensor.h"
#include "kernels/core/threads.h"
#include "kernels/environment.h"

namespace pb {

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The FMA loop, 16 independent accumulators per thread to hide the FMA latency (4 cycles x 2
// ports on current cores), in the widest FMA the CPU has, chosen at run time. It used to be
// written in GCC vector types and left to the compiler: clang's 256-bit preference
// (prefer-vector-width) halved it and a -O1 build (the sanitizers', which do not unroll it)
// kept the accumulators in memory: a quarter of the peak under TSan, where the dot-product
// loops (intrinsics, machine_dot.cpp) kept their rate, and their ratio to the fp32 peak read
// 16 for 4 (MachineSmoke.ReducedTypePeaksAreMeasured failed in CI).
constexpr int kAcc = 16;
#if defined(__x86_64__)
PB_PROBE_LOOP __attribute__((target("avx512f"))) float fma_loop_512(long iters) {
  __m512 acc[kAcc];
  for (int j = 0; j < kAcc; ++j) acc[j] = _mm512_set1_ps(1.0f + j * 1e-6f);
  const __m512 mul = _mm512_set1_ps(0.999999f), add = _mm512_set1_ps(1e-7f);
  for (long it = 0; it < iters; ++it)
#pragma GCC unroll 16
    for (int j = 0; j < kAcc; ++j) acc[j] = _mm512_fmadd_ps(acc[j], mul, add);
  return probe::lanes_sum(acc, kAcc);
}
// 12 accumulators: with the two constants, what AVX2's 16 registers hold without spilling.
constexpr int kAcc256 = 12;
PB_PROBE_LOOP __attribute__((target("avx2,fma"))) float fma_loop_256(long iters) {
  __m256 acc[kAcc256];
  for (int j = 0; j < kAcc256; ++j) acc[j] = _mm256_set1_ps(1.0f + j * 1e-6f);
  const __m256 mul = _mm256_set1_ps(0.999999f), add = _mm256_set1_ps(1e-7f);
  for (long it = 0; it < iters; ++it)
#pragma GCC unroll 12
    for (int j = 0; j < kAcc256; ++j) acc[j] = _mm256_fmadd_ps(acc[j], mul, add);
  return probe::lanes_sum(acc, kAcc256);
}
#endif
using Vec = float __attribute__((vector_size(64)));
PB_PROBE_LOOP float fma_loop_generic(long iters) {
  Vec acc[kAcc];
  for (int j = 0; j < kAcc; ++j) acc[j] = Vec{} + (1.0f + j * 1e-6f);
  const Vec mul = Vec{} + 0.999999f, add = Vec{} + 1e-7f;
  for (long it = 0; it < iters; ++it)
#pragma GCC unroll 16
    for (int j = 0; j < kAcc; ++j) acc[j] = acc[j] * mul + add;
  return probe::lanes_sum(acc, kAcc);
}

// The loop for this CPU and its floating-point operations per iteration.
struct FmaLoop {
  float (*run)(long iters);
  double flops_per_iter;
};
FmaLoop fma_loop() {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) return {fma_loop_512, 2.0 * kAcc * 16};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return {fma_loop_256, 2.0 * kAcc256 * 8};
#endif
  return {fma_loop_generic, 2.0 * kAcc * 16};
}

constexpr int kPasses = 9;  // timed passes of each probe; the best is the figure

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct Pass {
  double flops = 0;      // FLOP/s over the pass, all threads
  double cpu_share = 1;  // the least CPU time any thread got over its wall time in the loop
};

// One pass with every thread busy. Each thread also compares the CPU time it got with the wall
// time of its loop: other processes on our cores (or a hypervisor's steal) take CPU time from
// our threads, and the pass then measures a share of the machine however steady it is.
Pass fma_pass(int nthreads, long iters) {
  const FmaLoop loop = fma_loop();
  double t0 = now();
  float sink = 0;
  double share = 1;
#pragma omp parallel num_threads(nthreads) reduction(+ : sink) reduction(min : share)
  {
    const double w0 = now(), c0 = thread_cpu_seconds();
    sink += loop.run(iters);
    const double wall = now() - w0;
    share = wall > 0 ? std::min(1.0, (thread_cpu_seconds() - c0) / wall) : 1.0;
  }
  double t = now() - t0;
  if (sink == 12345.f) t += 1;  // keep the loop alive
  return {loop.flops_per_iter * iters * nthreads / t, share};
}

struct Passes {
  double best = 0, spread_pct = 0;
  double cpu_share_pct = 100;  // the best pass's least per-thread CPU share
};

Passes summarise(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  Passes p;
  p.best = v.back();
  double median = v[v.size() / 2];
  p.spread_pct = p.best > 0 ? 100.0 * (p.best - median) / p.best : 0;
  return p;
}

// A peak rate: `pass(nthreads, iters)` warmed up until the clock settles (two consecutive passes
// within 2%, at most about 0.3 s), then the best of kPasses.
template <class PassFn>
Passes peak_of(PassFn pass, int nthreads, long iters) {
  double prev = pass(nthreads, iters).flops, t0 = now();
  while (now() - t0 < 0.3) {
    double r = pass(nthreads, iters).flops;
    bool settled = std::fabs(r - prev) <= 0.02 * std::max(r, prev);
    prev = r;
    if (settled) break;
  }
  std::vector<double> v;
  Pass best;
  for (int rep = 0; rep < kPasses; ++rep) {
    Pass p = pass(nthreads, iters);
    v.push_back(p.flops);
    if (p.flops > best.flops) best = p;
  }
  Passes p = summarise(v);
  p.cpu_share_pct = 100 * best.cpu_share;
  return p;
}

Passes fma_peak(int nthreads) {
  return peak_of(fma_pass, nthreads, 3000000);  // about 10 ms per pass at 500 GFLOP/s
}

// The dot-product instruction's rate (machine_dot.h), 0 where the CPU has none.
double dot_peak(probe::Dot kind, int nthreads) {
  if (!probe::has_dot(kind)) return 0;
  auto pass = [kind](int t, long iters) {
    probe::DotPass d = probe::dot_pass(kind, t, iters);
    return Pass{d.ops, d.cpu_share};
  };
  return peak_of(pass, nthreads, probe::dot_iters(kind)).best;
}

Passes triad(int nthreads) {
  const int64_t n = 16 << 20;  // 3 x 64 MB: far beyond any last-level cache
  Tensor a({n}), b({n}), c({n});
#pragma omp parallel for num_threads(nthreads) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    b[i] = 1.0f;
    c[i] = 2.0f;
    a[i] = 0.0f;
  }
  std::vector<double> v;
  for (int rep = 0; rep < kPasses + 1; ++rep) {
    double t0 = now();
    float* pa = a.data();
    const float *pb = b.data(), *pc = c.data();
#pragma omp parallel for num_threads(nthreads) schedule(static)
    for (int64_t i = 0; i < n; ++i) pa[i] = pb[i] + 3.0f * pc[i];
    if (rep > 0) v.push_back(12.0 * n / (now() - t0));  // the first pass warms up
  }
  return summarise(v);
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\n"), e = s.find_last_not_of(" \t\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// "0-3,8" from a sorted set of CPU numbers.
std::string cpu_list(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(cpus[i]);
    if (j > i) out += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

CpuFacts read_cpu_facts() {
  CpuFacts f;
  std::ifstream in("/proc/cpuinfo");
  std::string line, flags;
  std::set<std::pair<std::string, std::string>> cores;  // (physical id, core id)
  std::set<std::string> packages;
  std::string phys;
  while (std::getline(in, line)) {
    auto p = line.find(':');
    if (p == std::string::npos) continue;
    std::string k = trim(line.substr(0, p)), v = trim(line.substr(p + 1));
    if (k == "processor")
      ++f.hw_threads;
    else if (k == "model name" && f.model.empty())
      f.model = v;
    else if (k == "vendor_id" && f.vendor.empty())
      f.vendor = v;
    else if (k == "cpu family" && f.family.empty())
      f.family = v;
    else if (k == "model" && f.model_id.empty())
      f.model_id = v;
    else if (k == "stepping" && f.stepping.empty())
      f.stepping = v;
    else if (k == "flags" && flags.empty())
      flags = " " + v + " ";
    else if (k == "physical id")
      phys = v, packages.insert(v);
    else if (k == "core id")
      cores.insert({phys, v});
  }
  if (f.model.empty()) f.model = "unknown";
  if (const char* o = std::getenv("PRIMBENCH_CPU_MODEL"); o && *o) f.model = o;
  f.sockets = std::max<int>(1, static_cast<int>(packages.size()));
  f.cores = cores.empty() ? f.hw_threads : static_cast<int>(cores.size());
  if (f.hw_threads == 0) f.hw_threads = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  if (f.cores == 0) f.cores = f.hw_threads;
  // The extensions that decide which kernels a library can use, in /proc/cpuinfo's spelling.
  static const char* kIsa[] = {"sse4_2",      "avx",      "avx2",        "fma",
                               "f16c",        "avx_vnni", "avx512f",     "avx512bw",
                               "avx512vl",    "avx512dq", "avx512_vnni", "avx512_bf16",
                               "avx512_fp16", "amx_tile", "amx_bf16",    "amx_int8"};
  auto has = [&](const std::string& x) { return flags.find(" " + x + " ") != std::string::npos; };
  for (const char* x : kIsa)
    if (has(x)) f.isa += (f.isa.empty() ? "" : ",") + std::string(x);
  f.best_isa = has("amx_tile")  ? "amx"
               : has("avx512f") ? "avx512"
               : has("avx2")    ? "avx2"
               : has("avx")     ? "avx"
               : has("sse4_2")  ? "sse4.2"
                                : "other";
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    std::vector<int> cpus;
    for (int i = 0; i < CPU_SETSIZE; ++i)
      if (CPU_ISSET(i, &set)) cpus.push_back(i);
    f.affinity = cpu_list(cpus);
  }
  return f;
}

std::string probe_dir() {
  if (const char* e = std::getenv("PRIMBENCH_PROBE_CACHE"); e && *e)
    return std::string(e) == "off" ? "" : std::string(e);
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return std::string(x) + "/primbench/probe";
  if (const char* h = std::getenv("HOME"); h && *h)
    return std::string(h) + "/.cache/primbench/probe";
  return "";
}

// What a cached probe must match: the CPU, the thread count, the build and the AMX state (its
// tile products are the reduced types' rates where they run).
std::string probe_key(int threads) {
  const CpuFacts& c = cpu_facts();
  const BuildInfo& b = build_info();
  return c.vendor + "|" + c.model + "|" + c.family + "|" + c.model_id + "|" +
         std::to_string(c.hw_threads) + "|t" + std::to_string(threads) + "|" + b.commit +
         (b.dirty == "1" ? "+dirty" : "") + "|" + b.compiler + "|" + b.flags + "|amx " +
         amx::summary();
}

std::string key_file(const std::string& dir, const std::string& key) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : key) h = (h ^ ch) * 1099511628211ull;
  char name[40];
  std::snprintf(name, sizeof name, "probe_%016llx.txt", static_cast<unsigned long long>(h));
  return dir + "/" + name;
}

// MachineInfo::scaling_of's values, by their number in the cache file.
const char* const kScalingOf[3] = {"fp32 FMA", "bf16 dot", "u8s8 dot"};

bool read_cached(const std::string& path, const std::string& key, MachineInfo* m) {
  std::ifstream f(path);
  std::string line;
  if (!std::getline(f, line) || line != "key " + key) return false;
  std::map<std::string, double> v;
  while (std::getline(f, line)) {
    std::istringstream ls(line);
    std::string k;
    double x;
    if (ls >> k >> x) v[k] = x;
  }
  for (const char* k :
       {"peak_flops", "triad_bytes", "peak_spread_pct", "triad_spread_pct", "bf16_ops", "u8s8_ops",
        "scaling", "scaling_expected"})  // an entry of an older build lacks these two
    if (!v.count(k) || !std::isfinite(v[k]) || v[k] < 0) return false;
  if (v["peak_flops"] <= 0 || v["triad_bytes"] <= 0) return false;
  m->peak_flops = v["peak_flops"];
  m->triad_bytes = v["triad_bytes"];
  m->peak_spread_pct = v["peak_spread_pct"];
  m->triad_spread_pct = v["triad_spread_pct"];
  m->bf16_ops = v["bf16_ops"];
  m->u8s8_ops = v["u8s8_ops"];
  if (v.count("cpu_share_pct")) m->cpu_share_pct = v["cpu_share_pct"];
  m->scaling = v["scaling"];
  m->scaling_expected = static_cast<int>(v["scaling_expected"]);
  const int of = v.count("scaling_of") ? static_cast<int>(v["scaling_of"]) : 0;
  m->scaling_of = kScalingOf[of >= 0 && of < 3 ? of : 0];
  return true;
}

// Written to a temporary file and renamed, so that concurrent processes never read half a file.
bool write_cached(const std::string& path, const std::string& key, const MachineInfo& m) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  std::string tmp = path + ".tmp" + std::to_string(getpid());
  {
    std::ofstream f(tmp);
    if (!f) return false;
    char buf[320];
    std::snprintf(
        buf, sizeof buf,
        "peak_flops %.6e\ntriad_bytes %.6e\npeak_spread_pct %.3f\ntriad_spread_pct %.3f\n"
        "cpu_share_pct %.1f\nbf16_ops %.6e\nu8s8_ops %.6e\nscaling %.3f\n"
        "scaling_expected %d\nscaling_of %d\n",
        m.peak_flops, m.triad_bytes, m.peak_spread_pct, m.triad_spread_pct, m.cpu_share_pct,
        m.bf16_ops, m.u8s8_ops, m.scaling, m.scaling_expected,
        static_cast<int>(std::find(kScalingOf, kScalingOf + 3, m.scaling_of) - kScalingOf) % 3);
    f << "key " << key << "\n" << buf;
    if (!f) return false;
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) std::filesystem::remove(tmp, ec);
  return !ec;
}

}  // namespace

namespace {
struct CacheLevel {
  size_t bytes = 0;
  int ways = 0;
};
// sysfs read once: level -> cpu0's data or unified cache (callers sit on hot paths).
const std::map<int, CacheLevel>& cache_levels() {
  static const std::map<int, CacheLevel> levels = [] {
    std::map<int, CacheLevel> s;
    for (int i = 0; i < 8; ++i) {
      const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
      std::ifstream lf(dir + "level"), sf(dir + "size"), tf(dir + "type"),
          wf(dir + "ways_of_associativity");
      int lv = 0, ways = 0;
      std::string sz, ty;
      if (!(lf >> lv) || !(sf >> sz) || !(tf >> ty) || ty == "Instruction") continue;
      size_t v = std::strtoull(sz.c_str(), nullptr, 10);
      const char unit = sz.empty() ? 0 : sz.back();
      v *= unit == 'K' ? 1024 : unit == 'M' ? 1024 * 1024 : 1;
      if (!(wf >> ways)) ways = 0;
      if (v > 0) s[lv] = {v, ways};
    }
    return s;
  }();
  return levels;
}
}  // namespace

size_t cache_bytes(int level, size_t fallback) {
  const auto& levels = cache_levels();
  if (level <= 0) return levels.empty() ? fallback : levels.rbegin()->second.bytes;
  auto it = levels.find(level);
  return it != levels.end() ? it->second.bytes : fallback;
}

int cache_ways(int level, int fallback) {
  const auto& levels = cache_levels();
  auto it =
      level <= 0 ? (levels.empty() ? levels.end() : std::prev(levels.end())) : levels.find(level);
  return it != levels.end() && it->second.ways > 0 ? it->second.ways : fallback;
}

const CpuFacts& cpu_facts() {
  static const CpuFacts f = read_cpu_facts();
  return f;
}

std::string cpu_model() {
  return cpu_facts().model;
}

namespace {
// How many times one thread's rate (FMA or dot products) t threads reach on an idle machine: one
// per physical core they may run on.
int expected_scaling(int t) {
  int allowed = t;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) allowed = CPU_COUNT(&set);
  return std::max(1, std::min({t, cpu_facts().cores, allowed}));
}
}  // namespace

const MachineInfo& machine_info() {
  static std::mutex mu;
  static std::map<int, MachineInfo> cache;
  std::lock_guard<std::mutex> lock(mu);
  int t = threads();
  auto it = cache.find(t);
  if (it != cache.end()) return it->second;
  MachineInfo m;
  m.threads = t;
  const std::string dir = probe_dir(), key = probe_key(t);
  const char* env = std::getenv("PRIMBENCH_PROBE");
  const std::string mode = env ? env : "";
  if (!mode.empty() && mode != "measure" && mode != "cached")
    throw InputError("PRIMBENCH_PROBE", "'" + mode + "' is not measure or cached");
  const bool remeasure = mode == "measure";
  if (!dir.empty()) m.cache_file = key_file(dir, key);
  if (!remeasure && !m.cache_file.empty() && read_cached(m.cache_file, key, &m)) {
    m.source = "cached";
    return cache.emplace(t, m).first->second;
  }
  // A noisy measurement is tried again (twice at most), to survive a passing load. Each peak is
  // followed by one thread's rate of the same loop (scaling).
  auto measure = [&] {
    m.scaling_expected = expected_scaling(t);
    const bool check = m.scaling_expected > 1;
    m.scaling = check ? std::numeric_limits<double>::infinity() : 1.0;
    m.scaling_of = kScalingOf[0];
    auto scaled = [&](double all, double one, const char* what) {
      if (one > 0 && all / one < m.scaling) m.scaling = all / one, m.scaling_of = what;
    };
    const Passes peak = fma_peak(t);
    m.peak_flops = peak.best;
    m.peak_spread_pct = peak.spread_pct;
    m.cpu_share_pct = peak.cpu_share_pct;
    if (check) scaled(peak.best, fma_peak(1).best, kScalingOf[0]);
    m.bf16_ops = dot_peak(probe::Dot::bf16, t);
    if (check && m.bf16_ops > 0) scaled(m.bf16_ops, dot_peak(probe::Dot::bf16, 1), kScalingOf[1]);
    m.u8s8_ops = dot_peak(probe::Dot::u8s8, t);
    if (check && m.u8s8_ops > 0) scaled(m.u8s8_ops, dot_peak(probe::Dot::u8s8, 1), kScalingOf[2]);
  };
  measure();
  for (int again = 0; again < 2 && !probe_noise(m).empty(); ++again) measure();
  const Passes bw = triad(t);
  m.triad_bytes = bw.best;
  m.triad_spread_pct = bw.spread_pct;
  const std::string noise = probe_noise(m);
  if (m.cache_file.empty())
    m.source = "measured, not cached: the cache is off";
  else if (!noise.empty())
    m.source = "measured, not cached: " + noise;
  else if (!write_cached(m.cache_file, key, m))
    m.source = "measured, not cached: cannot write " + m.cache_file;
  else
    m.source = "measured";
  return cache.emplace(t, m).first->second;
}

std::string probe_noise(const MachineInfo& m) {
  constexpr double kNoisy = 10;  // percent: CPU time lost, or spread, past which it is not kept
  char why[240];
  if (m.cpu_share_pct < 100 - kNoisy) {
    std::snprintf(why, sizeof why,
                  "in its best pass a thread got %.0f%% of a CPU (a busy machine, or a "
                  "hypervisor's steal)",
                  m.cpu_share_pct);
  } else if (m.peak_spread_pct > kNoisy) {
    return "its FMA passes spread by more than 10% (a busy machine?)";
  } else if (m.triad_spread_pct > 2 * kNoisy) {
    return "its triad passes spread by more than 20% (a busy machine?)";
  } else if (m.scaling < 0.85 * m.scaling_expected) {
    std::snprintf(why, sizeof why,
                  "its %d threads reached %.2f times one thread's %s rate, not about %d: their "
                  "cores shared their vector units (SMT siblings, or a hypervisor's placement)",
                  m.threads, m.scaling, m.scaling_of.c_str(), m.scaling_expected);
  } else {
    return "";
  }
  return why;
}

double peak_scale(const DataType& dt) {
  const MachineInfo& m = machine_info();
  const double dot = dt.in == DataType::bf16   ? m.bf16_ops
                     : dt.in == DataType::u8s8 ? m.u8s8_ops
                                               : 0;
  return dot > 0 && m.peak_flops > 0 ? dot / m.peak_flops : 1;
}

}  // namespace pb
