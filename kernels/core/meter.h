// What a timed region used, measured rather than planned: the process's peak resident memory,
// its CPU time against wall time and threads (utilisation), and energy from RAPL (Linux
// powercap) where the machine exposes it. Shared by the bench binaries, bench_networks and
// `primbench net`.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace pb {

// Resident memory of this process now (VmRSS), bytes; -1 when /proc is unreadable.
int64_t rss_bytes();
// A baseline for a measured peak: the allocator's free memory is given back first (malloc_trim),
// so that memory freed by earlier work is not counted as in use.
int64_t rss_baseline_bytes();

// RAPL energy counters under a powercap tree: every package-N zone and its dram subzone.
// `root` defaults to $PRIMBENCH_POWERCAP_ROOT, else /sys/class/powercap.
class Rapl {
 public:
  explicit Rapl(const std::string& root = "");
  bool available() const { return !zones_.empty(); }
  // Why there is no energy figure ("" when available), e.g. "no /sys/class/powercap (a virtual
  // machine exposes no RAPL)" or "energy_uj not readable: ...".
  const std::string& why_not() const { return why_; }
  // Zones read: "package-0,dram".
  std::string zones() const;
  struct Sample {
    std::vector<uint64_t> uj;
  };
  Sample sample() const;
  // Package and DRAM joules between two samples (counter wrap-around handled).
  void joules(const Sample& a, const Sample& b, double* package, double* dram) const;

 private:
  struct Zone {
    std::string name, path;  // name: "package-0" or "dram"
    uint64_t max_uj = 0;     // max_energy_range_uj: where the counter wraps
  };
  std::vector<Zone> zones_;
  std::string why_;
};
// The machine's RAPL (one reader per process); its why_not() goes into every context once.
const Rapl& rapl();

// Measures a region: start(), the work, stop().
struct MeterResult {
  double wall_s = 0, cpu_s = 0;
  double utilisation = 0;  // cpu_s / (wall_s * threads): 1 when every thread was busy
  // Peak resident memory during the region over the baseline, MB; -1 when the peak could not be
  // reset at start() (/proc/self/clear_refs not writable).
  double peak_mb = -1;
  bool energy = false;  // package_j and dram_j are measured
  double package_j = 0, dram_j = 0;
};
// Counters of a metered region of `iters` iterations, each of `flops` (0: not counted) and
// `items` images or samples (0: not counted): cpu_util, peak_rss_MB (when measured) and, where
// RAPL is readable, watts, J_per_iter, items_per_J and gflops_per_W.
std::vector<std::pair<std::string, double>> meter_counters(const MeterResult& m, int64_t iters,
                                                           double flops, double items);

class Meter {
 public:
  // `baseline`: resident bytes before the measured object was planned (rss_baseline_bytes());
  // the peak is reported above it.
  explicit Meter(int64_t baseline) : baseline_(baseline) {}
  void start();
  MeterResult stop(int threads) const;

 private:
  int64_t baseline_;
  bool peak_reset_ = false;
  double wall0_ = 0, cpu0_ = 0;
  Rapl::Sample energy0_;
};

}  // namespace pb
