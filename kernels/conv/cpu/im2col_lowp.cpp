// cpu/im2col in a reduced type (im2col_cols.h): the forward (LowpFwd: the column copy of the typed
// source, cpu/packed's reduced-precision GEMM (kernels/gemm/cpu/packed_lowp.h) with the output
// channels as rows, and a tiled transpose of its pixel-major result to NCHW; or, bf16 on large
// images and 1x1 layers, one GEMM per image with the pixels as rows and NCHW written in place)
// and bf16's backward (LowpBwdData, LowpBwdWeights: the same GEMM, fp32 results).
#include <algorithm>
#include <cstring>

#include "kernels/conv/cpu/im2col_cols.h"
#include "kernels/conv/cpu/winograd_layout.h"
#include "kernels/gemm/cpu/packed_lowp.h"

namespace pb::im2col {

namespace {

// dst[c * ds + r] = src[r * ss + c] for r < rows, c < cols, elements of `bytes` bytes (1, 2, 4);
// OpenMP over tiles of 32 x 32 (16 x 16 for 4 bytes) when `par`. Whole tiles of 4-byte
// elements go through registers (wino::transpose16), reading each source line once: element by
// element, a tile's source rows (ss = ocg elements apart, 8 KB for 2048 fp32 channels) all fell
// in one L1 set and evicted each other; ResNet-50's 1x1 512 -> 2048 at 7x7 (bf16, batch 16)
// spent 1.2 of its 4.2 ms there.
template <class T>
void transpose_tiles(const T* src, int64_t ss, int64_t rows, int64_t cols, T* dst, int64_t ds,
                     bool par) {
  constexpr int64_t kTile = sizeof(T) == 4 ? 16 : 32;
  const int64_t tr = (rows + kTile - 1) / kTile, tc = (cols + kTile - 1) / kTile;
#pragma omp parallel for collapse(2) schedule(static) if (par)
  for (int64_t bc = 0; bc < tc; ++bc)
    for (int64_t br = 0; br < tr; ++br) {
      const int64_t r1 = std::min(rows, (br + 1) * kTile), c1 = std::min(cols, (bc + 1) * kTile);
      if constexpr (sizeof(T) == 4) {
        if (r1 - br * kTile == kTile && c1 - bc * kTile == kTile) {
          wino::transpose16(reinterpret_cast<const float*>(src + br * kTile * ss + bc * kTile), ss,
                            reinterpret_cast<float*>(dst + bc * kTile * ds + br * kTile), ds);
          continue;
        }
      }
      for (int64_t c = bc * kTile; c < c1; ++c)
        for (int64_t r = br * kTile; r < r1; ++r) dst[c * ds + r] = src[r * ss + c];
    }
}

void transpose(const void* src, int64_t ss, int64_t rows, int64_t cols, void* dst, int64_t ds,
               size_t bytes, bool par) {
  if (bytes == 4)
    transpose_tiles(static_cast<const uint32_t*>(src), ss, rows, cols, static_cast<uint32_t*>(dst),
                    ds, par);
  else if (bytes == 2)
    transpose_tiles(static_cast<const uint16_t*>(src), ss, rows, cols, static_cast<uint16_t*>(dst),
                    ds, par);
  else
    transpose_tiles(static_cast<const uint8_t*>(src), ss, rows, cols, static_cast<uint8_t*>(dst),
                    ds, par);
}

}  // namespace

void LowpFwd::prepare(const ConvDesc& d) {
  d_ = d;
  c_ = plan_chunks(d);
  const int64_t k = d.icg() * d.kh * d.kw, ncol = c_.nb * d.oh * d.ow;
  const int64_t copies = c_.per_thread ? c_.threads : 1;
  // bf16 puts the pixels on the GEMM's rows, one image per GEMM, and writes NCHW in place, with
  // no transpose: for one image per chunk (large images), and for 1x1 layers of at least 128
  // pixels. 14x14 (batch 16, 2 threads): 256 -> 1024 4.4 -> 3.0 ms, 1024 -> 256 3.5 -> 3.1; at
  // 7x7 (49 rows: a 48-row tile and a 1-row one) 3.4 -> 4.0 ms, so the channels stay rows there.
  // Larger kernels keep the chunk's single GEMM: per image, the weights are packed again for
  // every image (3x3 256 at 14x14 10.7 -> 13.4 ms). A 1x1 stride-1 layer's image is col^T itself.
  // u8s8 does the same on AVX-512 VNNI with the GEMM's roles swapped (LowpGemm::u8_a: the u8
  // pixels as A's rows, the s8 weights as B): no pixel-major result, and no transpose, which took
  // 30% of the samples of 56x56 64 -> 256 at batch 16 (Zen 5).
  const bool rows_ok = !d.dt.integer() || !gemm_packed_lowp_on_avx2(d.dt);
  pixel_rows_ = rows_ok && (c_.nb == 1 || (d.kh * d.kw == 1 && d.oh * d.ow >= 128));
  col_copy_ = !(c_.no_copy || (pixel_rows_ && pointwise(d)));
  col_slot_ = col_copy_ ? static_cast<int64_t>(k * ncol * d.dt.in_bytes()) : 0;
  tmp_slot_ = pixel_rows_ ? 0 : static_cast<int64_t>(d.ocg() * ncol * d.dt.out_bytes());
  // 64 bytes between slots, so that two threads never share a cache line.
  col_slot_ = (col_slot_ + 63) / 64 * 64, tmp_slot_ = (tmp_slot_ + 63) / 64 * 64;
  col_.assign(static_cast<size_t>(copies * col_slot_), 0);
  tmp_.assign(static_cast<size_t>(copies * tmp_slot_), 0);
}

void LowpFwd::run(const void* src, const void* wei, const QuantParams& q, void* out) {
  for_chunks(d_.mb, c_.nb, c_.per_thread, [&](int64_t n0, int slot, bool par) {
    chunk(n0, src, wei, q, out, col_.data() + slot * col_slot_, tmp_.data() + slot * tmp_slot_,
          par);
  });
}

void LowpFwd::chunk(int64_t n0, const void* src, const void* wei, const QuantParams& q, void* out,
                    void* col, void* tmp, bool par) const {
  const ConvDesc& d = d_;
  const bool quant = d.dt.integer();
  const int64_t ohw = d.oh * d.ow, ihw = d.ih * d.iw, k = d.icg() * d.kh * d.kw;
  const int64_t nb = std::min(c_.nb, d.mb - n0), ncol = nb * ohw;
  const auto in_size = static_cast<int64_t>(d.dt.in_bytes());
  const auto out_size = static_cast<int64_t>(d.dt.out_bytes());
  const auto* s = static_cast<const uint8_t*>(src);
  auto* o = static_cast<uint8_t*>(out);
  auto* t = static_cast<uint8_t*>(tmp);
  for (int64_t gi = 0; gi < d.g; ++gi) {
    const uint8_t* img = s + (n0 * d.ic + gi * d.icg()) * ihw * in_size;
    const uint8_t* w = static_cast<const uint8_t*>(wei) + gi * d.ocg() * k * in_size;
    // The column matrix, [k][ncol]: the typed copy, or (!col_copy_) each image itself.
    if (col_copy_) {
      if (quant)
        im2col(d, img, nb, ncol, static_cast<uint8_t*>(col), par, static_cast<uint8_t>(q.src_zero));
      else
        im2col(d, reinterpret_cast<const uint16_t*>(img), nb, ncol, static_cast<uint16_t*>(col),
               par);
    }
    LowpGemm g;
    g.dt = d.dt;
    g.k = k;
    g.alpha = 1, g.beta = 0;
    if (pixel_rows_) {
      // One GEMM per image: C (ohw x ocg, column-major) = col_i^T (ohw x k) x W_g^T (k x ocg)
      // is the image's NCHW planes, written in place; col ([k][ncol]) holds col_i^T
      // column-major from column i * ohw on (lda = ncol), and an uncopied image is its own
      // (lda = ohw).
      g.m = ohw, g.n = d.ocg();
      g.b = w, g.ldb = k;
      if (quant) {
        g.u8_a = true;
        g.a_scale = q.wei_scale.data() + gi * d.ocg();
        g.b_scale = q.src_scale, g.b_zero = q.src_zero, g.c_scale = q.dst_scale;
      }
      for (int64_t i = 0; i < nb; ++i) {
        if (col_copy_)
          g.a = static_cast<const uint8_t*>(col) + i * ohw * in_size, g.lda = ncol;
        else
          g.a = img + i * d.ic * ihw * in_size, g.lda = ohw;
        g.c = o + ((n0 + i) * d.oc + gi * d.ocg()) * ohw * out_size, g.ldc = ohw;
        gemm_packed_lowp(g);
        if (post_) post_image(n0 + i, gi, out);
      }
      continue;
    }
    g.ta = g.tb = true;  // A: the weights (ocg x k, rows contiguous); B: col (k x ncol)
    g.m = d.ocg();
    g.a = w, g.lda = k;
    g.ldc = d.ocg();
    if (quant) {
      g.a_scale = q.wei_scale.data() + gi * d.ocg();
      g.b_scale = q.src_scale, g.b_zero = q.src_zero, g.c_scale = q.dst_scale;
    }
    if (c_.no_copy && gemm_packed_lowp_on_avx2(d.dt)) {
      // The AVX2 u8s8 GEMM writes C transposed: each image's NCHW planes directly, with no
      // pixel-major result to transpose (which took a third of a 1x1 layer's time, 56x56 64 ->
      // 256, batch 16).
      g.c_trans = true;
      g.ldb = g.n = ohw;
      g.ldc = ohw;
      for (int64_t i = 0; i < nb; ++i) {
        g.b = img + i * d.ic * ihw * in_size;
        g.c = o + ((n0 + i) * d.oc + gi * d.ocg()) * ohw * out_size;
        gemm_packed_lowp(g);
        if (post_) post_image(n0 + i, gi, out);
      }
      continue;
    }
    if (c_.no_copy) {  // 1x1, stride 1, unpadded: each image is its own k x ohw matrix
      for (int64_t i = 0; i < nb; ++i) {
        g.b = img + i * d.ic * ihw * in_size;
        g.ldb = g.n = ohw;
        g.c = t + i * ohw * d.ocg() * out_size;
        gemm_packed_lowp(g);
      }
    } else {
      g.b = col;
      g.ldb = g.n = ncol;
      g.c = t;
      gemm_packed_lowp(g);
    }
    for (int64_t i = 0; i < nb; ++i) {
      transpose(t + i * ohw * d.ocg() * out_size, d.ocg(), ohw, d.ocg(),
                o + ((n0 + i) * d.oc + gi * d.ocg()) * ohw * out_size, ohw,
                static_cast<size_t>(out_size), par);
      if (post_) post_image(n0 + i, gi, out);
    }
  }
}

// The post-ops on the group's channels of image n of the fp32 output.
void LowpFwd::post_image(int64_t n, int64_t gi, void* out) const {
  const int64_t ohw = d_.oh * d_.ow, at = (n * d_.oc + gi * d_.ocg()) * ohw;
  float* y = static_cast<float*>(out) + at;
  apply_post_ops(post_->at(gi * d_.ocg(), at, ohw), ohw, d_.ocg(), y, ohw, y, ohw);
}

namespace {

// A bf16 GEMM with an fp32 C (column-major, BLAS semantics as LowpGemm), alpha 1.
void gemm_bf16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const uint16_t* a, int64_t lda,
               const uint16_t* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  LowpGemm g;
  g.dt = DataType::parse("bf16", "dt");
  g.ta = ta, g.tb = tb, g.m = m, g.n = n, g.k = k;
  g.a = a, g.lda = lda, g.b = b, g.ldb = ldb, g.c = c, g.ldc = ldc;
  g.alpha = 1, g.beta = beta;
  gemm_packed_lowp(g);
}

}  // namespace

