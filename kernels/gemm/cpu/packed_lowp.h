// cpu/packed in reduced precision: the loop nest, cache blocking and threading of the packed
// SGEMM (packed_sgemm.h) around AVX-512 micro-kernels on the CPU's dot-product instructions:
// bf16 pairs with vdpbf16ps (AVX512_BF16, fp32 accumulation), u8 x s8 quadruples with vpdpbusd
// (AVX512_VNNI, int32 accumulation).
#pragma once

#include <cstdint>
#include <string>

#include "kernels/core/dtype.h"

namespace pb {

// Why cpu/packed cannot run `dt` on this CPU (under PRIMBENCH_SIMD), or "" when it can.
std::string gemm_packed_lowp_unsupported(const DataType& dt);

// Column-major, BLAS semantics, as sgemm_packed. A: bf16 (uint16_t) or s8 (int8_t, the
// weights); B: bf16 or u8 (uint8_t, the source); C: f32 (float), bf16 (uint16_t) or s8
// (int8_t) as dt.out says; C is read when beta != 0. u8s8: C = alpha * a_scale[i] * b_scale *
// sum(A * (B - b_zero)) + beta * c_scale * C, divided by c_scale for an s8 output.
struct LowpGemm {
  DataType dt;
  bool ta = false, tb = false;
  int64_t m = 0, n = 0, k = 0;
  const void* a = nullptr;
  int64_t lda = 0;
  const void* b = nullptr;
  int64_t ldb = 0;
  void* c = nullptr;
  int64_t ldc = 0;
  float alpha = 1, beta = 0;
  const float* a_scale = nullptr;  // u8s8: m values
  float b_scale = 1, c_scale = 1;
  int32_t b_zero = 0;
};
void gemm_packed_lowp(const LowpGemm& g);

}  // namespace pb
