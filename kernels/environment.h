// Machine and library facts for reports: CPU, measured peak and bandwidth, OpenCL device,
// library versions. Shared by the CLI (--json) and the benchmarks' JSON context.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace pb {

std::vector<std::pair<std::string, std::string>> environment_facts();

}  // namespace pb