void LowpBwdData::prepare(const ConvDesc& d) {
  d_ = d;
  c_ = plan_chunks(d);
  const int64_t k = d.icg() * d.kh * d.kw, ncol = c_.nb * d.oh * d.ow;
  const int64_t copies = c_.per_thread ? c_.threads : 1;
  col_slot_ = (k * ncol + 15) / 16 * 16;
  tmp_slot_ = c_.nb > 1 ? (d.ocg() * ncol + 31) / 32 * 32 : 0;
  col_.assign(static_cast<size_t>(copies * col_slot_), 0.0f);
  tmp_.assign(static_cast<size_t>(copies * tmp_slot_), 0);
}

void LowpBwdData::run(const void* dd, const void* wei, float* diff_src) {
  const ConvDesc& d = d_;
  const int64_t ohw = d.oh * d.ow, ihw = d.ih * d.iw, k = d.icg() * d.kh * d.kw;
  const auto* y = static_cast<const uint16_t*>(dd);
  const auto* w = static_cast<const uint16_t*>(wei);
  for_chunks(d.mb, c_.nb, c_.per_thread, [&](int64_t n0, int slot, bool par) {
    const int64_t nb = std::min(c_.nb, d.mb - n0), ncol = nb * ohw;
    float* col = col_.data() + slot * col_slot_;
    uint16_t* tmp = tmp_.data() + slot * tmp_slot_;
    for (int64_t gi = 0; gi < d.g; ++gi) {
      // col (ncol x k, column-major: [k][ncol]) = dd^T (ncol x ocg) x W_g (ocg x k).
      const uint16_t* a = y + (n0 * d.oc + gi * d.ocg()) * ohw;
      if (nb > 1) gather(d, y, n0, nb, gi, tmp, par), a = tmp;
      gemm_bf16(false, true, ncol, k, d.ocg(), a, nb > 1 ? ncol : ohw, w + gi * d.ocg() * k, k,
                0.0f, col, ncol);
      col2im(d, col, nb, ncol, diff_src + (n0 * d.ic + gi * d.icg()) * ihw, par);
    }
  });
}

