// cpu/im2col: our im2col into a column buffer [icg*kh*kw][nb*oh*ow] for a chunk of nb images,
// then sgemm per (image, group): dst = W_g (ocg x icg*kh*kw) x col (a large image with one image
// per thread: in blocks of output rows, each block copied and multiplied while in L2). Small images
// share one sgemm per chunk (a wide N), its result scattered to NCHW. 1x1 stride-1 unpadded
// convolutions of large images skip the copy: the image is the matrix. With at least as many
// images as threads, each OpenMP thread runs whole chunks with a single-threaded sgemm (no
// hand-over between OpenMP and OpenBLAS threads, column buffer private and cache-warm);
// otherwise the copy is parallel and sgemm uses OpenBLAS's threads. bwd_d and bwd_w are in
// im2col_bwd.cpp, the column copies in im2col_cols.cpp. Reduced types (bf16, u8s8) run on
// cpu/packed's reduced-precision GEMM (im2col_lowp.cpp), and bf16 also backward.
#include <algorithm>

#include "kernels/conv/cpu/host_conv.h"
#include "kernels/conv/cpu/im2col_cols.h"
#include "kernels/gemm/cpu/packed_lowp.h"

namespace pb {

namespace {

class Im2colConv : public HostConv {
 public:
  std::string name() const override { return "cpu/im2col"; }
  size_t workspace_bytes() const override {
    return fwd_.workspace_bytes() + bwd_d_.workspace_bytes() + bwd_w_.workspace_bytes() +
           lowp_.workspace_bytes() + lowp_bwd_d_.workspace_bytes() + lowp_bwd_w_.workspace_bytes() +
           wei_typed_.size();
  }

 protected:
  Support supports_bwd_d(const ConvDesc&) const override { return Support::yes(); }
  Support supports_bwd_w(const ConvDesc&) const override { return Support::yes(); }
  std::string dt_unsupported(const ConvDesc& d, Dir dir) const override {
    const std::string why = gemm_packed_lowp_unsupported(d.dt);
    if (!why.empty()) return "cpu/im2col runs on cpu/packed, which cannot: " + why;
    if (dir != Dir::fwd && d.dt.in != DataType::bf16)
      return "cpu/im2col runs dt=" + d.dt.str() + " fwd only";
    return "";
  }

  void prepare_more() override {
    fwd_.set_post_ops(nullptr);  // a new plan writes its own output again
    lowp_.set_post_ops(nullptr);
    if (typed() && dir_ == Dir::bwd_d) return lowp_bwd_d_.prepare(d_);
    if (typed() && dir_ == Dir::bwd_w) return lowp_bwd_w_.prepare(d_);
    if (typed()) return lowp_.prepare(d_);
    if (dir_ == Dir::bwd_d) return bwd_d_.prepare(d_);
    if (dir_ == Dir::bwd_w) return bwd_w_.prepare(d_);
    fwd_.prepare(d_);
  }

  // A reduced type's weights converted to it (the f32 algorithms read the weights in place).
  void weights() override {
    if (typed() && dir_ != Dir::bwd_w) typed_weights(&wei_typed_);
  }

  void run_dir() override {
    if (typed() && dir_ != Dir::fwd) {  // bf16: fp32 results, then the output type
      if (dir_ == Dir::bwd_d)
        lowp_bwd_d_.run(diff_dst_typed(), wei_typed_.data(), dst_.data());
      else
        lowp_bwd_w_.run(src_typed(), diff_dst_typed(), dst_.data());
      if (typed_out()) to_storage_out(dst_.data(), dst_.size(), d_.dt.out, out_data());
      return;
    }
    if (typed()) return lowp_.run(src_typed(), wei_typed_.data(), q_, out_data());
    if (dir_ == Dir::bwd_d) return bwd_d_.run(*diff_dst_, *wei_, dst_);
    if (dir_ == Dir::bwd_w) return bwd_w_.run(*src_, *diff_dst_, dst_);
    fwd_.run(*src_, *wei_, out_tensor());
  }

  // In fp32 inside the GEMM's tiles (cpu/packed; the other libraries in a pass after each GEMM),
  // in a reduced type on each image's output as soon as it is written (im2col_lowp.cpp).
  bool takes_post_ops() const override { return true; }
  void use_post_ops(const PostOps* p) override {
    if (typed())
      lowp_.set_post_ops(p);
    else
      fwd_.set_post_ops(p);
  }

