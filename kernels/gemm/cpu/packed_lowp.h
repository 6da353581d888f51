// cpu/packed in reduced precision: the loop nest, cache blocking and threading of the packed
// SGEMM (packed_sgemm.h) around AVX-512 micro-kernels on the CPU's dot-product instructions:
// bf16 pairs with vdpbf16ps (AVX512_BF16, fp32 accumulation), u8 x s8 quadruples with vpdpbusd
// (AVX512_VNNI, int32 accumulation); on AMX tiles (tdpbf16ps, tdpbusd) where the CPU has them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "kernels/core/dtype.h"

namespace pb {

// Why cpu/packed's GEMM cannot run `dt` on this CPU (under PRIMBENCH_SIMD), or "" when it can:
// bf16 and u8s8 on AVX-512 (BF16, VNNI), u8s8 also on AVX2 (gemm_packed_lowp_on_avx2).
std::string gemm_packed_lowp_unsupported(const DataType& dt);
// Why the AVX-512 kernels (and what shares their dot product or blocks: LowpPackedA, cpu/direct
// and Winograd's reduced-precision tiles, cpu/blas RNN) cannot run `dt`, or "" when they can.
std::string gemm_packed_lowp_avx512_unsupported(const DataType& dt);
// Whether gemm_packed_lowp runs `dt` on the AVX2 u8s8 kernel (packed_lowp_avx2.h): u8s8 where
// the SIMD path is AVX2, or AVX-512 without VNNI.
bool gemm_packed_lowp_on_avx2(const DataType& dt);

// A (op(A) = A: m x k, lda) interleaved once into the blocks the in-place path's kernels read,
// for an A that many GEMMs of few columns multiply (an RNN's recurrent weights, every step):
// given as LowpGemm::a_packed, it replaces that path's per-call interleave and row sums (the
// packed path, for more than 64 columns, reads LowpGemm::a as before). 64-byte aligned.
class LowpPackedA {
 public:
  LowpPackedA() = default;
  LowpPackedA(const DataType& dt, int64_t m, int64_t k, const void* a, int64_t lda);
  const void* blocks() const { return data_.get() ? data_.get() + head_ : nullptr; }
  const void* row_sums() const { return data_.get() ? data_.get() + sums_ : nullptr; }
  DataType dt;
  int64_t m = 0, k = 0;

 private:
  struct Free {
    void operator()(uint8_t* p) const;
  };
  std::unique_ptr<uint8_t[], Free> data_;
  size_t head_ = 0, sums_ = 0;
};

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
  const LowpPackedA* a_packed = nullptr;  // A already interleaved (same dt, m, k), or nullptr
  // C stored transposed, C(i, j) at c[j + i * ldc] (ldc >= n): the AVX2 u8s8 kernel only
  // (gemm_packed_lowp_on_avx2), where cpu/im2col writes NCHW planes directly with it.
  bool c_trans = false;
  // u8s8 with the operands' roles swapped (AVX-512 VNNI; no packed A, no c_trans): A is the u8
  // source and B the s8 weights, b_scale and b_zero are A's, and a_scale holds n values, one per
  // column: C = alpha * a_scale[j] * b_scale * sum(B * (A - b_zero)) + beta * c_scale * C.
  // cpu/im2col's u8s8 1x1 layers so write C with the pixels as rows: an image's NCHW planes.
  bool u8_a = false;
};
void gemm_packed_lowp(const LowpGemm& g);

}  // namespace pb
