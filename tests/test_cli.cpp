// The CLI's contract: exit statuses 0/1/2/3, one-line errors naming the field, --json lines.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <unistd.h>
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>

#include "tests/cli_runner.h"

namespace pb::test {

CliResult run_cli(const std::string& args, const std::string& env) {
  std::string cmd = env + (env.empty() ? "" : " ") + PRIMBENCH_CLI_PATH + " " + args + " 2>&1";
  CliResult r;
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), f)) > 0) r.out.append(buf.data(), n);
  int st = pclose(f);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

namespace {

int lines(const std::string& s) {
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

TEST(CliSmoke, ListNamesPrimitivesImplsAndSets) {
  auto r = run_cli("list");
  EXPECT_EQ(r.status, 0) << r.out;
  for (const char* s : {"gemm", "cpu/openblas", "ocl/tiled", "deepbench_train", "square"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
}

TEST(CliSmoke, RunChecksAndPasses) {
  auto r = run_cli("run gemm m64n48k32_tn --impl cpu/openblas --check --reps 2");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("PASS"), std::string::npos) << r.out;
}

TEST(CliSmoke, BadInputExitsTwoWithOneLineNamingTheField) {
  struct Case {
    const char* args;
    const char* needle;
  } cases[] = {
      {"run gemm m0n4k4", "field m"},
      {"run gemm m4n4k4_tq", "tq"},
      {"run gemm m4n4k4 --impl cpu/nosuch", "cpu/nosuch"},
      {"run nosuch m4", "nosuch"},
      {"run gemm m4 --dir bwd_d", "dir"},
      {"run gemm m4 --dir sideways", "sideways"},
      {"run gemm m4 --reps x", "--reps"},
      {"run gemm m4 --threads 0", "--threads"},
      {"run gemm m4 --bogus", "--bogus"},
      {"run gemm", "usage"},
      {"frobnicate", "frobnicate"},
      {"run gemm m4dt=bf8", "field dt"},
      {"run conv mb2ic3ih5oc4kh3dt=u8s8:bf16", "field dt"},
      {"run conv mb2ic3ih5oc4kh3dt=int4", "field dt"},
  };
  for (const auto& c : cases) {
    auto r = run_cli(c.args);
    EXPECT_EQ(r.status, 2) << c.args << ": " << r.out;
    EXPECT_EQ(lines(r.out), 1) << c.args << ": " << r.out;
    EXPECT_NE(r.out.find(c.needle), std::string::npos) << c.args << ": " << r.out;
  }
  auto env = run_cli("run gemm m4 --impl cpu/openblas", "PRIMBENCH_THREADS=-2");
  EXPECT_EQ(env.status, 2) << env.out;
  EXPECT_NE(env.out.find("PRIMBENCH_THREADS"), std::string::npos) << env.out;
}

// A reduced data type no implementation runs in that direction is "unsupported" (exit 3), with
// the reason: u8s8 is inference.
TEST(CliSmoke, TypedConvBackwardIsUnsupported) {
  auto r = run_cli("run conv mb2ic3ih5oc4kh3dt=u8s8 --dir bwd_d --impl all");
  EXPECT_EQ(r.status, 3) << r.out;
  EXPECT_NE(r.out.find("u8s8 is inference"), std::string::npos) << r.out;
}

TEST(CliSmoke, FailedCheckExitsOne) {
  auto r = run_cli("run gemm m32 --impl cpu/openblas --check --reps 1",
                   "PRIMBENCH_INJECT_ERROR=cpu/openblas");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("FAIL"), std::string::npos) << r.out;
  auto j = run_cli("run gemm m32 --impl all --check --reps 1 --json",
                   "PRIMBENCH_INJECT_ERROR=cpu/transpose_nn");
  EXPECT_EQ(j.status, 1) << j.out;
  EXPECT_NE(j.out.find("\"impl\":\"cpu/"
                       "transpose_nn\",\"desc\":\"m32n32k32\",\"dir\":\"fwd\",\"status\":\"fail\""),
            std::string::npos)
      << j.out;
  EXPECT_NE(
      j.out.find(
          "\"impl\":\"cpu/openblas\",\"desc\":\"m32n32k32\",\"dir\":\"fwd\",\"status\":\"pass\""),
      std::string::npos)
      << j.out;
}

TEST(CliSmoke, UnavailableImplExitsThree) {
  auto r = run_cli("run gemm m16 --impl ocl/tiled --check", "PRIMBENCH_OPENCL_DEVICE=nonexistent");
  EXPECT_EQ(r.status, 3) << r.out;
  EXPECT_NE(r.out.find("unsupported"), std::string::npos) << r.out;
  // --impl all lists it as unsupported with the reason but still passes on the others.
  auto all =
      run_cli("run gemm m16 --impl all --check --json", "PRIMBENCH_OPENCL_DEVICE=nonexistent");
  EXPECT_EQ(all.status, 0) << all.out;
  EXPECT_NE(all.out.find("\"impl\":\"ocl/tiled\""), std::string::npos) << all.out;
  EXPECT_NE(all.out.find("\"status\":\"unsupported\",\"reason\":"), std::string::npos) << all.out;
}

TEST(CliSmoke, JsonHasEveryField) {
  auto r = run_cli("run gemm m40n30k20_nt --impl cpu/openblas --check --json --reps 2");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(lines(r.out), 1) << r.out;
  for (const char* k : {"\"impl\":", "\"desc\":", "\"dir\":", "\"status\":\"pass\"",
                        "\"time_ms\":", "\"gflops\":", "\"peak_pct\":", "\"err_l2\":0",
                        "\"max_abs_err\":0", "\"max_rel_err\":0", "\"prep_ms\":"})
    EXPECT_NE(r.out.find(k), std::string::npos) << k << " in " << r.out;
  auto u = run_cli("run gemm m40 --impl cpu/openblas --json --reps 1");
  EXPECT_NE(u.out.find("\"status\":\"unchecked\""), std::string::npos) << u.out;
}

}  // namespace
}  // namespace pb::test

