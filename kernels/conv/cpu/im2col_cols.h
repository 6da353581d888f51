// Helpers of cpu/im2col shared by its three directions and data types: the column buffer copies
// (im2col and its adjoint col2im), gathers between NCHW and a chunk's [channel][image*pixel]
// matrix, the sgemm wrapper, the chunk planning and driver, and the passes (forward in
// im2col.cpp, backward in im2col_bwd.cpp, the reduced-precision forward in im2col_lowp.cpp).
#pragma once

#include <omp.h>

#include <cstdint>
#include <vector>

#include "kernels/conv/desc.h"
#include "kernels/core/post_ops.h"
#include "kernels/core/quant.h"
#include "kernels/core/tensor.h"
#include "kernels/core/threads.h"

namespace pb::im2col {

// Row-major sgemm: C = op(A) x op(B) + beta C, op = transpose when ta / tb; then `post` with row
// i of C as channel i (sgemm.h).
void sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
           const PostOps* post = nullptr);

// col[(c*kh + ky)*kw + kx][i*ohw + oy*ow + ox] = img(i, c, iy, ix), `pad` in the padding, for
// the group's icg channels of nb images (`img` points at image 0's first channel of the group,
// images ic*ih*iw apart). OpenMP-parallel when `par`. T: float, or a reduced type's storage
// (uint16_t: bf16; uint8_t: u8, padded with its zero point).
template <class T>
void im2col(const ConvDesc& d, const T* img, int64_t nb, int64_t ncol, T* col, bool par,
            T pad = T(0));
// The same copy for channels [c0, c1) and output rows [oy0, oy1) only (a block of the matrix):
// col[((c - c0)*kh + ky)*kw + kx][i*(oy1 - oy0)*ow + (oy - oy0)*ow + ox].
void im2col_block(const ConvDesc& d, const float* img, int64_t nb, int64_t ncol, int64_t c0,
                  int64_t c1, int64_t oy0, int64_t oy1, float* col, bool par);
// The adjoint of a block of output rows [oy0, oy1) of all channels: adds the block's entries
// into img(c, iy, ix) (one image; the caller zeroes it first), in the order (c, ky, kx, oy, ox);
// single-threaded.
void col2im_rows_add(const ConvDesc& d, const float* col, int64_t oy0, int64_t oy1, float* img);
// The adjoint: img(i, c, iy, ix) = sum of the col entries that im2col copies from it, in the
// fixed order (ky, kx, oy, ox); overwrites the group's channels of the nb images.
void col2im(const ConvDesc& d, const float* col, int64_t nb, int64_t ncol, float* img, bool par);
// t[o][i*ohw + p] <-> x(n0 + i, g*ocg + o, p) for the ocg channels of group gi (x: mb x oc x ohw).
// scatter with `transposed`: t[i*ohw + p][o] instead.
void scatter(const ConvDesc& d, const float* t, bool transposed, int64_t n0, int64_t nb, int64_t gi,
             float* x, bool par);
template <class T>
void gather(const ConvDesc& d, const T* x, int64_t n0, int64_t nb, int64_t gi, T* t, bool par);

// o[i] = s[i * stride], i < n (vectorised for strides 2 to 4; instantiated for float).
template <class T>
void copy_strided(T* o, const T* s, int64_t n, int64_t stride);

// True for 1x1, stride 1, no padding: the image is its own column matrix.
bool pointwise(const ConvDesc& d);

// How the image batch is cut (shared by the three directions): a 1x1 stride-1 unpadded layer
// needs no copy (the image is the matrix) when it is not tiny; large images get one sgemm each,
// small ones are batched into wide sgemms (fewer OpenMP/OpenBLAS hand-overs); with at least as
// many images as threads each thread runs whole chunks with a single-threaded sgemm.
struct Chunking {
  int64_t nb = 1;  // images per chunk
  int threads = 1;
  bool wide = false, no_copy = false, per_thread = false;
};
Chunking plan_chunks(const ConvDesc& d);

// Runs chunk(n0, slot, par) over the batch of mb images in chunks of nb: chunk after chunk with
// OpenMP-parallel copies (par, slot 0), or, per_thread, chunks spread over OpenMP threads (slot:
// the thread), each with a single-threaded GEMM.
template <class F>
void for_chunks(int64_t mb, int64_t nb, bool per_thread, F&& chunk) {
  const int64_t chunks = (mb + nb - 1) / nb;
  if (!per_thread) {
    for (int64_t c = 0; c < chunks; ++c) chunk(c * nb, 0, true);
    return;
  }
  SerialBlasScope serial_blas;
  RegionErrors errors;  // a chunk's GEMM may throw (its scratch): rethrown after the region
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t c = 0; c < chunks; ++c)
    errors.run([&] { chunk(c * nb, omp_get_thread_num(), false); });
  errors.rethrow();
}

