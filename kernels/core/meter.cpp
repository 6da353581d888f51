// Measured resources of a timed region (see meter.h).
#include "kernels/core/meter.h"

#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace pb {

namespace {

// A "Vm...:  1234 kB" line of /proc/self/status, in bytes; -1 when unreadable.
int64_t proc_status_kb(const std::string& key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(key + ":", 0) == 0) {
      std::istringstream in(line.substr(key.size() + 1));
      int64_t kb = -1;
      in >> kb;
      return kb < 0 ? -1 : kb * 1024;
    }
  return -1;
}

// Resets VmHWM to the current RSS (Linux 4.0+); false when /proc/self/clear_refs is not
// writable (then the peak is the process's lifetime peak, and not reported).
bool reset_peak() {
  std::ofstream f("/proc/self/clear_refs");
  f << "5";
  f.flush();
  return static_cast<bool>(f);
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool read_u64(const std::string& path, uint64_t* v) {
  std::ifstream f(path);
  unsigned long long x = 0;
  if (!(f >> x)) return false;
  *v = x;
  return true;
}

std::string read_line(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  return s;
}

}  // namespace

int64_t rss_bytes() {
  return proc_status_kb("VmRSS");
}

int64_t rss_baseline_bytes() {
  malloc_trim(0);
  return rss_bytes();
}

Rapl::Rapl(const std::string& root_arg) {
  namespace fs = std::filesystem;
  std::string root = root_arg;
  if (root.empty()) {
    const char* env = std::getenv("PRIMBENCH_POWERCAP_ROOT");
    root = env && *env ? env : "/sys/class/powercap";
  }
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    why_ = "no " + root + " (no RAPL powercap interface: a virtual machine exposes none)";
    return;
  }
  // The class folder lists every zone flat: "intel-rapl:N" (AMD's RAPL uses the same driver
  // name) named package-N, and subzones "intel-rapl:N:M", of which the one named dram is read.
  // Cores and uncore are inside the package's figure.
  std::vector<std::string> dirs;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("intel-rapl:", 0) == 0) dirs.push_back(e.path().string());
  }
  std::sort(dirs.begin(), dirs.end());
  std::string unreadable;
  auto add = [&](const std::string& dir, const std::string& name) {
    Zone z;
    z.name = name, z.path = dir + "/energy_uj";
    uint64_t v = 0;
    if (!read_u64(z.path, &v)) {
      unreadable = z.path;
      return;
    }
    if (!read_u64(dir + "/max_energy_range_uj", &z.max_uj)) z.max_uj = 0;
    zones_.push_back(z);
  };
  for (const std::string& d : dirs) {
    const std::string name = read_line(d + "/name");
    const std::string base = fs::path(d).filename().string();
    if (std::count(base.begin(), base.end(), ':') == 1 && name.rfind("package", 0) == 0)
      add(d, name);
    else if (std::count(base.begin(), base.end(), ':') == 2 && name == "dram")
      add(d, name);
  }
  if (zones_.empty())
    why_ = unreadable.empty() ? "no package zone under " + root
                              : unreadable + " is not readable (RAPL needs root on Linux 5.10+)";
}

std::string Rapl::zones() const {
  std::string s;
  for (const Zone& z : zones_) s += (s.empty() ? "" : ",") + z.name;
  return s;
}

Rapl::Sample Rapl::sample() const {
  Sample s;
  for (const Zone& z : zones_) {
    uint64_t v = 0;
    read_u64(z.path, &v);
    s.uj.push_back(v);
  }
  return s;
}

void Rapl::joules(const Sample& a, const Sample& b, double* package, double* dram) const {
  *package = *dram = 0;
  for (size_t i = 0; i < zones_.size() && i < a.uj.size() && i < b.uj.size(); ++i) {
    uint64_t d = b.uj[i] - a.uj[i];
    if (b.uj[i] < a.uj[i])  // wrapped past max_energy_range_uj
      d = zones_[i].max_uj ? zones_[i].max_uj - a.uj[i] + b.uj[i] : 0;
    (zones_[i].name == "dram" ? *dram : *package) += d / 1e6;
  }
}

const Rapl& rapl() {
  static const Rapl r;
  return r;
}

std::vector<std::pair<std::string, double>> meter_counters(const MeterResult& m, int64_t iters,
                                                           double flops, double items) {
  std::vector<std::pair<std::string, double>> v = {{"cpu_util", m.utilisation}};
  if (m.peak_mb >= 0) v.push_back({"peak_rss_MB", m.peak_mb});
  const double joules = m.package_j + m.dram_j;
  if (m.energy && m.wall_s > 0 && iters > 0) {
    v.push_back({"watts", joules / m.wall_s});
    v.push_back({"J_per_iter", joules / iters});
    if (items > 0 && joules > 0) v.push_back({"items_per_J", items * iters / joules});
    if (flops > 0 && joules > 0) v.push_back({"gflops_per_W", flops * iters / 1e9 / joules});
  }
  return v;
}

void Meter::start() {
  malloc_trim(0);  // memory freed before the region (a reference check) is not counted in it
  peak_reset_ = reset_peak();
  energy0_ = rapl().sample();
  cpu0_ = cpu_seconds();
  wall0_ = wall_seconds();
}

MeterResult Meter::stop(int threads) const {
  MeterResult r;
  r.wall_s = wall_seconds() - wall0_;
  r.cpu_s = cpu_seconds() - cpu0_;
  r.utilisation = r.wall_s > 0 ? r.cpu_s / (r.wall_s * std::max(1, threads)) : 0;
  const int64_t hwm = proc_status_kb("VmHWM");
  if (peak_reset_ && hwm >= 0 && baseline_ >= 0)
    r.peak_mb = std::max<int64_t>(0, hwm - baseline_) / 1e6;
  if (rapl().available()) {
    r.energy = true;
    rapl().joules(energy0_, rapl().sample(), &r.package_j, &r.dram_j);
  }
  return r;
}

}  // namespace pb
