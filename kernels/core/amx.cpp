#include "kernels/core/amx.h"

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "kernels/core/error.h"
#include "kernels/core/vmath.h"

namespace pb::amx {

namespace {

struct Cpu {
  bool tile = false, bf16 = false, int8 = false, os = false;
};

Cpu cpu() {
  Cpu c;
#if defined(__x86_64__)
  unsigned a, b, cx, d;
  if (__get_cpuid_count(7, 0, &a, &b, &cx, &d)) {
    c.bf16 = (d >> 22) & 1;
    c.tile = (d >> 24) & 1;
    c.int8 = (d >> 25) & 1;
  }
  // XCR0 bits 17 (XTILECFG) and 18 (XTILEDATA): the OS saves the tile state.
  if (c.tile && __get_cpuid(1, &a, &b, &cx, &d) && ((cx >> 27) & 1)) {
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    c.os = ((lo >> 17) & 3) == 3;
  }
#endif
  return c;
}

// The process's permission to the tile data state, asked for once; "" when granted.
const std::string& permission() {
  static const std::string why = [] {
#if defined(__x86_64__) && defined(SYS_arch_prctl)
    constexpr long kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    if (syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0) return std::string();
    return "the kernel refused the AMX tile data state (arch_prctl ARCH_REQ_XCOMP_PERM: " +
           std::string(std::strerror(errno)) + ")";
#else
    return std::string("no arch_prctl to ask for the AMX tile data state");
#endif
  }();
  return why;
}

bool wanted() {
  const char* env = std::getenv("PRIMBENCH_AMX");
  const std::string v = env ? env : "";
  if (v.empty() || v == "1") return true;
  if (v == "0") return false;
  throw InputError("PRIMBENCH_AMX", "'" + v + "' is not 0 or 1");
}

}  // namespace

std::string unsupported(Kind kind) {
  if (!wanted()) return "PRIMBENCH_AMX=0";
  static const Cpu c = cpu();
  if (!c.tile) return "this CPU has no AMX";
  if (kind == Kind::bf16 && !c.bf16) return "this CPU has no AMX-BF16";
  if (kind == Kind::int8 && !c.int8) return "this CPU has no AMX-INT8";
  if (!c.os) return "the OS does not enable the AMX tile state (XCR0)";
  if (std::string(vmath::isa()) != "avx512")
    return std::string("the SIMD path in force is ") + vmath::isa() +
           " (cpu/packed's AMX GEMM packs and converts with AVX-512)";
  return permission();
}

#if defined(__x86_64__)
namespace {
struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};
}  // namespace

__attribute__((target("amx-tile"))) void tiles_on() {
  TileConfig c;
  for (int t = 0; t < 8; ++t) c.colsb[t] = 64, c.rows[t] = 16;
  // GCC 12's _tile_loadconfig tells the compiler it reads 8 bytes of the configuration (its asm
  // operand is *(const void**)), so without this barrier the stores of the tile shapes were
  // dropped as dead (ldtilecfg of palette 1 with no rows: tilezero then faults, SIGILL).
  __asm__ volatile("" : : "r"(&c) : "memory");
  _tile_loadconfig(&c);
}
__attribute__((target("amx-tile"))) void tiles_off() {
  _tile_release();
}
#else
void tiles_on() {}
void tiles_off() {}
#endif

std::string summary() {
  std::string on;
  for (Kind k : {Kind::bf16, Kind::int8})
    if (usable(k)) on += std::string(on.empty() ? "" : ",") + (k == Kind::bf16 ? "bf16" : "int8");
  return on.empty() ? "off: " + unsupported(Kind::bf16) : on;
}

}  // namespace pb::amx