namespace pb::test {
namespace {

// The on-disk binary cache: a second process finds the program built by the first one.
TEST(CliSmoke, SecondProcessHitsTheOpenclBinaryCache) {
  std::string dir = testing::TempDir() + "/pb_cl_cache_" + std::to_string(::getpid());
  std::string env = "PRIMBENCH_CL_CACHE=" + dir;
  auto first = run_cli("run gemm m33n17k9_tn --impl ocl/tiled --check --json --reps 1", env);
  if (first.status == 3) GTEST_SKIP() << "no OpenCL device: " << first.out;
  ASSERT_EQ(first.status, 0) << first.out;
  EXPECT_NE(first.out.find("\"cache_hit\":0"), std::string::npos) << first.out;
  auto second = run_cli("run gemm m33n17k9_tn --impl ocl/tiled --check --json --reps 1", env);
  ASSERT_EQ(second.status, 0) << second.out;
  EXPECT_NE(second.out.find("\"cache_hit\":1"), std::string::npos) << second.out;
  std::system(("rm -rf '" + dir + "'").c_str());
}

}  // namespace
}  // namespace pb::test

namespace pb::test {
namespace {

// The value of "key":"value" in a --json line ("" when absent).
std::string json_field(const std::string& out, const std::string& key) {
  const std::string k = "\"" + key + "\":\"";
  size_t p = out.find(k);
  if (p == std::string::npos) return "";
  p += k.size();
  return out.substr(p, out.find('"', p) - p);
}

// Issue 17: every result says where it came from.
TEST(CliSmoke, JsonCarriesProvenance) {
  auto r = run_cli("run gemm m40n30k20 --impl cpu/openblas --json --reps 1",
                   "PRIMBENCH_CPU_MODEL='Fake CPU 9000'");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(json_field(r.out, "cpu_model"), "Fake CPU 9000") << r.out;
  const std::string commit = json_field(r.out, "primbench_commit");
  EXPECT_TRUE(
      commit == "unknown" ||
      (commit.size() == 40 && commit.find_first_not_of("0123456789abcdef") == std::string::npos))
      << commit;
  EXPECT_NE(json_field(r.out, "primbench_dirty"), "") << r.out;
  EXPECT_NE(json_field(r.out, "compiler"), "") << r.out;
  EXPECT_NE(json_field(r.out, "cxx_flags").find("-O"), std::string::npos) << r.out;
  EXPECT_NE(json_field(r.out, "os"), "") << r.out;
  EXPECT_EQ(json_field(r.out, "kernel").rfind("Linux ", 0), 0u) << r.out;
  EXPECT_GT(std::atof(json_field(r.out, "ram_gb").c_str()), 0) << r.out;
  EXPECT_GE(std::atoi(json_field(r.out, "cores").c_str()), 1) << r.out;
  EXPECT_GE(std::atoi(json_field(r.out, "hw_threads").c_str()),
            std::atoi(json_field(r.out, "cores").c_str()))
      << r.out;
  EXPECT_NE(json_field(r.out, "affinity"), "") << r.out;
  EXPECT_NE(json_field(r.out, "cpu_best_isa"), "") << r.out;
  EXPECT_NE(json_field(r.out, "openblas_core"), "") << r.out;
  EXPECT_NE(json_field(r.out, "fftw"), "") << r.out;
  EXPECT_NE(r.out.find("\"peak_spread_pct\":\""), std::string::npos) << r.out;
  // The reduced types' dot-product rates, measured where the CPU has the instruction.
  for (const char* k : {"peak_gops_bf16", "peak_gops_u8s8"})
    EXPECT_NE(json_field(r.out, k), "") << k << " in " << r.out;
  if (__builtin_cpu_supports("avx512bf16")) {
    EXPECT_GT(std::atof(json_field(r.out, "peak_gops_bf16").c_str()), 0) << r.out;
  }
  if (__builtin_cpu_supports("avx512vnni")) {
    EXPECT_GT(std::atof(json_field(r.out, "peak_gops_u8s8").c_str()), 0) << r.out;
  }
  EXPECT_NE(json_field(r.out, "probe"), "") << r.out;
  // The ISA list is read from the CPU, not invented: AVX2 is listed exactly when cpuinfo has it.
  FILE* f = std::fopen("/proc/cpuinfo", "r");
  ASSERT_NE(f, nullptr);
  std::string cpuinfo;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) cpuinfo.append(buf.data(), n);
  std::fclose(f);
  const bool avx2 = cpuinfo.find(" avx2 ") != std::string::npos;
  const std::string isa = "," + json_field(r.out, "cpu_isa") + ",";
  EXPECT_EQ(isa.find(",avx2,") != std::string::npos, avx2) << isa;
#ifdef PRIMBENCH_HAVE_ONEDNN
  EXPECT_NE(json_field(r.out, "onednn_isa"), "") << r.out;
#endif
}

// The machine probe is cached per machine, thread count and build; PRIMBENCH_PROBE=measure
// measures again; another CPU model or thread count is another entry; bad values are refused.
TEST(CliSmoke, ProbeIsCachedPerMachineAndThreads) {
  const std::string dir = testing::TempDir() + "/pb_probe_" + std::to_string(::getpid());
  const std::string env = "PRIMBENCH_PROBE_CACHE=" + dir;
  const std::string cmd = "run gemm m8 --impl cpu/openblas --json --reps 1 --threads 1";
  auto first = run_cli(cmd, env + " PRIMBENCH_PROBE=measure");
  ASSERT_EQ(first.status, 0) << first.out;
  const std::string source = json_field(first.out, "probe");
  if (source != "measured") {
    EXPECT_EQ(source.rfind("measured, not cached: ", 0), 0u) << source;
    std::system(("rm -rf '" + dir + "'").c_str());
    GTEST_SKIP() << "the machine was too busy to cache a probe: " << source;
  }
  auto second = run_cli(cmd, env);
  ASSERT_EQ(second.status, 0) << second.out;
  EXPECT_EQ(json_field(second.out, "probe"), "cached") << second.out;
  EXPECT_EQ(json_field(second.out, "peak_gflops"), json_field(first.out, "peak_gflops"));
  EXPECT_EQ(json_field(second.out, "triad_gbs"), json_field(first.out, "triad_gbs"));
  auto other_cpu = run_cli(cmd, env + " PRIMBENCH_CPU_MODEL=other");
  EXPECT_NE(json_field(other_cpu.out, "probe"), "cached") << other_cpu.out;
  auto two = run_cli("run gemm m8 --impl cpu/openblas --json --reps 1 --threads 2", env);
  EXPECT_NE(json_field(two.out, "probe"), "cached") << two.out;
  auto again = run_cli(cmd, env + " PRIMBENCH_PROBE=measure");
  EXPECT_NE(json_field(again.out, "probe"), "cached") << again.out;
  auto bad = run_cli(cmd, env + " PRIMBENCH_PROBE=sometimes");
  EXPECT_EQ(bad.status, 2) << bad.out;
  EXPECT_NE(bad.out.find("PRIMBENCH_PROBE"), std::string::npos) << bad.out;
  std::system(("rm -rf '" + dir + "'").c_str());
}

}  // namespace
}  // namespace pb::test