 private:
  im2col::Fwd fwd_;
  im2col::BwdData bwd_d_;
  im2col::BwdWeights bwd_w_;
  im2col::LowpFwd lowp_;
  im2col::LowpBwdData lowp_bwd_d_;
  im2col::LowpBwdWeights lowp_bwd_w_;
  std::vector<uint8_t> wei_typed_;
};

}  // namespace

namespace im2col {

// The post-ops of the output block of image n, group gi, from output row oy0: the group's channels,
// the residual at the block's own offset.
PostOps Fwd::post_at(int64_t n, int64_t gi, int64_t oy0) const {
  const int64_t ohw = d_.oh * d_.ow;
  return post_->at(gi * d_.ocg(), (n * d_.oc + gi * d_.ocg()) * ohw + oy0 * d_.ow, ohw);
}

// After a scatter: the post-ops over the group's channels of images [n0, n0 + nb), from L2 where
// the scatter left them.
void Fwd::post_images(int64_t n0, int64_t nb, int64_t gi, float* dst, bool par) const {
  const int64_t ohw = d_.oh * d_.ow, ocg = d_.ocg();
#pragma omp parallel for collapse(2) schedule(static) if (par)
  for (int64_t i = 0; i < nb; ++i)
    for (int64_t o = 0; o < ocg; ++o) {
      const PostOps p = post_at(n0 + i, gi, 0);
      float* y = dst + ((n0 + i) * d_.oc + gi * ocg + o) * ohw;
      apply_post_ops(p.at(o, o * ohw, ohw), ohw, 1, y, ohw, y, ohw);
    }
}

void Fwd::run(const Tensor& src, const Tensor& wei, Tensor& dst) {
  run_chunks([&](int64_t n0, float* col, float* tmp, bool par) {
    chunk(n0, src.data(), wei.data(), dst.data(), col, tmp, par);
  });
}

// Images [n0, n0 + nb_) through column buffer `col` (and `tmp` for small images); the copies
// are OpenMP-parallel when `par` (else this thread does everything).
void Fwd::chunk(int64_t n0, const float* src, const float* w, float* dst, float* col, float* tmp,
                bool par) const {
  const ConvDesc& d = d_;
  const int64_t ohw = d.oh * d.ow, ihw = d.ih * d.iw, k = d.icg() * d.kh * d.kw;
  const int64_t nb = std::min(nb_, d.mb - n0), ncol = nb * ohw;
  for (int64_t gi = 0; gi < d.g; ++gi) {
    const float* img = src + (n0 * d.ic + gi * d.icg()) * ihw;
    const float* a = w + gi * d.ocg() * k;
    if (block_rows_ > 0) {
      for (int64_t oy0 = 0; oy0 < d.oh; oy0 += block_rows_) {
        const int64_t oy1 = std::min(d.oh, oy0 + block_rows_), cols = (oy1 - oy0) * d.ow;
        im2col_block(d, img, 1, cols, 0, d.icg(), oy0, oy1, col, false);
        const PostOps p = post_ ? post_at(n0, gi, oy0) : PostOps();
        sgemm(false, false, d.ocg(), cols, k, a, k, col, cols, 0.0f,
              dst + (n0 * d.oc + gi * d.ocg()) * ohw + oy0 * d.ow, ohw, post_ ? &p : nullptr);
      }
      continue;
    }
    // The chunk's product into tmp, transposed (pixels x channels) where the channels are at least
    // twice the pixels: the packed GEMM then runs its rows along the channels, the pixels as its
    // columns, and the scatter transposes. Its rows (24 or 48 a sliver) along 98 pixels kept a
    // fifth of the tile idle and each packed B column served few rows. Zen 3, 2 threads, batch 4
    // (2 images a chunk), layer contract, medians of 5 alternating runs, ms: ResNet-50 res5 1x1
    // 2048 -> 512 3.55 -> 3.02, 512 -> 2048 3.49 -> 2.73 (onednn/auto 2.30, 2.33); batch 16,
    // res4a's 1x1 stride 2 1024 -> 2048 21.9 -> 19.9; with 512 channels on 392 pixels (res5 at
    // batch 16) even, hence twice.
    const bool t = d.ocg() >= 2 * ncol;
    // tmp (+)= the kb rows of col times the weights' kb columns from w, in tmp's orientation.
    auto product = [&](int64_t kb, const float* w, float beta) {
      if (t)
        sgemm(true, true, ncol, d.ocg(), kb, col, ncol, w, k, beta, tmp, d.ocg());
      else
        sgemm(false, false, d.ocg(), ncol, kb, w, k, col, ncol, beta, tmp, ncol);
    };
    if (block_channels_ > 0) {
      const int64_t per = d.kh * d.kw;
      for (int64_t c0 = 0; c0 < d.icg(); c0 += block_channels_) {
        const int64_t c1 = std::min(d.icg(), c0 + block_channels_);
        im2col_block(d, img, nb, ncol, c0, c1, 0, d.oh, col, par);
        product((c1 - c0) * per, a + c0 * per, c0 == 0 ? 0.0f : 1.0f);
      }
      scatter(d, tmp, t, n0, nb, gi, dst, par);
      if (post_) post_images(n0, nb, gi, dst, par);
      continue;
    }
    if (!no_copy_) im2col(d, img, nb, ncol, col, par);
    if (wide_) {
      for (int64_t i = 0; i < nb; ++i) {
        const float* b = no_copy_ ? img + i * d.ic * ihw : col + i * ohw;
        const PostOps p = post_ ? post_at(n0 + i, gi, 0) : PostOps();
        sgemm(false, false, d.ocg(), ohw, k, a, k, b, no_copy_ ? ohw : ncol, 0.0f,
              dst + ((n0 + i) * d.oc + gi * d.ocg()) * ohw, ohw, post_ ? &p : nullptr);
      }
    } else {
      product(k, a, 0.0f);
      scatter(d, tmp, t, n0, nb, gi, dst, par);
      if (post_) post_images(n0, nb, gi, dst, par);
    }
  }
}

}  // namespace im2col

std::unique_ptr<ConvImpl> make_conv_im2col() {
  return std::make_unique<Im2colConv>();
}

}  // namespace pb
