// Reads shape-set files from the data folder.
#include "kernels/core/dataset.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "kernels/core/error.h"

#ifndef PRIMBENCH_DATA_DIR
#define PRIMBENCH_DATA_DIR "data"
#endif

namespace pb {

namespace fs = std::filesystem;

std::string data_dir() {
  const char* env = std::getenv("PRIMBENCH_DATA_DIR");
  return env && *env ? env : PRIMBENCH_DATA_DIR;
}

std::vector<std::string> list_sets(const std::string& prim) {
  std::vector<std::string> sets;
  fs::path dir = fs::path(data_dir()) / prim;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".txt") sets.push_back(e.path().stem().string());
  std::sort(sets.begin(), sets.end());
  return sets;
}

std::vector<DataLine> load_set(const std::string& prim, const std::string& set) {
  fs::path file = fs::path(data_dir()) / prim / (set + ".txt");
  if (!fs::exists(file)) {
    std::string known;
    for (auto& s : list_sets(prim)) known += (known.empty() ? "" : ", ") + s;
    throw InputError("set", "no shape set '" + set + "' for " + prim + " (have: " +
                                (known.empty() ? "none, data dir " + data_dir() : known) + ")");
  }
  return load_file(file.string(), set);
}

std::vector<DataLine> load_file(const std::string& path, const std::string& set) {
  std::ifstream in(path);
  return parse_lines(in, path, set);
}

std::vector<DataLine> parse_lines(std::istream& in, const std::string& path,
                                  const std::string& set) {
  std::vector<DataLine> out;
  std::string line;
  int no = 0;
  while (std::getline(in, line)) {
    ++no;
    // The first '#' outside a quoted name starts the comment.
    std::string note;
    size_t hash = 0, quotes = 0;
    for (; hash < line.size(); ++hash) {
      if (line[hash] == '"') ++quotes;
      if (line[hash] == '#' && quotes % 2 == 0) break;
    }
    if (hash < line.size()) {
      note = line.substr(hash + 1);
      line.erase(hash);
    }
    auto b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos) continue;
    auto e = line.find_last_not_of(" \t\r");
    out.push_back({set, path, no, line.substr(b, e - b + 1), note});
  }
  return out;
}

}  // namespace pb
