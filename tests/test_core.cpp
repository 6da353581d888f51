// Unit tests of the core: comparison and mistrust, tensors, fills, data-set loader, npy, threads.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>

#include "kernels/core/amx.h"
#include "kernels/core/check.h"
#include "kernels/core/dataset.h"
#include "kernels/core/error.h"
#include "kernels/core/fill.h"
#include "kernels/core/io.h"
#include "kernels/core/machine.h"
#include "kernels/core/machine_dot.h"
#include "kernels/core/tensor.h"
#include "kernels/core/threads.h"

namespace pb {
namespace {

TEST(CheckSmoke, ExactPassAndOneUlpFail) {
  Comparator c;
  for (int i = 0; i < 100; ++i) c.add(i, i + 1, i + 1);
  CheckResult r = c.finish({0, "exact"}, false);
  EXPECT_TRUE(r.pass);
  EXPECT_EQ(r.l2_rel, 0);
  EXPECT_EQ(r.checked, 100);
  Comparator d;
  for (int i = 0; i < 100; ++i) d.add(i, i == 42 ? std::nextafter(43.f, 99.f) : i + 1, i + 1);
  CheckResult f = d.finish({0, "exact"}, false);
  EXPECT_FALSE(f.pass);
  EXPECT_EQ(f.worst_index, 42);
  EXPECT_GT(f.max_rel, 0);
}

TEST(CheckSmoke, NormwiseBoundAndNan) {
  Comparator c;
  for (int i = 0; i < 1000; ++i) c.add(i, 1.0 + 1e-7, 1.0);
  EXPECT_TRUE(c.finish({1e-6, ""}, false).pass);
  EXPECT_FALSE(c.finish({1e-8, ""}, false).pass);
  Comparator n;
  n.add(0, NAN, 1.0);
  n.add(1, 1.0, 1.0);
  CheckResult r = n.finish({1.0, "loose"}, false);
  EXPECT_FALSE(r.pass);
  EXPECT_TRUE(r.non_finite);
  EXPECT_EQ(r.worst_index, 0);
}

TEST(CheckSmoke, MostlyZerosIsMistrusted) {
  Comparator c;
  for (int i = 0; i < 1000; ++i) c.add(i, 0, i < 10 ? 1.0 : 0.0);  // a kernel writing zeros
  CheckResult r = c.finish({0.5, ""}, false);
  EXPECT_TRUE(r.mistrusted);
  EXPECT_NEAR(r.zero_frac, 0.99, 1e-9);
}

TEST(TensorSmoke, AlignedZeroedAndOverflowChecked) {
  Tensor t({3, 5, 7});
  EXPECT_EQ(t.size(), 105);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data()) % 64, 0u);
  for (int64_t i = 0; i < t.size(); ++i) ASSERT_EQ(t[i], 0.f);
  EXPECT_THROW(dims_product({int64_t(1) << 40, int64_t(1) << 40}), InputError);
  EXPECT_THROW(dims_product({4, -1}), InputError);
  EXPECT_THROW(check_fits_in_memory(1e18, "x"), InputError);
}

TEST(FillSmoke, DeterministicIntegersInRange) {
  Tensor a({1000}), b({1000});
  fill_int(a, 7, 3);
  set_threads(1);
  fill_int(b, 7, 3);
  set_threads(2);
  int seen[7] = {};
  for (int64_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i], b[i]);
    ASSERT_EQ(a[i], std::round(a[i]));
    ASSERT_GE(a[i], -3);
    ASSERT_LE(a[i], 3);
    seen[static_cast<int>(a[i]) + 3]++;
  }
  for (int v : seen) EXPECT_GT(v, 50);  // every value occurs
  EXPECT_EQ(exact_int_range(1000), 4);
  EXPECT_EQ(exact_int_range(26752), 4);
  EXPECT_LT(exact_int_range(1e6) * exact_int_range(1e6) * 1e6, 8388608.0);
}

TEST(DatasetSmoke, CommentsDefaultMarksAndQuotedHash) {
  std::string path = testing::TempDir() + "/pb_set.txt";
  std::ofstream(path) << "# header\n\n  m4n4k4  # [default] small\nm8n\"a#b\"  # named\n   \n";
  auto v = load_file(path, "tmp");
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].text, "m4n4k4");
  EXPECT_EQ(v[0].line, 3);
  EXPECT_TRUE(v[0].is_default());
  EXPECT_EQ(v[1].text, "m8n\"a#b\"");
  EXPECT_FALSE(v[1].is_default());
  EXPECT_THROW(load_set("gemm", "no_such_set"), InputError);
  EXPECT_FALSE(list_sets("gemm").empty());
}

TEST(IoSmoke, NpyHeaderIsWellFormed) {
  Tensor t({2, 3});
  std::string b = npy_bytes(t);
  ASSERT_GT(b.size(), 10u);
  EXPECT_EQ(b.substr(1, 5), "NUMPY");
  size_t hlen = static_cast<unsigned char>(b[8]) | (static_cast<unsigned char>(b[9]) << 8);
  EXPECT_EQ((10 + hlen) % 64, 0u);
  EXPECT_NE(b.find("'shape': (2, 3)"), std::string::npos);
  EXPECT_EQ(b.size(), 10 + hlen + 24);
  EXPECT_NE(npy_bytes(Tensor({5})).find("'shape': (5,)"), std::string::npos);
  EXPECT_EQ(json_str("a\"b\n"), "\"a\\\"b\\n\"");
  EXPECT_EQ(json_num(NAN), "null");
}

