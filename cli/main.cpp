// primbench: the CLI for one shape now. `list`, `run <prim> <descriptor> ...`, `net <network>`.
#include <cstdio>
#include <cstring>
#include <string>

#include "cli/commands.h"
#include "kernels/core/error.h"

namespace {

const char* kUsage =
    "usage: primbench list\n"
    "       primbench run <prim> <descriptor> [--dir fwd|bwd_d|bwd_w|bwd] [--impl "
    "<backend/algo>|all]\n"
    "                     [--check] [--reps N] [--threads N] [--seed S] [--json] [--save DIR]\n"
    "                     [--timing kernel|layer|step] [--cache hot|cold]\n"
    "       primbench net <network>|--list [--backend cpu|onednn|ocl|ref] [--policy "
    "best|first|<algo>]\n"
    "                     [--train] [--batch N] [--reps N] [--threads N] [--json FILE]\n"
    "                     [--find-cache FILE|off] [--busbw GB/s | --allreduce-json F[,F..]]\n"
    "                     [--seed S] [--check] [--composed] [--dt bf16|u8s8 [--quantise-steps]]\n"
    "                     [--data-parallel [--allreduce IMPL] [--bucket-mb MB] [--no-overlap]\n"
    "                      [--wait-sleep-us US] [--dp-timeout S]]   (under mpirun, with --train)\n"
    "exit status: 0 passed (or unchecked), 1 a check failed, 2 bad input or usage,\n"
    "             3 the implementation is unavailable or does not support the shape\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  std::string cmd = argv[1];
  try {
    if (cmd == "list") return pb::cli::cmd_list(argc, argv);
    if (cmd == "run") return pb::cli::cmd_run(argc, argv);
    if (cmd == "net") return pb::cli::cmd_net(argc, argv);
    std::fprintf(stderr, "primbench: unknown command '%s' (list, run, net)\n", cmd.c_str());
    return 2;
  } catch (const pb::InputError& e) {
    std::fprintf(stderr, "primbench: %s\n", e.what());
    return 2;
  } catch (const pb::Unsupported& e) {
    std::fprintf(stderr, "primbench: unsupported: %s\n", e.what());
    return 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "primbench: error: %s\n", e.what());
    return 4;
  }
}