namespace pb::test {
namespace {

// The variables that pick code paths are checked at entry: a bad value is one line naming the
// variable and exit 2, never an exception inside an OpenMP region (which aborts).
TEST(CliSmoke, BadCodePathVariablesExitTwo) {
  for (const char* env :
       {"PRIMBENCH_SGEMM=mkl", "PRIMBENCH_SIMD=avx1024", "PRIMBENCH_OCL_FP64=2"}) {
#ifndef PRIMBENCH_HAVE_OPENCL
    if (std::string(env).rfind("PRIMBENCH_OCL", 0) == 0) continue;
#endif
    const std::string var = std::string(env).substr(0, std::string(env).find('='));
    for (const char* args : {"run conv mb2ic3ih8oc4kh3 --impl cpu/im2col",
                             "run act mb2ic3ih8_sigmoid --impl cpu/native", "net tiny_mlp"}) {
      auto r = run_cli(args, env);
      EXPECT_EQ(r.status, 2) << env << " " << args << ": " << r.out;
      EXPECT_EQ(lines(r.out), 1) << r.out;
      EXPECT_NE(r.out.find(var + ": "), std::string::npos) << r.out;
    }
  }
  auto ok = run_cli("run gemm m20n10k30 --impl all --check", "PRIMBENCH_SGEMM=openblas");
  EXPECT_EQ(ok.status, 0) << ok.out;
}

// A shape within the descriptor limits that the memory available cannot hold (here: an address
// space capped at 3 GB, the GEMM needs 4.8 GB): one line naming the allocation, exit 4, no abort.
TEST(CliSmoke, OutOfMemoryIsAnErrorNotACrash) {
#ifdef PRIMBENCH_SANITIZED
  GTEST_SKIP() << "the sanitizers reserve terabytes of address space: no ulimit -v under them";
#endif
  auto r = run_cli("run gemm m20000n20000k20000 --impl cpu/packed --reps 1", "ulimit -v 3000000;");
  EXPECT_EQ(r.status, 4) << r.out;
  EXPECT_NE(r.out.find("primbench: error: out of memory allocating 1600000000 bytes"),
            std::string::npos)
      << r.out;
}

// An allocation that fails inside an OpenMP parallel region (the per-thread scratch cpu/packed
// grows there, injected with PRIMBENCH_INJECT_BAD_ALLOC=scratch) is the implementation's error
// row and exit 1, as any run-time failure, not std::terminate: the packed loop nests in fp32 and
// in the reduced types, and the in-place path for few columns. Two threads, so the regions are
// real.
TEST(CliSmoke, OutOfMemoryInAParallelRegionIsAnError) {
  // The GEMMs themselves, and cpu/im2col's chunks, each a single-threaded GEMM inside the
  // chunk loop's own region (forward, and the backward-weights reduction with its barrier).
  for (const char* run :
       {"gemm m512n512k256 --impl cpu/packed", "gemm m512n512k256_dt=bf16 --impl cpu/packed",
        "gemm m512n512k256_dt=u8s8 --impl cpu/packed", "gemm m512n16k256_dt=u8s8 --impl cpu/packed",
        "gemm m512n16k256_dt=bf16 --impl cpu/packed",
        "conv mb4ic64ih28oc64kh3ph1 --impl cpu/im2col",
        "conv mb4ic64ih28oc64kh3ph1 --dir bwd_w --impl cpu/im2col"}) {
    auto r = run_cli(std::string("run ") + run + " --reps 1 --threads 2",
                     "PRIMBENCH_INJECT_BAD_ALLOC=scratch");
    if (r.out.find("unsupported") != std::string::npos) continue;  // no AVX-512 BF16/VNNI
    EXPECT_EQ(r.status, 1) << run << ": " << r.out;
    EXPECT_NE(r.out.find("error: out of memory in a parallel region"), std::string::npos)
        << run << ": " << r.out;
  }
  auto bad = run_cli("run gemm m8 --impl cpu/packed --reps 1", "PRIMBENCH_INJECT_BAD_ALLOC=disk");
  EXPECT_EQ(bad.status, 2) << bad.out;
  EXPECT_NE(bad.out.find("PRIMBENCH_INJECT_BAD_ALLOC"), std::string::npos) << bad.out;
}

// A problem larger than the memory available now (MemAvailable, a fake meminfo here) is a one-line
// error naming both sizes before anything is allocated (exit 4); the same problem runs when the
// memory is there.
TEST(CliSmoke, ProblemOverAvailableMemoryIsRefused) {
  const std::string dir = ::testing::TempDir();
  for (const char* kb : {"10000", "100000000"}) {
    const std::string f = dir + "/meminfo_" + kb;
    std::FILE* out = std::fopen(f.c_str(), "w");
    ASSERT_NE(out, nullptr);
    std::fprintf(
        out, "MemTotal:       200000000 kB\nMemFree:          5000 kB\nMemAvailable: %s kB\n", kb);
    std::fclose(out);
    auto r = run_cli("run gemm m2048 --impl cpu/packed --reps 1", "PRIMBENCH_MEMINFO=" + f);
    if (std::string(kb) == "10000") {
      EXPECT_EQ(r.status, 4) << r.out;
      EXPECT_NE(r.out.find("primbench: error: gemm m2048n2048k2048 fwd needs 67 MB, but this "
                           "machine has 10 MB available (MemAvailable)"),
                std::string::npos)
          << r.out;
    } else {
      EXPECT_EQ(r.status, 0) << r.out;
    }
  }
}

// PRIMBENCH_MAX_WORKSPACE_MB skips an implementation whose planned workspace is over it, with
// the reason (exit 3 when it was the one asked for); a bad value exits 2 naming it.
TEST(CliSmoke, WorkspaceOverTheCapIsUnsupported) {
  auto r = run_cli("run conv mb2ic64ih56oc64kh3ph1 --impl cpu/fft --reps 1",
                   "PRIMBENCH_MAX_WORKSPACE_MB=0.001");
  EXPECT_EQ(r.status, 3) << r.out;
  EXPECT_NE(r.out.find("workspace of"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("is over PRIMBENCH_MAX_WORKSPACE_MB=0.001"), std::string::npos) << r.out;
  auto ok = run_cli("run conv mb2ic64ih56oc64kh3ph1 --impl cpu/fft --reps 1",
                    "PRIMBENCH_MAX_WORKSPACE_MB=100000");
  EXPECT_EQ(ok.status, 0) << ok.out;
  // A network's search skips such candidates; with none left, the layer is named.
  auto net = run_cli("net tiny_resnet --backend cpu --policy best --find-cache off",
                     "PRIMBENCH_MAX_WORKSPACE_MB=0.00001");
  EXPECT_EQ(net.status, 3) << net.out;
  EXPECT_NE(net.out.find("conv1 fwd: cpu/direct's workspace of"), std::string::npos) << net.out;
  // `first` takes the next candidate that plans, said as a fallback. (At this cap cpu/direct's
  // workspace on res3a_proj, 0.0205 MB, is over it and cpu/im2col's is not.)
  auto first = run_cli("net tiny_resnet --backend cpu --policy first --reps 1",
                       "PRIMBENCH_MAX_WORKSPACE_MB=0.02");
  EXPECT_EQ(first.status, 0) << first.out;
  EXPECT_NE(first.out.find("fallback: refused at plan (cpu/direct's workspace of"),
            std::string::npos)
      << first.out;
  EXPECT_EQ(first.out.find(" 0 fallback(s)"), std::string::npos) << first.out;
  auto bad = run_cli("run gemm m8 --impl cpu/packed --reps 1", "PRIMBENCH_MAX_WORKSPACE_MB=lots");
  EXPECT_EQ(bad.status, 2) << bad.out;
  EXPECT_NE(bad.out.find("PRIMBENCH_MAX_WORKSPACE_MB"), std::string::npos) << bad.out;
}

}  // namespace
}  // namespace pb::test
