// Command-line parsing for the primbench CLI: flags with values, one-line errors (exit 2).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace pb::cli {

struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::string> options;  // "--reps" -> "5"; switches map to ""
  bool has(const std::string& k) const { return options.count(k) != 0; }
  std::string get(const std::string& k, const std::string& fallback) const;
  int get_int(const std::string& k, int fallback, int lo, int hi) const;  // InputError on bad
};

// `with_value` lists options taking a value, `switches` those that do not; anything else is an
// InputError naming the option.
Args parse_args(int argc, char** argv, int first, const std::vector<std::string>& with_value,
                const std::vector<std::string>& switches);

}  // namespace pb::cli