void LowpBwdWeights::prepare(const ConvDesc& d) {
  d_ = d;
  c_ = plan_chunks(d);
  const int64_t k = d.icg() * d.kh * d.kw, ncol = c_.nb * d.oh * d.ow;
  const int64_t copies = c_.per_thread ? c_.threads : 1;
  col_slot_ = c_.no_copy ? 0 : (k * ncol + 31) / 32 * 32;
  tmp_slot_ = c_.nb > 1 ? (d.ocg() * ncol + 31) / 32 * 32 : 0;
  col_.assign(static_cast<size_t>(copies * col_slot_), 0);
  tmp_.assign(static_cast<size_t>(copies * tmp_slot_), 0);
  part_.assign(c_.per_thread ? static_cast<size_t>(c_.threads * d.wei_size()) : 0, 0.0f);
}

void LowpBwdWeights::run(const void* src, const void* dd, float* diff_wei) {
  const ConvDesc& d = d_;
  const int64_t ohw = d.oh * d.ow, ihw = d.ih * d.iw, k = d.icg() * d.kh * d.kw;
  const auto* x = static_cast<const uint16_t*>(src);
  const auto* y = static_cast<const uint16_t*>(dd);
  sum_chunks(d.mb, c_.nb, c_.per_thread, c_.threads, d.wei_size(), part_.data(), diff_wei,
             [&](int64_t n0, float* dw, int slot, bool first, bool par) {
               const int64_t nb = std::min(c_.nb, d.mb - n0), ncol = nb * ohw;
               uint16_t* col = col_.data() + slot * col_slot_;
               uint16_t* tmp = tmp_.data() + slot * tmp_slot_;
               for (int64_t gi = 0; gi < d.g; ++gi) {
                 // dw_g (k x ocg, column-major: [ocg][k]) += col (k x ncol) x dd^T (ncol x ocg).
                 const uint16_t* img = x + (n0 * d.ic + gi * d.icg()) * ihw;
                 const uint16_t* a = y + (n0 * d.oc + gi * d.ocg()) * ohw;
                 if (nb > 1) gather(d, y, n0, nb, gi, tmp, par), a = tmp;
                 const uint16_t* b = img;  // 1x1 unpadded, one image: the image is col
                 if (!(c_.no_copy && nb == 1)) im2col(d, img, nb, ncol, col, par), b = col;
                 gemm_bf16(true, false, k, d.ocg(), ncol, b, ncol, a, ncol, first ? 0.0f : 1.0f,
                           dw + gi * d.ocg() * k, k);
               }
             });
}

}  // namespace pb::im2col
