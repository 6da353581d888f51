// `primbench list`: primitives, their implementations (available or why not), shape sets.
#include <cstdio>

#include "cli/args.h"
#include "cli/commands.h"
#include "kernels/core/dataset.h"
#include "kernels/core/impl.h"
#include "kernels/core/problem.h"

namespace pb::cli {

int cmd_list(int argc, char** argv) {
  parse_args(argc, argv, 2, {}, {});
  for (const PrimitiveInfo& p : primitives()) {
    std::string dirs;
    for (Dir d : p.dirs) dirs += (dirs.empty() ? "" : ",") + dir_str(d);
    std::printf("%s  (dirs: %s)\n  descriptor: %s\n  implementations:\n", p.name.c_str(),
                dirs.c_str(), p.grammar.c_str());
    for (const auto& [name, why] : p.impls())
      std::printf("    %-22s %s\n", name.c_str(),
                  why.empty() ? "available" : ("unavailable: " + why).c_str());
    std::string sets;
    for (const auto& s : list_sets(p.name)) sets += (sets.empty() ? "" : " ") + s;
    std::printf("  sets: %s\n\n", sets.empty() ? "(none)" : sets.c_str());
  }
  return 0;
}

}  // namespace pb::cli
