// libFuzzer target: the shape-set loader (parse_lines: comments, quoted names, blank lines) and
// the descriptors of every line, as load_descs reads them, for the primitive the first byte picks.
#include <sstream>

#include "fuzz/fuzz.h"
#include "kernels/act/desc.h"
#include "kernels/allreduce/desc.h"
#include "kernels/bnorm/desc.h"
#include "kernels/conv/desc.h"
#include "kernels/core/dataset.h"
#include "kernels/gemm/desc.h"
#include "kernels/lrn/desc.h"
#include "kernels/pool/desc.h"
#include "kernels/rnn/desc.h"

namespace {

template <class Desc>
void lines_round_trip(const std::vector<pb::DataLine>& lines) {
  for (const pb::DataLine& l : lines) {
    if (l.text.empty() || l.text.find_first_of(" \t\r\n") == 0 ||
        l.text.find_last_of(" \t\r\n") == l.text.size() - 1)
      pb::fuzz::fail("a loaded line is empty or not trimmed: '" + l.text + "'");
    if (l.text.find('#') != std::string::npos &&
        std::count(l.text.begin(), l.text.begin() + l.text.find('#'), '"') % 2 == 0)
      pb::fuzz::fail("a comment outside quotes stayed in the line: '" + l.text + "'");
    pb::fuzz::descriptor_round_trip<Desc>(l.text);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::istringstream in(pb::fuzz::text(data + 1, size - 1));
  const std::vector<pb::DataLine> lines = pb::parse_lines(in, "fuzz.txt", "fuzz");
  switch (data[0] % 8) {  // tools/fuzz's seeds put each data file behind its case's byte
    case 0:
      lines_round_trip<pb::GemmDesc>(lines);
      break;
    case 1:
      lines_round_trip<pb::ConvDesc>(lines);
      break;
    case 2:
      lines_round_trip<pb::PoolDesc>(lines);
      break;
    case 3:
      lines_round_trip<pb::BnormDesc>(lines);
      break;
    case 4:
      lines_round_trip<pb::ActDesc>(lines);
      break;
    case 5:
      lines_round_trip<pb::RnnDesc>(lines);
      break;
    case 6:
      lines_round_trip<pb::AllreduceDesc>(lines);
      break;
    default:
      lines_round_trip<pb::LrnDesc>(lines);
      break;
  }
  return 0;
}
