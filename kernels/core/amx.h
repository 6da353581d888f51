// Intel AMX (Advanced Matrix Extensions): eight tile registers of up to 16 rows x 64 bytes and
// the tile dot products cpu/packed's reduced-precision GEMM runs on where the CPU has them
// (tdpbf16ps: bf16 pairs into fp32; tdpbusd: u8 x s8 quadruples into int32), and whether this
// process may use them. Linux hands a process the tile data state only on request
// (arch_prctl ARCH_REQ_XCOMP_PERM), made once here before the first use.
#pragma once

#include <string>

namespace pb::amx {

enum class Kind { bf16, int8 };

// Why the AMX tiles cannot run `kind` here, or "" when they can: the CPU has AMX-TILE and
// AMX-BF16 / AMX-INT8 (cpuid), the SIMD path in force is AVX-512 (PRIMBENCH_SIMD: the GEMM's
// packing and epilogue are AVX-512), PRIMBENCH_AMX is not 0, and the kernel granted the tile
// data state. PRIMBENCH_AMX: unset or 1 (use AMX where it can run), 0 (never: the AVX-512
// dot-product kernels run instead, for comparing the two); anything else is an InputError.
std::string unsupported(Kind kind);
inline bool usable(Kind kind) {
  return unsupported(kind).empty();
}
// For the run's context: "bf16,int8", "off: <reason>".
std::string summary();

// Every tile register 16 rows of 64 bytes, for the calling thread (the tile configuration is per
// thread); tiles_off() releases them. Only where usable() says so.
void tiles_on();
void tiles_off();

}  // namespace pb::amx
