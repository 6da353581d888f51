// Builds the conformance cases from the registries and data sets (see conformance.h).
#include "tests/conformance.h"

#include <cctype>
#include <map>

#include "kernels/core/dataset.h"
#include "kernels/core/grammar.h"
#include "kernels/core/problem.h"

#ifndef PRIMBENCH_EDGE_DIR
#define PRIMBENCH_EDGE_DIR "tests/edge"
#endif

namespace pb::test {

namespace {

std::vector<DataLine> edge_lines(const std::string& prim) {
  return load_file(std::string(PRIMBENCH_EDGE_DIR) + "/" + prim + ".txt", "edge");
}

// A descriptor's tokens as written, but for its name (the quoted n"..." string; gemm's n is an
// integer field).
std::string without_name(const std::string& desc, const std::string& prim) {
  std::string s;
  for (const Token& t : tokenize(desc, prim + " descriptor"))
    if (t.key != "n" || t.kind != Token::kString) s += t.text + "_";
  return s;
}

}  // namespace

std::vector<ConfCase> conformance_cases() {
  std::vector<ConfCase> out;
  // A line whose descriptor (after the shrink) equals one listed before, but for its name, is
  // the same problem on the same inputs (seed 1; the name is only a label, make_inputs never
  // reads it): it is checked once, under the first line (edge cases first, then the sets in
  // order), and its own cases skip naming that one. Shrunk to mb 2 and about 3e7 flops, the
  // sets repeat each other and themselves (a DeepBench shape at n1 and n2, ResNet-50's blocks,
  // every VGG-16 layer in DeepBench's server set): 28% of the cases were such repeats.
  std::map<std::string, ConfCase> first;
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
        const std::string key = p.name + " " + dir_str(dir) + " " + without_name(c.desc, p.name);
        const auto [it, is_first] = first.emplace(key, c);
        for (const auto& [impl, why] : p.impls()) {
          c.impl = impl;
          if (!is_first) {
            ConfCase f = it->second;
            f.impl = impl;
            c.same_as = case_name(f);
          }
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
