// The find cache (see find_cache.h). Key: machine (CPU model, threads, build id, library
// versions) + backend + call.
#include "kernels/net/find_cache.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "kernels/core/io.h"
#include "kernels/core/machine.h"
#include "kernels/core/threads.h"
#include "kernels/environment.h"

namespace pb {

void FindCache::open(const std::string& path, const std::string& backend) {
  path_ = path;
  if (path_.empty()) {
    const char* e = std::getenv("PRIMBENCH_FIND_CACHE");
    const char* home = std::getenv("HOME");
    path_ = e && *e ? e : home ? std::string(home) + "/.cache/primbench/find.tsv" : "off";
  }
  // The machine, thread count, build and library versions: a rebuild or an upgraded library
  // (OpenBLAS, oneDNN, ...) may change which implementation wins, so it finds again.
  std::string libs;
  for (const auto& [k, v] : library_versions()) libs += k + "=" + v + ";";
  prefix_ = cpu_model() + " t" + std::to_string(threads()) + " build " + build_id() + " libs " +
            std::to_string(std::hash<std::string>()(libs)) + "\t" + backend + "\t";
  lines_.clear();
  dirty_ = false;
  if (path_ == "off") return;
  std::ifstream f(path_);
  for (std::string line; std::getline(f, line);) {
    // key = machine \t backend \t prim \t dir \t desc; then impl \t ms
    size_t pos = 0;
    for (int i = 0; i < 5 && pos != std::string::npos; ++i) pos = line.find('\t', pos + (i > 0));
    if (pos == std::string::npos) continue;
    lines_[line.substr(0, pos)] = line.substr(pos + 1);
  }
}

std::string FindCache::get(const std::string& key) const {
  auto it = lines_.find(prefix_ + key);
  if (it == lines_.end()) return "";
  return it->second.substr(0, it->second.find('\t'));
}

void FindCache::put(const std::string& key, const std::string& impl, double ms) {
  std::ostringstream o;
  o << impl << '\t' << ms;
  lines_[prefix_ + key] = o.str();
  dirty_ = true;
}

void FindCache::save() {
  if (!dirty_ || path_ == "off") return;
  std::string text;
  for (const auto& [k, v] : lines_) text += k + '\t' + v + '\n';
  try {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path_).parent_path(), ec);
    write_file_atomic(path_, text);
    dirty_ = false;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "primbench: find cache not saved: %s\n", e.what());
  }
}

}  // namespace pb
