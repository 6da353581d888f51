// Shared oneDNN CPU engine and stream for every onednn/* implementation (built with oneDNN only).
#pragma once

#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <vector>

#include "kernels/core/dtype.h"
#include "kernels/core/error.h"

namespace pb::onednn {

dnnl::engine& engine();
dnnl::stream& stream();
std::string version();  // "2.6.3"
// The ISA oneDNN dispatches to on this CPU ("avx512_core_bf16", ...; DNNL_MAX_CPU_ISA caps it).
std::string effective_isa();

// oneDNN's element type of a DataType's inputs (u8s8: u8 for the source, s8 for the weights) and
// of its output.
dnnl::memory::data_type data_type(DataType::In in, bool source);
dnnl::memory::data_type data_type(DataType::Out out);

// Rethrows a oneDNN error as ours: Unsupported only when oneDNN says it does not implement the
// case (dnnl_unimplemented), RuntimeError for every other status (a wrong memory descriptor, out
// of memory, ...), so that a real failure never hides as a skip. `what` names the call.
[[noreturn]] void rethrow(const dnnl::error& e, const std::string& what);

// One layout conversion: a reorder primitive (created once, in plan) from one memory to another.
struct Conversion {
  Conversion(const dnnl::memory& from, const dnnl::memory& to)
      : prim(from, to), from(from), to(to) {}
  dnnl::reorder prim;
  dnnl::memory from, to;
};
// Runs the conversions in order on stream().
inline void convert(std::vector<Conversion>& conversions) {
  for (auto& c : conversions) c.prim.execute(stream(), c.from, c.to);
}

}  // namespace pb::onednn
