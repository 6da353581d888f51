// cpu/im2col: our im2col into a column buffer [icg*kh*kw][nb*oh*ow] for a chunk of nb images,
// then OpenBLAS sgemm per (image, group): dst = W_g (ocg x icg*kh*kw) x col. Small images share
// one sgemm per chunk (a wide N), its result scattered to NCHW. 1x1 stride-1 unpadded
// convolutions of large images skip the copy: the image is the matrix. With at least as many
// images as threads, each OpenMP thread runs whole chunks with a single-threaded sgemm (no
// hand-over between OpenMP and OpenBLAS threads, column buffer private and cache-warm);
// otherwise the copy is parallel and sgemm uses OpenBLAS's threads. bwd_d and bwd_w are in
// im2col_bwd.cpp, the column copies in im2col_cols.cpp.
#include <algorithm>
#include <cstring>

#include <omp.h>

#include "kernels/conv/cpu/host_conv.h"
#include "kernels/conv/cpu/im2col_cols.h"
#include "kernels/core/threads.h"

namespace pb {

namespace {

class Im2colConv : public HostConv {
 public:
  std::string name() const override { return "cpu/im2col"; }
  size_t workspace_bytes() const override {
    return (col_.size() + tmp_.size()) * sizeof(float) + bwd_d_.workspace_bytes() +
           bwd_w_.workspace_bytes();
  }

 protected:
  Support supports_bwd_d(const ConvDesc&) const override { return Support::yes(); }
  Support supports_bwd_w(const ConvDesc&) const override { return Support::yes(); }

  void prepare_more() override {
    const ConvDesc& d = d_;
    if (dir_ == Dir::bwd_d) return bwd_d_.prepare(d);
    if (dir_ == Dir::bwd_w) return bwd_w_.prepare(d);
    const int64_t ohw = d.oh * d.ow, k = d.icg() * d.kh * d.kw;
    const im2col::Chunking c = im2col::plan_chunks(d);
    nb_ = c.nb, threads_ = c.threads, wide_ = c.wide, no_copy_ = c.no_copy;
    per_thread_ = c.per_thread;
    const int64_t copies = per_thread_ ? threads_ : 1;
    col_.assign(no_copy_ ? 0 : static_cast<size_t>(copies * k * nb_ * ohw), 0.0f);
    tmp_.assign(wide_ ? 0 : static_cast<size_t>(copies * d.ocg() * nb_ * ohw), 0.0f);
  }

  void run() override {
    if (dir_ == Dir::bwd_d) return bwd_d_.run(*diff_dst_, *wei_, dst_);
    if (dir_ == Dir::bwd_w) return bwd_w_.run(*src_, *diff_dst_, dst_);
    const int64_t chunks = (d_.mb + nb_ - 1) / nb_;
    if (!per_thread_) {
      for (int64_t c = 0; c < chunks; ++c) chunk(c * nb_, col_.data(), tmp_.data(), true);
      return;
    }
    SerialBlasScope serial_blas;  // one sgemm per OpenMP thread
    const size_t col_len = col_.size() / threads_, tmp_len = tmp_.size() / threads_;
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t c = 0; c < chunks; ++c) {
      const int t = omp_get_thread_num();
      chunk(c * nb_, col_.data() + t * col_len, tmp_.data() + t * tmp_len, false);
    }
  }

 private:
  // Images [n0, n0 + nb_) through column buffer `col` (and `tmp` for small images); the copies
  // are OpenMP-parallel when `par` (else this thread does everything).
  void chunk(int64_t n0, float* col, float* tmp, bool par) {
    const ConvDesc& d = d_;
    const int64_t ohw = d.oh * d.ow, ihw = d.ih * d.iw, k = d.icg() * d.kh * d.kw;
    const int64_t nb = std::min(nb_, d.mb - n0), ncol = nb * ohw;
    for (int64_t gi = 0; gi < d.g; ++gi) {
      const float* img = src_->data() + (n0 * d.ic + gi * d.icg()) * ihw;
      const float* a = wei_->data() + gi * d.ocg() * k;
      if (!no_copy_) im2col::im2col(d, img, nb, ncol, col, par);
      if (wide_) {
        for (int64_t i = 0; i < nb; ++i) {
          const float* b = no_copy_ ? img + i * d.ic * ihw : col + i * ohw;
          im2col::sgemm(false, false, d.ocg(), ohw, k, a, k, b, no_copy_ ? ohw : ncol, 0.0f,
                        dst_.data() + ((n0 + i) * d.oc + gi * d.ocg()) * ohw, ohw);
        }
      } else {
        im2col::sgemm(false, false, d.ocg(), ncol, k, a, k, col, ncol, 0.0f, tmp, ncol);
        im2col::scatter(d, tmp, n0, nb, gi, dst_.data(), par);
      }
    }
  }

  int64_t nb_ = 1;
  int threads_ = 1;
  bool wide_ = false, no_copy_ = false, per_thread_ = false;
  std::vector<float> col_, tmp_;
  im2col::BwdData bwd_d_;
  im2col::BwdWeights bwd_w_;
};

}  // namespace

std::unique_ptr<ConvImpl> make_conv_im2col() {
  return std::make_unique<Im2colConv>();
}

}  // namespace pb
