// Post-ops: what a layer applies to its output once it is computed, fused into the layer (the
// network executor's inference: a convolution's bias, inference batch-norm, residual add and
// ReLU, kernels/net/fuse_native.cpp; oneDNN's post-ops do the same inside its primitives).
#pragma once

#include <cstdint>

#include "kernels/core/dtype.h"

namespace pb {

// Channel c's elements y become
//   y = [max](y * scale[c] + shift[c] [+ r * res_scale[c] + res_shift[c]], 0)
// where r is the residual's element at y's position. A null scale or res_scale is 1, a null shift
// or res_shift 0; no residual when res is null. With a typed copy (q_kind not none), each result
// is also stored in that type at y's position in q (a network's activation handed to the typed
// layers that read it, kernels/net/lowp.cpp): bf16 rounded to nearest even, or u8
// round(y * q_inv) + q_zero saturated to [0, 255] (quantise_u8), as quantise_storage does. Every
// implementation that takes post-ops applies them through apply_post_ops or
// direct::scatter_tile_post, which write the copy.
struct PostOps {
  const float* scale = nullptr;
  const float* shift = nullptr;
  const float* res = nullptr;
  int64_t ldr = 0;  // apply_post_ops: residual element (i, j) at res[i + j * ldr]
  const float* res_scale = nullptr;
  const float* res_shift = nullptr;
  bool relu = false;
  enum class Q : uint8_t { none, bf16, u8 } q_kind = Q::none;
  void* q = nullptr;  // element (i, j) at q[i + j * ldr], as the residual
  float q_inv = 1, q_zero = 0;

  // The same ops on a block whose first channel is c0 and whose residual (and typed copy) starts
  // `offset` elements further, ldr apart.
  PostOps at(int64_t c0, int64_t offset, int64_t ld) const {
    PostOps p = *this;
    auto move = [c0](const float* v) { return v ? v + c0 : nullptr; };
    p.scale = move(scale), p.shift = move(shift);
    p.res_scale = move(res_scale), p.res_shift = move(res_shift);
    p.res = res ? res + offset : nullptr;
    if (q) p.q = static_cast<uint8_t*>(q) + offset * q_bytes(q_kind);
    p.ldr = ld;
    return p;
  }
  // Bytes per element of a typed copy of this kind.
  static int64_t q_bytes(Q kind) { return kind == Q::bf16 ? 2 : 1; }
  // Stores v as the typed copy's element k (the offset from q).
  void store_q(int64_t k, float v) const {
    if (q_kind == Q::bf16) static_cast<uint16_t*>(q)[k] = to_bf16(v);
    if (q_kind == Q::u8) static_cast<uint8_t*>(q)[k] = quantise_u8(v, q_inv, q_zero);
  }
};

// y = p(x) over an m x n column-major block (columns ldx and ldy apart; x == y in place) whose
// column j is channel j of p: element (i, j) at x[i + j * ldx], its residual at
// p.res[i + j * p.ldr] (a column-major GEMM's C with the channels as columns, or an NCHW image
// with the pixels as rows). Single-threaded, vectorised along the rows.
void apply_post_ops(const PostOps& p, int64_t m, int64_t n, const float* x, int64_t ldx, float* y,
                    int64_t ldy);

// The same over a whole NCHW tensor of mb x c x hw (an fc's output: hw 1), in parallel over
// OpenMP threads; the residual has the tensor's shape.
void apply_post_ops_nchw(const PostOps& p, int64_t mb, int64_t c, int64_t hw, const float* x,
                         float* y);

}  // namespace pb
