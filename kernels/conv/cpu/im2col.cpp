// cpu/im2col: our im2col into a column buffer [icg*kh*kw][nb*oh*ow] for a chunk of nb images,
// then OpenBLAS sgemm per (image, group): dst = W_g (ocg x icg*kh*kw) x col. Small images share
// one sgemm per chunk (a wide N), its result scattered to NCHW. 1x1 stride-1 unpadded
// convolutions of large images skip the copy: the image is the matrix. With at least as many
// images as threads, each OpenMP thread runs whole chunks with a single-threaded sgemm (no
// hand-over between OpenMP and OpenBLAS threads, column buffer private and cache-warm);
// otherwise the copy is parallel and sgemm uses OpenBLAS's threads.
#include <cblas.h>

#include <algorithm>
#include <cstring>

#include <omp.h>

#include "kernels/conv/cpu/host_conv.h"
#include "kernels/core/threads.h"

namespace pb {

namespace {

constexpr int64_t kWideN = 1024;           // columns per sgemm that keep it efficient
constexpr int64_t kColBytes = 64ll << 20;  // column buffer budget

void sgemm_rm(int64_t m, int64_t n, int64_t k, const float* a, const float* b, int64_t ldb,
              float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), 1.0f, a, static_cast<int>(k), b, static_cast<int>(ldb), 0.0f, c,
              static_cast<int>(ldc));
}

class Im2colConv : public HostConv {
 public:
  std::string name() const override { return "cpu/im2col"; }
  size_t workspace_bytes() const override { return (col_.size() + tmp_.size()) * sizeof(float); }

 protected:
  void prepare_more() override {
    const ConvDesc& d = d_;
    const int64_t ohw = d.oh * d.ow, k = d.icg() * d.kh * d.kw;
    const bool pointwise = d.kh == 1 && d.kw == 1 && d.sh == 1 && d.sw == 1 && d.ph == 0 &&
                           d.pw == 0 && d.pad_b() == 0 && d.pad_r() == 0;
    // A 1x1 image needs no copy: per-image sgemms straight from the image when it is not tiny.
    wide_ = ohw >= (pointwise ? kWideN / 4 : kWideN);
    // Images per chunk: enough columns for one wide sgemm, or as many as the buffer budget
    // allows when every image gets its own sgemm (fewer OpenMP/OpenBLAS hand-overs).
    nb_ = wide_ ? std::max<int64_t>(1, kColBytes / (4 * k * ohw))
                : std::max<int64_t>(1, (kWideN + ohw - 1) / ohw);
    nb_ = std::min(nb_, d.mb);
    no_copy_ = wide_ && pointwise;
    threads_ = omp_get_max_threads();
    per_thread_ = threads_ > 1 && d.mb >= threads_;
    if (per_thread_) nb_ = wide_ ? 1 : std::min(nb_, (d.mb + threads_ - 1) / threads_);
    const int64_t copies = per_thread_ ? threads_ : 1;
    col_.assign(no_copy_ ? 0 : static_cast<size_t>(copies * k * nb_ * ohw), 0.0f);
    tmp_.assign(wide_ ? 0 : static_cast<size_t>(copies * d.ocg() * nb_ * ohw), 0.0f);
  }

  void run() override {
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
      if (!no_copy_) im2col(img, nb, ncol, col, par);
      if (wide_) {
        for (int64_t i = 0; i < nb; ++i) {
          const float* b = no_copy_ ? img + i * d.ic * ihw : col + i * ohw;
          sgemm_rm(d.ocg(), ohw, k, a, b, no_copy_ ? ohw : ncol,
                   dst_.data() + ((n0 + i) * d.oc + gi * d.ocg()) * ohw, ohw);
        }
      } else {
        sgemm_rm(d.ocg(), ncol, k, a, col, ncol, tmp, ncol);
        scatter(n0, nb, gi, tmp, par);
      }
    }
  }

  // col[(c*kh + ky)*kw + kx][i*ohw + oy*ow + ox] = src(n0 + i, c, iy, ix) or 0 in the padding.
  void im2col(const float* img, int64_t nb, int64_t ncol, float* col, bool par) {
    const ConvDesc& d = d_;
    const int64_t rows = d.icg() * d.kh * d.kw, ihw = d.ih * d.iw, ohw = d.oh * d.ow;
#pragma omp parallel for collapse(2) schedule(static) if (par)
    for (int64_t i = 0; i < nb; ++i)
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t kx = r % d.kw, ky = (r / d.kw) % d.kh, c = r / (d.kw * d.kh);
        const float* plane = img + (i * d.ic + c) * ihw;
        float* out = col + r * ncol + i * ohw;
        // Output columns whose input column is inside the image: [lo, hi).
        const int64_t off = kx * (d.dw + 1) - d.pw;
        const int64_t lo = std::min(d.ow, std::max<int64_t>(0, (-off + d.sw - 1) / d.sw));
        const int64_t hi = std::max(lo, std::min(d.ow, (d.iw - off + d.sw - 1) / d.sw));
        for (int64_t oy = 0; oy < d.oh; ++oy) {
          float* o = out + oy * d.ow;
          const int64_t iy = oy * d.sh - d.ph + ky * (d.dh + 1);
          if (iy < 0 || iy >= d.ih) {
            std::fill(o, o + d.ow, 0.0f);
            continue;
          }
          const float* s = plane + iy * d.iw;
          std::fill(o, o + lo, 0.0f);
          if (d.sw == 1)
            std::memcpy(o + lo, s + lo + off, (hi - lo) * sizeof(float));
          else
            for (int64_t ox = lo; ox < hi; ++ox) o[ox] = s[ox * d.sw + off];
          std::fill(o + hi, o + d.ow, 0.0f);
        }
      }
  }

  // tmp[ocg][nb*ohw] -> dst(n0 + i, g*ocg + o, :, :).
  void scatter(int64_t n0, int64_t nb, int64_t gi, const float* tmp, bool par) {
    const ConvDesc& d = d_;
    const int64_t ohw = d.oh * d.ow;
#pragma omp parallel for collapse(2) schedule(static) if (par)
    for (int64_t i = 0; i < nb; ++i)
      for (int64_t o = 0; o < d.ocg(); ++o)
        std::memcpy(dst_.data() + ((n0 + i) * d.oc + gi * d.ocg() + o) * ohw,
                    tmp + (o * nb + i) * ohw, ohw * sizeof(float));
  }

  int64_t nb_ = 1;
  int threads_ = 1;
  bool wide_ = false, no_copy_ = false, per_thread_ = false;
  std::vector<float> col_, tmp_;
};

}  // namespace

std::unique_ptr<ConvImpl> make_conv_im2col() {
  return std::make_unique<Im2colConv>();
}

}  // namespace pb