TEST(ThreadsSmoke, EnvironmentAndBadValues) {
  setenv("PRIMBENCH_THREADS", "1", 1);
  init_threads_from_env();
  EXPECT_EQ(threads(), 1);
  setenv("PRIMBENCH_THREADS", "zero", 1);
  EXPECT_THROW(init_threads_from_env(), InputError);
  setenv("PRIMBENCH_THREADS", "2", 1);
  init_threads_from_env();
  EXPECT_EQ(threads(), 2);
  unsetenv("PRIMBENCH_THREADS");
  EXPECT_THROW(set_threads(0), InputError);
}

TEST(MachineSmoke, ProbeIsPlausibleAndCached) {
  const MachineInfo& m = machine_info();
  EXPECT_GT(m.peak_flops, 1e9);  // any machine this runs on does > 1 GFLOP/s
  EXPECT_LT(m.peak_flops, 1e14);
  EXPECT_GT(m.triad_bytes, 1e8);
  EXPECT_EQ(&machine_info(), &m);  // measured once per thread count
}

// A probe is cached only when quiet: each of its noise checks alone refuses it, with the figure
// in the reason, and the FMA peak must scale with the cores the threads may use.
TEST(MachineSmoke, NoisyProbesAreNotCached) {
  MachineInfo q;
  q.threads = 2, q.cpu_share_pct = 100, q.peak_spread_pct = 1, q.triad_spread_pct = 5;
  q.scaling = 1.97, q.scaling_expected = 2;
  EXPECT_EQ(probe_noise(q), "");
  MachineInfo m = q;
  m.cpu_share_pct = 85;
  EXPECT_NE(probe_noise(m).find("got 85% of a CPU"), std::string::npos) << probe_noise(m);
  m = q, m.peak_spread_pct = 11;
  EXPECT_NE(probe_noise(m).find("FMA passes spread"), std::string::npos) << probe_noise(m);
  m = q, m.triad_spread_pct = 21;
  EXPECT_NE(probe_noise(m).find("triad passes spread"), std::string::npos) << probe_noise(m);
  // Two threads at one thread's rate: two virtual CPUs on one core (seen on this workplace's
  // Zen 5: fp32 237 GFLOP/s cached for 2 threads beside bf16 and u8s8 at the 2-thread rate, and
  // later bf16 and u8s8 at half theirs beside a full fp32 peak).
  m = q, m.scaling = 1.0;
  m.scaling_of = "u8s8 dot";
  EXPECT_NE(probe_noise(m).find("reached 1.00 times one thread's u8s8 dot rate, not about 2"),
            std::string::npos)
      << probe_noise(m);
  m = q, m.scaling = 1.75;  // 87.5% of 2: kept
  EXPECT_EQ(probe_noise(m), "");
  m = q, m.threads = 1, m.scaling = 1, m.scaling_expected = 1;
  EXPECT_EQ(probe_noise(m), "");
  // This process's own probe says how it scaled.
  const MachineInfo& p = machine_info();
  EXPECT_GE(p.scaling_expected, 1);
  EXPECT_LE(p.scaling_expected, p.threads);
  if (p.source == "measured" || p.source == "cached") {
    EXPECT_GE(p.scaling, 0.85 * p.scaling_expected) << p.source;
  }
}

// The reduced types' peaks are the probe's dot-product rates, where the CPU has the instruction,
// and peak_scale divides by them: never the ISA's ideal ratio, never for f32 or f16.
TEST(MachineSmoke, ReducedTypePeaksAreMeasured) {
  const MachineInfo& m = machine_info();
  EXPECT_EQ(m.bf16_ops > 0, probe::has_dot(probe::Dot::bf16));
  EXPECT_EQ(m.u8s8_ops > 0, probe::has_dot(probe::Dot::u8s8));
  EXPECT_EQ(peak_scale(DataType::parse("f32", "dt")), 1);
  EXPECT_EQ(peak_scale(DataType::parse("f16", "dt")), 1);
  EXPECT_EQ(peak_scale(DataType::parse("bf16", "dt")),
            m.bf16_ops > 0 ? m.bf16_ops / m.peak_flops : 1);
  EXPECT_EQ(peak_scale(DataType::parse("u8s8:s8", "dt")),
            m.u8s8_ops > 0 ? m.u8s8_ops / m.peak_flops : 1);
  // One pass of each: operations counted per instruction (bf16 64, u8s8 128 per zmm), so the
  // rate is of the order of the fp32 peak (0.1x .. 16x) on any CPU that has it. Where the probe
  // times AMX's tile products instead (16 x 16 x 32 bf16, x 64 u8s8 per instruction), the ISA's
  // ideal is 16x (bf16) and 32x (int8) the fp32 FMA rate, not 2x and 4x: the upper bound keeps
  // the same 4x margin over the ideal as VNNI's 16x over its 4x (one Xeon family 6 model 207
  // pass: u8s8 2.28 TOP/s on a thread, 17x its fp32 peak).
  for (probe::Dot k : {probe::Dot::bf16, probe::Dot::u8s8}) {
    if (!probe::has_dot(k)) continue;
    const bool tiles = amx::usable(k == probe::Dot::bf16 ? amx::Kind::bf16 : amx::Kind::int8);
    const double ideal = tiles ? (k == probe::Dot::bf16 ? 16 : 32) : 4;
    const double ops = probe::dot_pass(k, 1, probe::dot_iters(k) / 10).ops;
    EXPECT_GT(ops, 0.1 * m.peak_flops / m.threads);
    EXPECT_LT(ops, 4 * ideal * m.peak_flops / m.threads);
  }
}

}  // namespace
}  // namespace pb
