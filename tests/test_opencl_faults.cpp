// Injected OpenCL faults, each ending in a clear error (or, for the cache, a warning) and nothing
// half-written: no platform, a device that does not exist, a program that fails to build (its
// build log shown), a buffer over the device's largest allocation, corrupt and truncated files in
// the binary cache (rebuilt, never loaded), an unwritable cache folder.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "kernels/availability.h"
#include "kernels/core/machine.h"
#include "kernels/environment.h"
#include "tests/cli_runner.h"
#ifdef PRIMBENCH_HAVE_OPENCL
#include "kernels/core/error.h"
#include "kernels/gemm/opencl/tiled_params.h"
#include "kernels/opencl/runtime.h"
#endif

namespace pb {
namespace {

namespace fs = std::filesystem;
using test::run_cli;

const char* kRun = "run act mb2ic5ih3_relu --impl ocl/native --check --reps 1";

#define SKIP_WITHOUT_OPENCL()                                           \
  do {                                                                  \
    const std::string why = opencl_unavailable();                       \
    if (!why.empty()) GTEST_SKIP() << "no OpenCL device here: " << why; \
  } while (0)

fs::path fresh_dir(const std::string& what) {
  fs::path d =
      fs::temp_directory_path() / ("pb_oclfault_" + what + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::vector<fs::path> binaries(const fs::path& dir) {
  std::vector<fs::path> v;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".bin") v.push_back(e.path());
  return v;
}

// The one-line reason of a refused implementation: "unsupported: ..." and exit 3.
TEST(OpenclFaultSmoke, NoPlatformIsAReasonNotACrash) {
  const fs::path empty = fresh_dir("icd");
  auto r = run_cli(kRun, "OCL_ICD_VENDORS=" + empty.string() + " OCL_ICD_FILENAMES=");
  EXPECT_EQ(r.status, 3) << r.out;
  EXPECT_NE(r.out.find("unsupported"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("OpenCL"), std::string::npos) << r.out;
  fs::remove_all(empty);
}

TEST(OpenclFaultSmoke, UnknownDeviceIsNamed) {
  SKIP_WITHOUT_OPENCL();
  auto r = run_cli(kRun, "PRIMBENCH_OPENCL_DEVICE=no_such_gpu_42");
  EXPECT_EQ(r.status, 3) << r.out;
  EXPECT_NE(r.out.find("no_such_gpu_42"), std::string::npos) << r.out;
}

// The tiled GEMM's default tiles take 64 KiB of local memory; NVIDIA's OpenCL has 48 KiB (an
// H200 refused ocl/tiled and every convolution built on it). Without a TSK of the caller's, TSK
// is halved until the tiles fit; a TSK the caller chose is kept (and refused where it does not
// fit), and the halved tiles compute the same results.
TEST(OpenclFaultSmoke, TiledGemmFitsTheDeviceLocalMemory) {
  const TiledParams def;
  EXPECT_EQ(def.local_bytes(), 65536u);
  EXPECT_EQ(def.fitted(65536).tsk, def.tsk);
  const TiledParams nv = def.fitted(49152);
  EXPECT_LE(nv.local_bytes(), 49152u);
  EXPECT_EQ(nv.tsk, 64);
  EXPECT_EQ(def.fitted(1024).tsk, def.vw) << "no smaller than a vector";
  TiledParams mine = def;
  mine.tsk_set = true;
  EXPECT_EQ(mine.fitted(49152).tsk, def.tsk);
  SKIP_WITHOUT_OPENCL();
  for (const char* run : {"run gemm m100n70k300_tn --impl ocl/tiled --check",
                          "run conv mb2ic24ih13oc20kh3ph1 --impl ocl/im2col --check",
                          "run conv mb2ic24ih13oc20kh3ph1 --impl ocl/winograd_f2 --check"}) {
    auto r = run_cli(run, "PRIMBENCH_OCL_TILED=TSK=64");
    EXPECT_EQ(r.status, 0) << run << "\n" << r.out;
    EXPECT_NE(r.out.find("PASS"), std::string::npos) << run << "\n" << r.out;
  }
}

// A corrupt or truncated cached binary is removed and rebuilt from source; the run checks out.
TEST(OpenclFaultSmoke, CorruptAndTruncatedCacheFilesAreRebuilt) {
  SKIP_WITHOUT_OPENCL();
  const fs::path dir = fresh_dir("cache");
  const std::string env = "PRIMBENCH_CL_CACHE=" + dir.string();
  auto first = run_cli(kRun, env);
  ASSERT_EQ(first.status, 0) << first.out;
  std::vector<fs::path> bins = binaries(dir);
  ASSERT_FALSE(bins.empty()) << "the first run cached no binary in " << dir;
  std::vector<uintmax_t> good_sizes;
  for (size_t i = 0; i < bins.size(); ++i) {
    good_sizes.push_back(fs::file_size(bins[i]));
    if (i % 2 == 0) {
      std::ofstream(bins[i], std::ios::binary | std::ios::trunc) << "garbage, not a PoCL binary";
    } else {
      fs::resize_file(bins[i], good_sizes[i] / 2);
    }
  }
  auto second = run_cli(kRun, env);
  EXPECT_EQ(second.status, 0) << second.out;
  EXPECT_NE(second.out.find("cache_hit=0"), std::string::npos)
      << "a damaged cache file was loaded, not rebuilt:\n"
      << second.out;
  // Rewritten whole (PoCL's binaries differ in size from build to build; the damaged ones were
  // 27 bytes or half the size): the third run loads them.
  for (size_t i = 0; i < bins.size(); ++i)
    EXPECT_GT(fs::file_size(bins[i]), good_sizes[i] * 3 / 4) << bins[i] << " was not rewritten";
  auto third = run_cli(kRun, env);
  EXPECT_EQ(third.status, 0) << third.out;
  EXPECT_NE(third.out.find("cache_hit=1"), std::string::npos) << third.out;
  fs::remove_all(dir);
}

// A cache folder that cannot be created: one warning, and the run goes on without the cache.
TEST(OpenclFaultSmoke, UnwritableCacheWarnsAndRuns) {
  SKIP_WITHOUT_OPENCL();
  const fs::path dir = fresh_dir("rocache");
  std::ofstream(dir / "a_file") << "x";  // a folder under a regular file cannot exist, even as root
  auto r = run_cli(kRun, "PRIMBENCH_CL_CACHE=" + (dir / "a_file" / "cl").string());
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("warning: cannot write the OpenCL binary cache"), std::string::npos)
      << r.out;
  fs::remove_all(dir);
}

#ifdef PRIMBENCH_HAVE_OPENCL
// A program that does not compile: an error naming the program and carrying the compiler's log.
TEST(OpenclFaultSmoke, FailedBuildShowsTheBuildLog) {
  SKIP_WITHOUT_OPENCL();
  ASSERT_FALSE(ocl::embedded_sources().empty());
  const std::string key = ocl::embedded_sources().begin()->first;
  try {
    ocl::program(key, "-Dfloat=pb_no_such_type");
    FAIL() << key << " built with float undefined";
  } catch (const RuntimeError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("clBuildProgram failed for " + key), std::string::npos) << what;
    EXPECT_NE(what.find("pb_no_such_type"), std::string::npos) << "no build log in: " << what;
  }
}

// A buffer over CL_DEVICE_MAX_MEM_ALLOC_SIZE is refused with both sizes, before the driver.
TEST(OpenclFaultSmoke, BufferOverTheLargestAllocationIsUnsupported) {
  SKIP_WITHOUT_OPENCL();
  const cl_ulong max = ocl::device_info().max_mem_alloc_size;
  ASSERT_GT(max, 0u);
  try {
    ocl::Buffer b(static_cast<size_t>(max) + 1);
    FAIL() << "a buffer of max + 1 bytes was created";
  } catch (const Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("CL_DEVICE_MAX_MEM_ALLOC_SIZE"), std::string::npos)
        << e.what();
  }
  ocl::Buffer fits(1 << 20);  // and the device still works afterwards
  EXPECT_EQ(fits.bytes(), size_t(1) << 20);
}

// A launch whose work-group is over what the device allows the kernel: Unsupported naming the
// kernel and the limit, before the driver's bare CL_INVALID_WORK_GROUP_SIZE.
TEST(OpenclFaultSmoke, WorkGroupOverTheKernelLimitIsUnsupported) {
  SKIP_WITHOUT_OPENCL();
  cl_program p = ocl::program("act/native.cl", "-DFUNC=0");
  ocl::Kernel k(p, "eltwise_fwd");
  size_t limit = 0;
  ASSERT_EQ(clGetKernelWorkGroupInfo(k.get(), ocl::device(), CL_KERNEL_WORK_GROUP_SIZE,
                                     sizeof(limit), &limit, nullptr),
            CL_SUCCESS);
  const size_t local[2] = {limit, 2}, global[2] = {limit, 2};
  try {
    k.enqueue(2, global, local);
    FAIL() << "a work-group of " << 2 * limit << " work-items was enqueued";
  } catch (const Unsupported& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("kernel eltwise_fwd"), std::string::npos) << what;
    EXPECT_NE(what.find("CL_KERNEL_WORK_GROUP_SIZE"), std::string::npos) << what;
  }
}

