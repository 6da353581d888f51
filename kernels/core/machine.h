// Machine facts and the machine probe: measured fp32 FMA peak and triad bandwidth for the thread
// count in use, and what the CPU is (model, ISA, topology, affinity).
#pragma once

#include <cstddef>
#include <string>

#include "kernels/core/dtype.h"

namespace pb {

struct MachineInfo {
  int threads = 0;
  double peak_flops = 0;   // fp32 FLOP/s, FMA loop, all threads: the best of several passes
  double triad_bytes = 0;  // bytes/s, a[i] = b[i] + s*c[i] (12 bytes per element, STREAM rule)
  // Spread of the timed passes, (best - median) / best in percent: above a few percent the
  // machine was not quiet (or the clock moved) while the probe ran.
  double peak_spread_pct = 0, triad_spread_pct = 0;
  // The reduced types' dot-product instructions, measured like peak_flops (operations per
  // second, 2 per product; 0 where the CPU has no such instruction): vdpbf16ps (bf16 pairs into
  // fp32) and vpdpbusd (u8 x s8 quadruples into int32).
  double bf16_ops = 0, u8s8_ops = 0;
  // In the best FMA pass, the least CPU time a thread got over the wall time of its loop, in
  // percent: below 90 other processes (or the hypervisor) took the cores from the probe, and its
  // figures are a share of the machine.
  double cpu_share_pct = 100;
  // The least of the FMA peak and the dot-product peaks (bf16, u8s8) over one thread's rate of
  // the same loop, each measured right after it (scaling_of: which), and what it should be: one
  // per physical core the threads may run on (min of threads, cores and the affinity's CPUs).
  // Below 85% of that, the cores shared their vector units while that loop ran (two virtual CPUs
  // on one core's SMT siblings, a hypervisor's placement), which no CPU-time count shows, and
  // the probe is not cached. 1 of 1 for one thread.
  double scaling = 1;
  std::string scaling_of = "fp32 FMA";
  int scaling_expected = 1;
  // "measured" (this process), "cached" (read from probe_cache_file(), measured earlier by
  // this build on this machine and thread count), or "measured, not cached: <why>".
  std::string source;
  std::string cache_file;  // where it was read or written; "" when the cache is off
};

// The probe for the current thread count, measured once per process and thread count, or read
// from the on-disk cache (about 0.5 s when measured). The cache lives in $PRIMBENCH_PROBE_CACHE
// ("off": none), else $XDG_CACHE_HOME/primbench/probe or ~/.cache/primbench/probe, keyed by the
// CPU, the thread count and the build (commit, compiler, flags). PRIMBENCH_PROBE=measure measures
// again and replaces the cached entry. A noisy measurement (probe_noise) is measured again, twice
// at most, and is not cached.
const MachineInfo& machine_info();
// Why a measured probe is not cached ("" when it is): its best pass's least per-thread CPU share
// below 90%, its FMA (triad) passes spread by more than 10% (20%), or one of its peaks (FMA,
// dot products) under 85% of scaling_expected times one thread's rate.
std::string probe_noise(const MachineInfo& m);
// The data type's measured peak rate over the fp32 FMA peak (peak_pct divides by peak_flops
// times this): the probe's dot-product rate of bf16 or u8s8, 1 for f32, f16 and where the CPU
// has no dot-product instruction for the type. Measured, not the ISA's ideal (bf16 2x, VNNI 4x).
double peak_scale(const DataType& dt);

struct CpuFacts {
  std::string model;   // /proc/cpuinfo "model name"; PRIMBENCH_CPU_MODEL overrides it
  std::string vendor;  // "AuthenticAMD", "GenuineIntel", ...
  std::string family, model_id, stepping;
  std::string isa;       // the extensions that matter that this CPU has, comma-separated
  std::string best_isa;  // "amx", "avx512", "avx2", "avx", "sse4.2" or "other"
  int sockets = 0, cores = 0, hw_threads = 0;  // physical packages, physical cores, logical CPUs
  std::string affinity;  // the CPUs this process may run on, as a list "0-3,8"
};

// The size of this CPU's data (or unified) cache of `level` (1, 2, 3; 0: the last level) as
// sysfs reports it for cpu0, the part one core sees (glibc's sysconf adds up a whole package's
// L3, 384 MB on a 32 MB-per-CCD EPYC); `fallback` when sysfs has no such cache.
size_t cache_bytes(int level, size_t fallback = size_t(32) << 20);
// The same cache's associativity (sysfs ways_of_associativity), `fallback` when sysfs has none.
int cache_ways(int level, int fallback = 8);

// Read once from /proc/cpuinfo, sysfs and sched_getaffinity.
const CpuFacts& cpu_facts();
std::string cpu_model();  // cpu_facts().model

}  // namespace pb
