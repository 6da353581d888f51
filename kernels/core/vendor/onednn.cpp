// The process-wide oneDNN CPU engine and stream.
#include <cstdio>
#include <string>

#include "kernels/vendor_onednn.h"

namespace pb::onednn {

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::stream& stream() {
  static dnnl::stream s(engine());
  return s;
}

std::string version() {
  const dnnl_version_t* v = dnnl_version();
  char buf[64];
  std::snprintf(buf, sizeof buf, "%d.%d.%d", v->major, v->minor, v->patch);
  return buf;
}

std::string effective_isa() {
  switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_sse41:
      return "sse41";
    case dnnl_cpu_isa_avx:
      return "avx";
    case dnnl_cpu_isa_avx2:
      return "avx2";
    case dnnl_cpu_isa_avx2_vnni:
      return "avx2_vnni";
    case dnnl_cpu_isa_avx512_mic:
      return "avx512_mic";
    case dnnl_cpu_isa_avx512_mic_4ops:
      return "avx512_mic_4ops";
    case dnnl_cpu_isa_avx512_core:
      return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "all";
  }
}

dnnl::memory::format_tag blocked_act_tag(int64_t c) {
  static const int block = effective_isa().rfind("avx512", 0) == 0 ? 16 : 8;
  if (c % block != 0) return dnnl::memory::format_tag::undef;
  return block == 16 ? dnnl::memory::format_tag::nChw16c : dnnl::memory::format_tag::nChw8c;
}

std::string u8s8_unsupported(DataType::In in) {
  if (in != DataType::u8s8) return "";
  const std::string isa = effective_isa();
  if (isa.find("vnni") != std::string::npos || isa == "avx512_core_bf16" ||
      isa == "avx512_core_amx" || isa == "all")
    return "";
  return "dt u8s8: oneDNN " + version() + " runs it on this CPU (ISA " + isa +
         ", no VNNI) with vpmaddubsw, whose int16 pair sums saturate on full-range data, so its "
         "results fail the check; not offered (cpu/packed's AVX2 u8s8 widens to int16 instead)";
}

dnnl::memory::data_type data_type(DataType::In in, bool source) {
  using dt = dnnl::memory::data_type;
  switch (in) {
    case DataType::f32:
      return dt::f32;
    case DataType::bf16:
      return dt::bf16;
    case DataType::f16:
      return dt::f16;
    case DataType::u8s8:
      return source ? dt::u8 : dt::s8;
  }
  return dt::undef;
}

dnnl::memory::data_type data_type(DataType::Out out) {
  using dt = dnnl::memory::data_type;
  switch (out) {
    case DataType::out_f32:
      return dt::f32;
    case DataType::out_bf16:
      return dt::bf16;
    case DataType::out_f16:
      return dt::f16;
    case DataType::out_s8:
      return dt::s8;
  }
  return dt::undef;
}

void rethrow(const dnnl::error& e, const std::string& what) {
  if (e.status == dnnl_unimplemented) throw Unsupported(what + ": " + e.what());
  throw RuntimeError(what + ": oneDNN error (status " + std::to_string(static_cast<int>(e.status)) +
                     "): " + e.what());
}

}  // namespace pb::onednn
