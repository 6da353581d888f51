// Shape-set loader: data/<prim>/<set>.txt, one descriptor per line, '#' comments.
#pragma once

#include <istream>
#include <string>
#include <vector>

namespace pb {

struct DataLine {
  std::string set;   // file stem, e.g. "deepbench_train"
  std::string file;  // path, for messages
  int line = 0;      // 1-based line number
  std::string text;  // the descriptor as written
  std::string note;  // the comment after '#' on the same line ("[default]" marks curated lines)
  bool is_default() const { return note.find("[default]") != std::string::npos; }
};

// The data folder: $PRIMBENCH_DATA_DIR, else the source tree's data/ baked in at build time.
std::string data_dir();
// Sets available for a primitive, sorted.
std::vector<std::string> list_sets(const std::string& prim);
// All descriptor lines of one set; throws InputError("set", ...) when it does not exist.
std::vector<DataLine> load_set(const std::string& prim, const std::string& set);

// The descriptor lines of one file in the data-set format; empty when the file does not exist.
std::vector<DataLine> load_file(const std::string& path, const std::string& set);
// The same from a stream; `path` names it in the lines.
std::vector<DataLine> parse_lines(std::istream& in, const std::string& path,
                                  const std::string& set);

// Parses every line with Desc::parse; an error names file:line and the bad token.
template <class Desc>
std::vector<std::pair<DataLine, Desc>> load_descs(const std::string& prim, const std::string& set);

}  // namespace pb

#include "kernels/core/error.h"

template <class Desc>
std::vector<std::pair<pb::DataLine, Desc>> pb::load_descs(const std::string& prim,
                                                          const std::string& set) {
  std::vector<std::pair<DataLine, Desc>> out;
  for (DataLine& l : load_set(prim, set)) {
    try {
      Desc d = Desc::parse(l.text);
      out.emplace_back(std::move(l), std::move(d));
    } catch (const InputError& e) {
      throw InputError(l.file + ":" + std::to_string(l.line), e.what());
    }
  }
  return out;
}
