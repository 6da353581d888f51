// Test cases of the generic conformance test: every primitive x set (and tests/edge/<prim>.txt)
// x direction x implementation, with shapes scaled only where the reference would be too slow.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "kernels/core/impl.h"

namespace pb::test {

struct ConfCase {
  std::string prim, set, text, desc, tag, impl, label;
  Dir dir;
  int line;
  // Set when an earlier case lists the same problem (see conformance_cases): that case's name.
  // It checks the problem; this one skips, naming it.
  std::string same_as;
};

// Reference budget per case (FLOPs): ~30 ms of naive fp64 reference.
constexpr double kTestRefFlops = 3e7;

std::vector<ConfCase> conformance_cases();
std::string case_name(const ConfCase& c);  // gtest-safe: letters, digits, '_'
// gtest's printer: "<prim> <descriptor> <dir> <impl>" (shown by --gtest_list_tests).
void PrintTo(const ConfCase& c, std::ostream* os);

}  // namespace pb::test
