// Command-line parsing for the primbench CLI.
#include "cli/args.h"

#include <algorithm>
#include <cstdlib>

#include "kernels/core/error.h"

namespace pb::cli {

std::string Args::get(const std::string& k, const std::string& fallback) const {
  auto it = options.find(k);
  return it == options.end() ? fallback : it->second;
}

int Args::get_int(const std::string& k, int fallback, int lo, int hi) const {
  auto it = options.find(k);
  if (it == options.end()) return fallback;
  char* end = nullptr;
  long v = std::strtol(it->second.c_str(), &end, 10);
  if (it->second.empty() || *end || v < lo || v > hi)
    throw InputError(k, "expects an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                            "], got '" + it->second + "'");
  return static_cast<int>(v);
}

Args parse_args(int argc, char** argv, int first, const std::vector<std::string>& with_value,
                const std::vector<std::string>& switches) {
  Args a;
  auto in = [](const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
  };
  for (int i = first; i < argc; ++i) {
    std::string s = argv[i];
    if (s.rfind("--", 0) != 0) {
      a.positional.push_back(s);
      continue;
    }
    std::string key = s, value;
    bool inline_value = false;
    if (auto eq = s.find('='); eq != std::string::npos) {
      key = s.substr(0, eq);
      value = s.substr(eq + 1);
      inline_value = true;
    }
    if (in(with_value, key)) {
      if (!inline_value) {
        if (i + 1 >= argc) throw InputError(key, "needs a value");
        value = argv[++i];
      }
      a.options[key] = value;
    } else if (in(switches, key)) {
      if (inline_value) throw InputError(key, "takes no value");
      a.options[key] = "";
    } else {
      throw InputError(key, "unknown option (see primbench --help)");
    }
  }
  return a;
}

}  // namespace pb::cli
