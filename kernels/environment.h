// Machine, build and library facts for reports: where a result came from. Shared by the CLI
// (--json) and the benchmarks' JSON context.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace pb {

// Written by cmake/build_info.cmake on every build (build/generated/build_info.cpp).
struct BuildInfo {
  std::string commit;      // git commit of the source tree, "unknown" outside a git checkout
  std::string dirty;       // "1" when tracked files differed from the commit at build time, "0", ""
  std::string compiler;    // "GNU 12.2.0"
  std::string flags;       // the C++ flags of the build type plus primbench's compile options
  std::string build_type;  // "Release", ...
};
const BuildInfo& build_info();

// Every fact, in a fixed order: build, OS, CPU and topology, threads and affinity, the probe,
// libraries (and what they dispatch to), the OpenCL device, MPI. Keys are documented in
// README.md ("Provenance"). Measures the machine probe when it is not cached.
std::vector<std::pair<std::string, std::string>> environment_facts();
// The libraries' versions (OpenBLAS config, FFTW, CLBlast, oneDNN), without the machine probe.
std::vector<std::pair<std::string, std::string>> library_versions();
// A hash of the running binary (hex), so that caches of results expire with a rebuild.
const std::string& build_id();
// Validates the environment variables that pick code paths (PRIMBENCH_SIMD, PRIMBENCH_SGEMM),
// throwing InputError naming the variable. Every entry point calls it first, so that a bad
// value is a clear error there rather than an exception inside an OpenMP region.
void check_environment();
// What the percentages of implementation `impl` divide by: peak_pct by `flops` (fp32 FLOP/s,
// before the data type's peak_scale) and bw_pct by `bytes` (triad bytes/s). The machine probe's
// (machine.h), except for an OpenCL implementation ("ocl/...") whose device is not a CPU: there
// the device's own measured rates (ocl::device_rates()), with `device` set and `where` naming it.
// PoCL on this CPU runs on the host's cores, so its rows keep the host's rates.
struct PeakRates {
  double flops = 0, bytes = 0;
  bool device = false;
  std::string where;  // "host" or the OpenCL device's name
};
PeakRates peak_rates(const std::string& impl);
// The facts as one JSON object {"key":"value",...} (for the CLI's --json output).
std::string environment_json();

}  // namespace pb
