// cpu/im2col backward. bwd_d: per (chunk of images, group) col = W_g^T (icg*kh*kw x ocg) x
// diff_dst (ocg x images*pixels), then col2im; a 1x1 stride-1 unpadded layer of large images
// writes the sgemm straight into diff_src. bwd_w: diff_wei_g = sum over chunks of
// diff_dst (ocg x pixels) x col^T, the 1x1 case reading the image itself. As in the forward,
// with at least as many images as threads each thread runs whole chunks with a single-threaded
// sgemm; bwd_w then sums per-thread partial gradients in thread order. Chunks go to threads
// statically, so the summation order is fixed: two runs give bitwise the same gradient.
#include <omp.h>

#include <algorithm>

#include "kernels/conv/cpu/im2col_cols.h"
#include "kernels/core/threads.h"
#include "kernels/gemm/cpu/packed_sgemm.h"  // transpose_matrix

namespace pb::im2col {

void ChunkedBuffers::plan(const ConvDesc& d, bool channel_blocks) {
  d_ = d;
  Chunking c = plan_chunks(d);
  nb_ = c.nb, threads_ = c.threads, wide_ = c.wide, no_copy_ = c.no_copy;
  per_thread_ = c.per_thread;
  const int64_t per = d.kh * d.kw, k = d.icg() * per, ncol = nb_ * d.oh * d.ow;
  const int64_t copies = per_thread_ ? threads_ : 1;
  // Row blocks: a large image, one per thread.
  block_rows_ = 0;
  if (wide_ && !no_copy_ && per_thread_ && nb_ == 1) {
    constexpr int64_t kBlockBytes = 512 << 10, kBlockCols = 768;  // 16 of the 48-row slivers
    const int64_t rows = std::max((kBlockCols + d.ow - 1) / d.ow, kBlockBytes / (4 * k * d.ow));
    if (rows < d.oh) block_rows_ = rows;
  }
  // Channel blocks: small images with k over two blocks of about 256 rows.
  block_channels_ = 0;
  const int64_t chans = std::max<int64_t>(1, 256 / per);
  if (channel_blocks && !wide_ && k >= 2 * chans * per) block_channels_ = chans;
  // The column buffer: a block's rows or columns, or the whole chunk's matrix.
  int64_t col_len = no_copy_ ? 0 : k * ncol;
  if (block_rows_ > 0) col_len = k * block_rows_ * d.ow;
  if (block_channels_ > 0) col_len = block_channels_ * per * ncol;
  // Each thread's part a whole number of cache lines, so that every part starts aligned.
  const auto lines = [](int64_t n) { return (n + 15) / 16 * 16; };
  col_ = Tensor({copies * lines(col_len)});
  tmp_ = Tensor({wide_ ? 0 : copies * lines(d.ocg() * ncol)});
}

// --- backward data ---

// The chunk's product transposed where its column matrix has at least kTransposedMinRows rows
// (k = icg*kh*kw) per column (images*pixels): the packed GEMM then runs its rows along k, the
// pixels as its columns, and a transposing copy (transpose_words' 8 x 8 blocks) gives col2im its
// matrix. Its rows (24 or 48 a sliver) along 392 pixels against k = 4608 (ResNet-50's res5 3x3
// at 8 images a chunk) ran the GEMM at 76.5 GFLOP/s on one thread, transposed at 90.4. Zen 3,
// 2 threads, layer contract, medians of 5 alternating runs, ms: batch 16 res5 3x3 37.2 -> 33.2,
// res5a 3x3 stride 2 38.0 -> 32.3 (onednn/auto 23.4 and 30.1 in another run); at 1.5 to 3 rows
// per column it lost or was even (res4 3x3 26.0 -> 36.2, AlexNet conv4 28.2 -> 31.0, VGG-16
// conv5 109 both ways), hence 4.
constexpr int64_t kTransposedMinRows = 4;

void BwdData::prepare(const ConvDesc& d) {
  plan(d);
  const int64_t k = d.icg() * d.kh * d.kw, ncol = nb_ * d.oh * d.ow;
  transposed_ = !wide_ && !no_copy_ && block_rows_ == 0 && k >= kTransposedMinRows * ncol;
  colt_ = Tensor({transposed_ ? col_.size() : 0});  // col^T beside col, each thread's part alike
}

void BwdData::chunk(int64_t n0, const float* dd, const float* w, float* ds, float* col, float* tmp,
                    float* colt, bool par) const {
  const ConvDesc& d = d_;
  const int64_t ohw = d.oh * d.ow, ihw = d.ih * d.iw, k = d.icg() * d.kh * d.kw;
  const int64_t nb = std::min(nb_, d.mb - n0), ncol = nb * ohw;
  for (int64_t gi = 0; gi < d.g; ++gi) {
    const float* a = w + gi * d.ocg() * k;  // W_g: ocg x k
    float* img = ds + (n0 * d.ic + gi * d.icg()) * ihw;
    if (block_rows_ > 0) {  // one image: col = W_g^T x diff_dst block by block, added in
      const float* b = dd + (n0 * d.oc + gi * d.ocg()) * ohw;
      std::fill(img, img + d.icg() * ihw, 0.0f);
      for (int64_t oy0 = 0; oy0 < d.oh; oy0 += block_rows_) {
        const int64_t oy1 = std::min(d.oh, oy0 + block_rows_), cols = (oy1 - oy0) * d.ow;
        sgemm(true, false, k, cols, d.ocg(), a, k, b + oy0 * d.ow, ohw, 0.0f, col, cols);
        col2im_rows_add(d, col, oy0, oy1, img);
      }
      continue;
    }
    if (wide_) {
      for (int64_t i = 0; i < nb; ++i) {
        const float* b = dd + ((n0 + i) * d.oc + gi * d.ocg()) * ohw;
        if (no_copy_) {
          sgemm(true, false, k, ohw, d.ocg(), a, k, b, ohw, 0.0f, img + i * d.ic * ihw, ohw);
        } else {
          sgemm(true, false, k, ohw, d.ocg(), a, k, b, ohw, 0.0f, col, ohw);
          col2im(d, col, 1, ohw, img + i * d.ic * ihw, par);
        }
      }
    } else {
      gather(d, dd, n0, nb, gi, tmp, par);
      if (transposed_) {
        sgemm(true, false, ncol, k, d.ocg(), tmp, ncol, a, k, 0.0f, colt, k);
        transpose_matrix(colt, ncol, k, col, par);
      } else {
        sgemm(true, false, k, ncol, d.ocg(), a, k, tmp, ncol, 0.0f, col, ncol);
      }
      col2im(d, col, nb, ncol, img, par);
    }
  }
}

void BwdData::run(const Tensor& diff_dst, const Tensor& wei, Tensor& diff_src) {
  const size_t col_len = col_.size() / threads_, tmp_len = tmp_.size() / threads_,
               colt_len = colt_.size() / threads_;
  for_chunks(d_.mb, nb_, per_thread_, [&](int64_t n0, int slot, bool par) {
    chunk(n0, diff_dst.data(), wei.data(), diff_src.data(), col_.data() + slot * col_len,
          tmp_.data() + slot * tmp_len, colt_.data() + slot * colt_len, par);
  });
}

// --- backward weights ---

void BwdWeights::prepare(const ConvDesc& d) {
  plan(d);
  part_.assign(per_thread_ ? static_cast<size_t>(threads_ * d.wei_size()) : 0, 0.0f);
}

// Adds (or, when `first`, writes) chunk n0's contribution to dw (g x ocg x k).
void BwdWeights::chunk(int64_t n0, const float* src, const float* dd, float* dw, float* col,
                       float* tmp, bool first, bool par) const {
  const ConvDesc& d = d_;
  const int64_t ohw = d.oh * d.ow, ihw = d.ih * d.iw, k = d.icg() * d.kh * d.kw;
  const int64_t nb = std::min(nb_, d.mb - n0), ncol = nb * ohw;
  for (int64_t gi = 0; gi < d.g; ++gi) {
    float* c = dw + gi * d.ocg() * k;
    const float* img = src + (n0 * d.ic + gi * d.icg()) * ihw;
    if (block_rows_ > 0) {  // one image: the sum over its pixels block by block
      const float* a = dd + (n0 * d.oc + gi * d.ocg()) * ohw;
      for (int64_t oy0 = 0; oy0 < d.oh; oy0 += block_rows_) {
        const int64_t oy1 = std::min(d.oh, oy0 + block_rows_), cols = (oy1 - oy0) * d.ow;
        im2col_block(d, img, 1, cols, 0, d.icg(), oy0, oy1, col, false);
        sgemm(false, true, d.ocg(), k, cols, a + oy0 * d.ow, ohw, col, cols,
              first && oy0 == 0 ? 0.0f : 1.0f, c, k);
      }
      continue;
    }
    if (wide_) {
      for (int64_t i = 0; i < nb; ++i) {
        const float* a = dd + ((n0 + i) * d.oc + gi * d.ocg()) * ohw;
        const float* b = img + i * d.ic * ihw;
        if (!no_copy_) im2col(d, b, 1, ohw, col, par), b = col;
        sgemm(false, true, d.ocg(), k, ohw, a, ohw, b, ohw, first && i == 0 ? 0.0f : 1.0f, c, k);
      }
    } else {
      gather(d, dd, n0, nb, gi, tmp, par);
      im2col(d, img, nb, ncol, col, par);
      sgemm(false, true, d.ocg(), k, ncol, tmp, ncol, col, ncol, first ? 0.0f : 1.0f, c, k);
    }
  }
}

void BwdWeights::run(const Tensor& src, const Tensor& diff_dst, Tensor& diff_wei) {
  const size_t col_len = col_.size() / threads_, tmp_len = tmp_.size() / threads_;
  sum_chunks(d_.mb, nb_, per_thread_, threads_, d_.wei_size(), part_.data(), diff_wei.data(),
             [&](int64_t n0, float* dw, int slot, bool first, bool par) {
               chunk(n0, src.data(), diff_dst.data(), dw, col_.data() + slot * col_len,
                     tmp_.data() + slot * tmp_len, first, par);
             });
}

}  // namespace pb::im2col
