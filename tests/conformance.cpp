// Builds the conformance cases from the registries and data sets (see conformance.h).
#include "tests/conformance.h"

#include <cctype>

#include "kernels/core/dataset.h"
#include "kernels/core/problem.h"

#ifndef PRIMBENCH_EDGE_DIR
#define PRIMBENCH_EDGE_DIR "tests/edge"
#endif

namespace pb::test {

namespace {

std::vector<DataLine> edge_lines(const std::string& prim) {
  return load_file(std::string(PRIMBENCH_EDGE_DIR) + "/" + prim + ".txt", "edge");
}

}  // namespace

std::vector<ConfCase> conformance_cases() {
  std::vector<ConfCase> out;
  for (const PrimitiveInfo& p : primitives()) {
    std::vector<DataLine> lines = edge_lines(p.name);
    for (const auto& set : list_sets(p.name))
      for (auto& l : load_set(p.name, set)) lines.push_back(l);
    for (const DataLine& l : lines)
      for (Dir dir : p.dirs) {
        ConfCase c;
        c.prim = p.name;
        c.set = l.set;
        c.text = l.text;
        c.dir = dir;
        c.line = l.line;
        c.desc = p.shrink ? p.shrink(l.text, kTestRefFlops, &c.tag) : l.text;
        auto probe = p.make(c.desc, dir, 1);
        c.label = probe->name().empty() ? "line" + std::to_string(l.line) : probe->name();
        for (const auto& [impl, why] : p.impls()) {
          c.impl = impl;
          out.push_back(c);
        }
      }
  }
  return out;
}

std::string case_name(const ConfCase& c) {
  std::string s = c.prim + "__" + c.set + "__" + c.label + (c.tag.empty() ? "" : "__" + c.tag) +
                  "__" + dir_str(c.dir) + "__" + c.impl;
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

void PrintTo(const ConfCase& c, std::ostream* os) {
  *os << c.prim << " " << c.desc << " " << dir_str(c.dir) << " " << c.impl;
}

}  // namespace pb::test