// The bwd_w chunk loop: chunk(n0, dw, slot, first, par) adds (first: writes) the gradient of the
// chunk of images from n0 into dw. One thread after the other with OpenMP-parallel copies; or,
// per_thread, thread t sums chunks t, t + T, ... (a fixed assignment) into its partial gradient
// (part + t * wsize, `threads` of them), then the partials are added in thread order into out: two
// runs give bitwise the same gradient.
template <class F>
void sum_chunks(int64_t mb, int64_t nb, bool per_thread, int threads, int64_t wsize, float* part,
                float* out, F&& chunk) {
  const int64_t chunks = (mb + nb - 1) / nb;
  if (!per_thread) {
    for (int64_t c = 0; c < chunks; ++c) chunk(c * nb, out, 0, c == 0, true);
    return;
  }
  SerialBlasScope serial_blas;  // one GEMM per OpenMP thread
  RegionErrors errors;          // a chunk's GEMM may throw (its scratch): rethrown after the region
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    float* mine = part + t * wsize;
    std::fill(mine, mine + wsize, 0.0f);
    for (int64_t c = t; c < chunks; c += nt)
      errors.run([&] { chunk(c * nb, mine, t, false, false); });
#pragma omp barrier
#pragma omp for schedule(static)
    for (int64_t i = 0; i < wsize; ++i) {
      float s = part[i];
      for (int u = 1; u < nt; ++u) s += part[u * wsize + i];
      out[i] = s;
    }
  }
  errors.rethrow();
}

// The column and GEMM-output buffers of a chunked im2col pass, sized by plan_chunks and the
// blocks below.
class ChunkedBuffers {
 protected:
  // The chunking and the blocks, then the buffers, each allocated once.
  // Row blocks (every direction): a large image's column matrix (k x oh*ow: 4.4 MB for AlexNet's
  // conv1, 115 MB for VGG-16's conv1_2) went to memory and came back; with one image per thread
  // it is copied and multiplied a block of output rows at a time instead, each block's columns
  // sized for the core's L2 (512 KB of them, but at least 768 columns, so that the GEMM's side
  // along the pixels stays long).
  // Channel blocks (channel_blocks: the forward): small images share a column matrix with many
  // rows (k = icg*kh*kw: 1152 for ResNet-50's 3x3 layers on 128 channels; 2 images of 28x28:
  // 7.2 MB), which also went to memory and came back in the GEMM's k-slabs. With k over two
  // blocks it is copied and summed a block of input channels at a time (about 256 of its rows,
  // the GEMM's own k-slab; beta 1 after the first), each block read back from L2. (The backward
  // directions lost 2-7% with such blocks on the same layers: there the operand all blocks
  // share, diff_dst, is packed again for every block.)
  void plan(const ConvDesc& d, bool channel_blocks = false);
  size_t buffer_bytes() const { return (col_.size() + tmp_.size()) * sizeof(float); }
  // Runs chunk(n0, col, tmp, par) over the batch: chunk after chunk with OpenMP-parallel
  // copies (par), or, with at least as many images as threads, chunks spread over OpenMP
  // threads, each with its own buffers and a single-threaded sgemm.
  template <class F>
  void run_chunks(F&& chunk) {
    const size_t col_len = col_.size() / threads_, tmp_len = tmp_.size() / threads_;
    for_chunks(d_.mb, nb_, per_thread_, [&](int64_t n0, int slot, bool par) {
      chunk(n0, col_.data() + slot * col_len, tmp_.data() + slot * tmp_len, par);
    });
  }
  ConvDesc d_;
  int64_t nb_ = 1;
  int64_t block_rows_ = 0;      // > 0: output rows per block (one image per thread)
  int64_t block_channels_ = 0;  // > 0: input channels per block (small images, forward)
  int threads_ = 1;
  bool wide_ = false, no_copy_ = false, per_thread_ = false;
  Tensor col_, tmp_;  // 64-byte aligned, and so is each thread's part
};

// Forward: dst = W_g x col per (chunk, group) (im2col.cpp), then the post-ops when set: inside
// the GEMM's tiles where it writes dst, else after the scatter, image by image.
class Fwd : ChunkedBuffers {
 public:
  void prepare(const ConvDesc& d) { plan(d, true); }
  void run(const Tensor& src, const Tensor& wei, Tensor& dst);
  size_t workspace_bytes() const { return buffer_bytes(); }
  // Per output channel, the residual (if any) of dst's shape; nullptr: none. Kept by pointer.
  void set_post_ops(const PostOps* p) { post_ = p; }

 private:
  void chunk(int64_t n0, const float* src, const float* w, float* dst, float* col, float* tmp,
             bool par) const;
  PostOps post_at(int64_t n, int64_t gi, int64_t oy0) const;
  void post_images(int64_t n0, int64_t nb, int64_t gi, float* dst, bool par) const;
  const PostOps* post_ = nullptr;
};

