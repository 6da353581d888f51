// Machine and library facts for reports: CPU, measured peak and bandwidth, OpenCL device,
// library versions. Shared by the CLI (--json) and the benchmarks' JSON context.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace pb {

std::vector<std::pair<std::string, std::string>> environment_facts();
// The libraries' versions (OpenBLAS config, FFTW, CLBlast, oneDNN), without the machine probe.
std::vector<std::pair<std::string, std::string>> library_versions();
// A hash of the running binary (hex), so that caches of results expire with a rebuild.
const std::string& build_id();

}  // namespace pb
