// The `best` policy's memory, like cuDNN's find: for each (machine, backend, primitive,
// direction, descriptor), the implementation that timed fastest, as lines of a TSV file.
#pragma once

#include <map>
#include <string>

namespace pb {

class FindCache {
 public:
  // path "" = $PRIMBENCH_FIND_CACHE, else $HOME/.cache/primbench/find.tsv; "off" = no file.
  void open(const std::string& path, const std::string& backend);
  std::string get(const std::string& key) const;  // "" when not cached
  void put(const std::string& key, const std::string& impl, double ms);
  void save();  // atomic rewrite when something was added; errors are reported, not fatal
  const std::string& path() const { return path_; }

 private:
  std::string path_, prefix_;
  std::map<std::string, std::string> lines_;  // full key -> rest of the line
  bool dirty_ = false;
};

}  // namespace pb
