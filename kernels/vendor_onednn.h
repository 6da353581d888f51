// Shared oneDNN CPU engine and stream for every onednn/* implementation (built with oneDNN only).
#pragma once

#include <initializer_list>
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
// oneDNN's blocked activation layout for c channels on this CPU: nChw16c where it runs AVX-512,
// nChw8c below (its JIT convolutions, pooling, batch-norm and LRN take the block their vectors
// hold; on the other one 2.6 runs reference kernels: VGG-16-CIFAR's 64-channel 3x3 convolution
// took 9 s in nChw16c on an AVX2-only Zen 3), or format_tag::undef where c is not a multiple of
// that block.
dnnl::memory::format_tag blocked_act_tag(int64_t c);
// Why onednn/* is not offered in type `in` on this CPU, or "" (always "" but for u8s8): without
// VNNI (AVX2, plain avx512_core) oneDNN 2.6 multiplies u8 by s8 with vpmaddubsw, whose int16
// sums of pairs saturate on full-range data (its "int8 computation aspects"). Found by the
// conformance tests on a Zen 3 (AVX2): every u8s8 GEMM, convolution and LSTM case failed its check
// (GEMM m100n37k333: 3.3e4 off). cpu/packed and cpu/direct refuse that route for the same reason,
// so neither side runs it.
std::string u8s8_unsupported(DataType::In in);

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

// The layout a memory-bound primitive runs in: the first of `candidates` whose implementation
// (impl_of(tag), oneDNN's impl_info_str) is a JIT one; a layout oneDNN has no implementation for
// (impl_of throws) is skipped. NCHW where none is.
template <class ImplOf>
dnnl::memory::format_tag first_jit_layout(
    std::initializer_list<dnnl::memory::format_tag> candidates, ImplOf impl_of) {
  for (dnnl::memory::format_tag t : candidates) {
    try {
      if (std::string(impl_of(t)).find("jit") != std::string::npos) return t;
    } catch (const dnnl::error&) {  // no implementation in that layout: try the next
    }
  }
  return dnnl::memory::format_tag::nchw;
}

// An f32 tensor of `dims` for a primitive running in `layout`: the user's NCHW memory at `data`
// itself where `layout` is NCHW, else a buffer in `layout` (its size added to *bytes) with the
// conversion from the user's memory (`in`) or into it (else) appended to `conversions`.
inline dnnl::memory user_or_converted(const dnnl::memory::dims& dims, const float* data,
                                      dnnl::memory::format_tag layout,
                                      std::vector<Conversion>* conversions, bool in,
                                      size_t* bytes) {
  using dnnl::memory;
  memory user(memory::desc(dims, memory::data_type::f32, memory::format_tag::nchw), engine(),
              const_cast<float*>(data));
  if (layout == memory::format_tag::nchw) return user;
  memory mine(memory::desc(dims, memory::data_type::f32, layout), engine());
  *bytes += mine.get_desc().get_size();
  if (in)
    conversions->emplace_back(user, mine);
  else
    conversions->emplace_back(mine, user);
  return mine;
}

}  // namespace pb::onednn
