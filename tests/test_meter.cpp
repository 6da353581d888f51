// Measured resources: RAPL read from a fake powercap tree (the zones, joules between samples,
// counter wrap-around, the reasons when there is none), the peak resident memory of a region,
// CPU utilisation, and the counters and context that bench binaries and `primbench net` report.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "kernels/core/meter.h"
#include "tests/cli_runner.h"

namespace pb {
namespace {

namespace fs = std::filesystem;

void write(const fs::path& p, const std::string& s) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << s << "\n";
}

// A powercap tree as Linux lays it out: every zone flat in the class folder.
fs::path fake_powercap(const std::string& tag) {
  const fs::path root =
      fs::path(testing::TempDir()) / ("pb_powercap_" + tag + "_" + std::to_string(::getpid()));
  fs::remove_all(root);
  write(root / "intel-rapl:0" / "name", "package-0");
  write(root / "intel-rapl:0" / "energy_uj", "1000000");
  write(root / "intel-rapl:0" / "max_energy_range_uj", "262143328850");
  write(root / "intel-rapl:0:0" / "name", "core");
  write(root / "intel-rapl:0:0" / "energy_uj", "5");
  write(root / "intel-rapl:0:1" / "name", "dram");
  write(root / "intel-rapl:0:1" / "energy_uj", "200000");
  write(root / "intel-rapl:0:1" / "max_energy_range_uj", "1000000");
  write(root / "intel-rapl" / "enabled", "1");  // the control type's own folder, not a zone
  return root;
}

TEST(MeterSmoke, RaplReadsPackageAndDramFromPowercap) {
  const fs::path root = fake_powercap("read");
  Rapl r(root.string());
  ASSERT_TRUE(r.available()) << r.why_not();
  EXPECT_EQ(r.zones(), "package-0,dram");  // core is inside the package: not counted twice
  const Rapl::Sample a = r.sample();
  write(root / "intel-rapl:0" / "energy_uj", "3500000");   // +2.5 J
  write(root / "intel-rapl:0:1" / "energy_uj", "100000");  // wrapped: +0.8 J + 0.1 J
  double pkg = 0, dram = 0;
  r.joules(a, r.sample(), &pkg, &dram);
  EXPECT_DOUBLE_EQ(pkg, 2.5);
  EXPECT_DOUBLE_EQ(dram, 0.9);
}

TEST(MeterSmoke, NoRaplSaysWhy) {
  Rapl none("/nonexistent/powercap");
  EXPECT_FALSE(none.available());
  EXPECT_NE(none.why_not().find("/nonexistent/powercap"), std::string::npos) << none.why_not();
  // A zone whose counter cannot be read (a folder where the file should be).
  const fs::path root = fake_powercap("unreadable");
  fs::remove(root / "intel-rapl:0" / "energy_uj");
  fs::create_directories(root / "intel-rapl:0" / "energy_uj");
  fs::remove_all(root / "intel-rapl:0:1");
  Rapl bad(root.string());
  EXPECT_FALSE(bad.available());
  EXPECT_NE(bad.why_not().find("energy_uj is not readable"), std::string::npos) << bad.why_not();
}

// The process's CPU seconds by another clock than the meter's getrusage.
double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

TEST(MeterSmoke, PeakMemoryAndUtilisationOfARegion) {
  Meter m(rss_baseline_bytes());
  const double cpu0 = process_cpu_seconds();
  const auto wall0 = std::chrono::steady_clock::now();
  m.start();
  {
    std::vector<char> big(200u << 20);
    std::memset(big.data(), 1, big.size());  // resident, not only reserved
    volatile char keep = big[12345];
    (void)keep;
  }
  const auto t0 = std::chrono::steady_clock::now();
  volatile double x = 0;
  while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(200)) x = x + 1;
  const MeterResult busy = m.stop(1);
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  const double expected = (process_cpu_seconds() - cpu0) / wall;
  ASSERT_GE(busy.peak_mb, 0) << "/proc/self/clear_refs not writable";
  EXPECT_GT(busy.peak_mb, 190);  // the 200 MiB that were resident during the region
  EXPECT_LT(busy.peak_mb, 400);
  // What the thread got of its core, as another clock saw it: not a fixed share, as a busy
  // thread beside ctest -j2's other test on 2 cores got 0.49 of one (CI on a Zen 3).
  EXPECT_NEAR(busy.utilisation, expected, 0.05);
  EXPECT_GT(busy.utilisation, 0.2);
  // A region that sleeps: little CPU, and the peak was reset (the 200 MiB are gone).
  Meter idle(rss_baseline_bytes());
  idle.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const MeterResult r = idle.stop(1);
  EXPECT_LT(r.utilisation, 0.2);
  EXPECT_LT(r.peak_mb, 50);
  // No RAPL here unless the machine has it: energy counters only when measured.
  for (const auto& [k, v] : meter_counters(r, 1, 1e9, 16)) {
    if (!r.energy) {
      EXPECT_TRUE(k == "cpu_util" || k == "peak_rss_MB") << k;
    }
  }
}

TEST(MeterSmoke, CountersFromMeasuredEnergy) {
  MeterResult m;
  m.wall_s = 2, m.energy = true, m.package_j = 90, m.dram_j = 10, m.utilisation = 0.5;
  std::map<std::string, double> c;
  for (const auto& [k, v] : meter_counters(m, 4, 5e9, 16)) c[k] = v;
  EXPECT_DOUBLE_EQ(c.at("watts"), 50);
  EXPECT_DOUBLE_EQ(c.at("J_per_iter"), 25);
  EXPECT_DOUBLE_EQ(c.at("items_per_J"), 16 * 4 / 100.0);
  EXPECT_DOUBLE_EQ(c.at("gflops_per_W"), 5.0 * 4 / 100);
  EXPECT_EQ(c.count("peak_rss_MB"), 0u);  // not measured (peak_mb -1)
}

// primbench net reports what it measured, and with a powercap tree the energy per step; the
// context names the energy source or why there is none.
TEST(MeterSmoke, NetworkReportsMeasuredMemoryAndEnergy) {
  const std::string json = testing::TempDir() + "pb_meter_net_" + std::to_string(::getpid());
  test::CliResult r = test::run_cli("net tiny_mlp --train --reps 3 --json " + json,
                                    "PRIMBENCH_POWERCAP_ROOT=/nonexistent");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("measured over 3 step(s): peak host memory"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("CPU utilisation"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("energy: no /nonexistent"), std::string::npos) << r.out;
  std::ifstream f(json);
  std::string j((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NE(j.find("\"cpu_util\":"), std::string::npos) << j;
  EXPECT_EQ(j.find("\"watts\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"energy\":\"unavailable: no /nonexistent"), std::string::npos) << j;

  // A fake tree: the counters do not move, so 0 J; the figures are reported all the same.
  const fs::path root = fake_powercap("net");
  r = test::run_cli("net tiny_mlp --reps 2 --json " + json,
                    "PRIMBENCH_POWERCAP_ROOT=" + root.string());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("J per step"), std::string::npos) << r.out;
  std::ifstream g(json);
  j.assign((std::istreambuf_iterator<char>(g)), std::istreambuf_iterator<char>());
  EXPECT_NE(j.find("\"watts\":0"), std::string::npos) << j;
  EXPECT_NE(j.find("\"energy\":\"rapl: package-0,dram\""), std::string::npos) << j;
}

}  // namespace
}  // namespace pb
