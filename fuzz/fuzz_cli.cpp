// libFuzzer target: the CLI's argument parsing for `primbench run` and `primbench net`
// (cli/options.h: every flag and value), from NUL-separated arguments.
#include <vector>

#include "cli/options.h"
#include "fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // argv[0] primbench, argv[1] the command, then the fuzzer's arguments split at NUL bytes.
  std::vector<std::string> args = {"primbench", size && (data[0] & 1) ? "net" : "run"};
  std::string cur;
  for (size_t i = size ? 1 : 0; i < size; ++i) {
    if (data[i] == 0) {
      args.push_back(cur);
      cur.clear();
    } else {
      cur += static_cast<char>(data[i]);
    }
  }
  if (!cur.empty()) args.push_back(cur);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  try {
    if (args[1] == "net") {
      const pb::cli::NetCliOptions o = pb::cli::parse_net_options(int(args.size()), argv.data());
      if (o.busbw < 0 || (o.threads && *o.threads < 1) || (o.batch && *o.batch < 1))
        pb::fuzz::fail("primbench net accepted an out-of-range value");
    } else {
      const pb::cli::RunOptions o = pb::cli::parse_run_options(int(args.size()), argv.data());
      if (o.reps < 1 || o.seed < 0 || (o.threads && *o.threads < 1) || o.impl.empty())
        pb::fuzz::fail("primbench run accepted an out-of-range value");
    }
  } catch (const pb::InputError&) {
  }
  return 0;
}
