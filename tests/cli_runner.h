// Runs the primbench CLI as a child process and captures its exit status and output.
#pragma once

#include <string>

namespace pb::test {

struct CliResult {
  int status = -1;
  std::string out;  // stdout and stderr together
};

// `env` is prefixed to the command line ("PRIMBENCH_OPENCL_DEVICE=x").
CliResult run_cli(const std::string& args, const std::string& env = "");

}  // namespace pb::test
