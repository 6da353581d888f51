// With PRIMBENCH_OPENCL_DEVICE=nonexistent (set by ctest), OpenCL implementations must report
// themselves unavailable for that reason, and host ones must still run.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "kernels/availability.h"
#include "kernels/core/dataset.h"
#include "kernels/core/problem.h"

namespace pb {
namespace {

TEST(OpenclAbsentSmoke, OpenclSkipsCpuRuns) {
  const char* env = std::getenv("PRIMBENCH_OPENCL_DEVICE");
  if (!env || std::string(env) != "nonexistent")
    GTEST_SKIP() << "runs under ctest with PRIMBENCH_OPENCL_DEVICE=nonexistent";
  std::string why = opencl_unavailable();
  EXPECT_FALSE(why.empty());
  for (const PrimitiveInfo& p : primitives()) {
    // Every primitive has edge cases (tests/edge/<prim>.txt); the first serves as an example.
    auto lines = load_file(std::string(PRIMBENCH_EDGE_DIR) + "/" + p.name + ".txt", "edge");
    ASSERT_FALSE(lines.empty()) << "no tests/edge/" << p.name << ".txt";
    auto prob = p.make(lines.front().text, p.dirs.front(), 1);
    int host_ran = 0;  // cpu/, mpi/, onednn/ implementations
    for (const auto& [impl, na] : p.impls()) {
      std::string reason;
      auto r = prob->runner(impl, &reason);
      if (impl.rfind("ocl/", 0) == 0) {
        EXPECT_EQ(r, nullptr) << impl;
        EXPECT_NE(reason.find(why), std::string::npos)
            << impl << ": refused for '" << reason << "', not for the missing device";
      } else if (r) {
        ++host_ran;
      }
    }
    EXPECT_GT(host_ran, 0) << p.name << ": no host implementation runs " << lines.front().text;
  }
}

}  // namespace
}  // namespace pb
