// A main() for the fuzz targets without libFuzzer: runs LLVMFuzzerTestOneInput on every file
// given (folders: every file inside, sorted), as ctest's replay of the seed and regression
// corpora does in the normal build. After --lines, each line of a file in the data-set format
// (comments and blank lines dropped) is one input. Prints how many inputs ran; a bug aborts
// (fuzz.h).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "kernels/core/dataset.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::vector<std::pair<std::string, bool>> files;  // path, one input per line
  bool lines = false;
  for (int i = 1; i < argc; ++i) {
    std::error_code ec;
    std::vector<std::string> found;
    if (std::string(argv[i]) == "--lines") {
      lines = true;
      continue;
    } else if (fs::is_directory(argv[i], ec)) {
      for (const auto& e : fs::recursive_directory_iterator(argv[i], ec))
        if (e.is_regular_file()) found.push_back(e.path().string());
      std::sort(found.begin(), found.end());
    } else if (fs::is_regular_file(argv[i], ec)) {
      found.push_back(argv[i]);
    } else {
      std::fprintf(stderr, "replay: %s: no such file or folder\n", argv[i]);
      return 2;
    }
    for (std::string& f : found) files.emplace_back(std::move(f), lines);
  }
  size_t inputs = 0;
  auto one = [&inputs](const std::string& bytes) {
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    ++inputs;
  };
  for (const auto& [f, by_line] : files) {
    if (by_line) {
      for (const pb::DataLine& l : pb::load_file(f, "replay")) one(l.text);
    } else {
      std::ifstream in(f, std::ios::binary);
      one(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()));
    }
  }
  std::printf("replay: %zu inputs, no bug\n", inputs);
  return inputs == 0 ? 1 : 0;
}
