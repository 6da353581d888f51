// Post-ops: what a layer applies to its output once it is computed, fused into the layer (the
// network executor's inference: a convolution's bias, inference batch-norm, residual add and
// ReLU, kernels/net/fuse_native.cpp; oneDNN's post-ops do the same inside its primitives).
#pragma once

#include <cstdint>

namespace pb {

// Channel c's elements y become
//   y = [max](y * scale[c] + shift[c] [+ r * res_scale[c] + res_shift[c]], 0)
// where r is the residual's element at y's position. A null scale or res_scale is 1, a null shift
// or res_shift 0; no residual when res is null.
struct PostOps {
  const float* scale = nullptr;
  const float* shift = nullptr;
  const float* res = nullptr;
  int64_t ldr = 0;  // apply_post_ops: residual element (i, j) at res[i + j * ldr]
  const float* res_scale = nullptr;
  const float* res_shift = nullptr;
  bool relu = false;

  // The same ops on a block whose first channel is c0 and whose residual starts `offset`
  // elements further, ldr apart.
  PostOps at(int64_t c0, int64_t offset, int64_t ld) const {
    PostOps p = *this;
    auto move = [c0](const float* v) { return v ? v + c0 : nullptr; };
    p.scale = move(scale), p.shift = move(shift);
    p.res_scale = move(res_scale), p.res_shift = move(res_shift);
    p.res = res ? res + offset : nullptr;
    p.ldr = ld;
    return p;
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