// The device's own probe (the rates an OpenCL row's peak_pct and bw_pct divide by on a GPU)
// measures what it claims: on PoCL, which runs on the host's cores, its FMA rate cannot exceed
// the host's measured peak by much (a miscount of the chains or of the FLOPs per FMA would), and
// the rows there keep the host's rates; on a GPU the OpenCL rows divide by the device's.
TEST(OpenclProbe, DeviceRatesAreMeasuredAndUsedOnlyOffTheCpu) {
  SKIP_WITHOUT_OPENCL();
  const ocl::DeviceRates r = ocl::measure_device_rates(size_t(1) << 20);
  EXPECT_GT(r.flops, 1e8);
  EXPECT_GT(r.bytes, 1e7);
  const MachineInfo& host = machine_info();
  const bool cpu = (ocl::device_info().type & CL_DEVICE_TYPE_CPU) != 0;
  if (cpu) {
    EXPECT_LT(r.flops, 1.5 * host.peak_flops) << "the same cores cannot beat the host";
  }
  const PeakRates ocl_rates = peak_rates("ocl/tiled"), cpu_rates = peak_rates("cpu/packed");
  EXPECT_FALSE(cpu_rates.device);
  EXPECT_EQ(cpu_rates.flops, host.peak_flops);
  EXPECT_EQ(cpu_rates.bytes, host.triad_bytes);
  EXPECT_EQ(ocl_rates.device, !cpu);
  if (cpu) {
    EXPECT_EQ(ocl_rates.flops, host.peak_flops);
  } else {
    EXPECT_EQ(ocl_rates.flops, ocl::device_rates().flops);
    EXPECT_EQ(ocl_rates.where, ocl::device_info().name);
  }
  // The CLI row says which peak it divided by: the device's rate only off the CPU.
  const auto res = run_cli("run gemm m64n64k64 --impl ocl/tiled --reps 1 --json");
  ASSERT_EQ(res.status, 0) << res.out;
  EXPECT_EQ(res.out.find("device_peak_gflops") != std::string::npos, !cpu) << res.out;
  EXPECT_NE(res.out.find(cpu ? "\"opencl_peak_gflops\":\"host\"" : "\"opencl_peak_gflops\""),
            std::string::npos)
      << res.out;
}
#endif

}  // namespace
}  // namespace pb