// Backward data: col = W_g^T x diff_dst per (chunk, group), then col2im. Small images with many
// rows per column (transposed_) compute col^T = diff_dst^T x W_g into colt_ and transpose it into
// col (im2col_bwd.cpp).
class BwdData : ChunkedBuffers {
 public:
  void prepare(const ConvDesc& d);
  void run(const Tensor& diff_dst, const Tensor& wei, Tensor& diff_src);
  size_t workspace_bytes() const { return buffer_bytes() + colt_.size() * sizeof(float); }

 private:
  void chunk(int64_t n0, const float* dd, const float* w, float* ds, float* col, float* tmp,
             float* colt, bool par) const;
  bool transposed_ = false;
  Tensor colt_;  // per thread, as col_
};

// Backward weights: diff_wei_g += diff_dst x col^T per (chunk, group), chunks in a fixed order
// (per thread, then the partial sums added in thread order).
class BwdWeights : ChunkedBuffers {
 public:
  void prepare(const ConvDesc& d);
  void run(const Tensor& src, const Tensor& diff_dst, Tensor& diff_wei);
  size_t workspace_bytes() const { return buffer_bytes() + part_.size() * sizeof(float); }

 private:
  void chunk(int64_t n0, const float* src, const float* dd, float* dw, float* col, float* tmp,
             bool first, bool par) const;
  std::vector<float> part_;
};

// Forward in a reduced type (bf16, u8s8) on cpu/packed's reduced-precision GEMM
// (im2col_lowp.cpp): per (chunk, group) the typed column buffer (u8 padding at the source's zero
// point), C = W_g x col with the output channels as the GEMM's rows (the weights are A, with
// their per-channel scales; the source is B, with its zero point), written pixel-major in the
// output type, then transposed to NCHW. bf16 with one image per chunk (large images), and on
// 1x1 layers of at least 128 pixels, has the pixels as the GEMM's rows instead, one GEMM per
// image, C = col_i^T x W_g^T, which is the NCHW output itself: no transpose (ResNet-50's 1x1
// 64->256 at 56x56 ran 1.86x faster so on a Zen 5).
class LowpFwd {
 public:
  void prepare(const ConvDesc& d);
  // src: the typed NCHW source; wei: the typed weights (oc x icg*kh*kw); out: the typed (or
  // f32) NCHW output.
  void run(const void* src, const void* wei, const QuantParams& q, void* out);
  size_t workspace_bytes() const { return col_.size() + tmp_.size(); }
  // With an fp32 output: applied to each image's output as soon as it is written (from L2 or
  // L3, not as a pass over the whole tensor afterwards); nullptr: none. Kept by pointer.
  void set_post_ops(const PostOps* p) { post_ = p; }

 private:
  void chunk(int64_t n0, const void* src, const void* wei, const QuantParams& q, void* out,
             void* col, void* tmp, bool par) const;
  void post_image(int64_t n, int64_t gi, void* out) const;
  const PostOps* post_ = nullptr;
  ConvDesc d_;
  Chunking c_;
  // bf16 with the pixels as the GEMM's rows, one GEMM per image, NCHW written in place (see
  // prepare); col_copy_: the column matrix is copied (else each image is read in place).
  bool pixel_rows_ = false, col_copy_ = true;
  int64_t col_slot_ = 0, tmp_slot_ = 0;  // bytes per thread slot
  std::vector<uint8_t> col_, tmp_;
};

// Backward in bf16 on the same GEMM (im2col_lowp.cpp), fp32 results. bwd_d: per (chunk, group)
// col (fp32) = W_g^T x diff_dst with the chunk's pixels as the GEMM's rows (diff_dst gathered to
// [ocg][pixels] in bf16, or read in place for one image), then col2im. bwd_w: diff_wei_g (fp32)
// += diff_dst x col^T with the sum over the chunk's pixels (col the bf16 column copy, or the image
// itself for 1x1 unpadded layers), chunks summed as the fp32 pass sums them (sum_chunks).
class LowpBwdData {
 public:
  void prepare(const ConvDesc& d);
  // dd: the typed diff_dst; wei: the typed weights (oc x icg*kh*kw); diff_src: fp32 NCHW.
  void run(const void* dd, const void* wei, float* diff_src);
  size_t workspace_bytes() const { return 4 * col_.size() + 2 * tmp_.size(); }

 private:
  ConvDesc d_;
  Chunking c_;
  int64_t col_slot_ = 0, tmp_slot_ = 0;  // elements per thread slot
  std::vector<float> col_;
  std::vector<uint16_t> tmp_;
};

class LowpBwdWeights {
 public:
  void prepare(const ConvDesc& d);
  // src, dd: the typed source and diff_dst; diff_wei: fp32 goihw.
  void run(const void* src, const void* dd, float* diff_wei);
  size_t workspace_bytes() const { return 2 * (col_.size() + tmp_.size()) + 4 * part_.size(); }

 private:
  ConvDesc d_;
  Chunking c_;
  int64_t col_slot_ = 0, tmp_slot_ = 0;
  std::vector<uint16_t> col_, tmp_;
  std::vector<float> part_;
};

}  // namespace pb::im2col
