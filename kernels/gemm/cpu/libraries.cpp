// cpu/openblas (cblas_sgemm, the CPU baseline), cpu/packed (primbench's own SGEMM, and its bf16
// and u8s8 GEMMs) and cpu/blis (Debian's BLIS, loaded at run time): each always runs its own
// library, all four transposes, whatever PRIMBENCH_SGEMM picks for the GEMM-based algorithms.
#include "kernels/gemm/cpu/host_gemm.h"
#include "kernels/gemm/cpu/packed_lowp.h"
#include "kernels/gemm/cpu/packed_sgemm.h"
#include "kernels/gemm/cpu/sgemm.h"

namespace pb {

namespace {

using SgemmFn = void (*)(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                         const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                         float* c, int64_t ldc);

class LibraryGemm : public HostGemm {
 public:
  LibraryGemm(const char* name, SgemmFn fn) : name_(name), fn_(fn) {}
  std::string name() const override { return name_; }
  void run() override {
    if (!d_.dt.is_f32()) return run_lowp();
    fn_(d_.ta, d_.tb, d_.m, d_.n, d_.k, static_cast<float>(d_.alpha), a_->data(), d_.lda,
        b_->data(), d_.ldb, static_cast<float>(d_.beta), c_.data(), d_.ldc);
  }

 protected:
  // Only cpu/packed has reduced-precision kernels; OpenBLAS 0.3.21 as Debian builds it exports
  // no sbgemm, and BLIS 0.9 has no mixed-precision GEMM in its typed API.
  std::string dt_unsupported(const GemmDesc& d) const override {
    if (fn_ != sgemm_packed) return HostGemm::dt_unsupported(d);
    return gemm_packed_lowp_unsupported(d.dt);
  }

 private:
  void run_lowp() {
    LowpGemm g;
    g.dt = d_.dt;
    g.ta = d_.ta;
    g.tb = d_.tb;
    g.m = d_.m;
    g.n = d_.n;
    g.k = d_.k;
    g.a = a_typed();
    g.lda = d_.lda;
    g.b = b_typed();
    g.ldb = d_.ldb;
    g.c = c_out();
    g.ldc = d_.ldc;
    g.alpha = static_cast<float>(d_.alpha);
    g.beta = static_cast<float>(d_.beta);
    g.a_scale = a_scale_.data();
    g.b_scale = b_scale_;
    g.c_scale = c_scale_;
    g.b_zero = b_zero_;
    gemm_packed_lowp(g);
  }
  const char* name_;
  SgemmFn fn_;
};

}  // namespace

void sgemm_colmajor(const GemmDesc& d, const float* a, int64_t lda, const float* b, int64_t ldb,
                    float* c) {
  sgemm(d.ta, d.tb, d.m, d.n, d.k, static_cast<float>(d.alpha), a, lda, b, ldb,
        static_cast<float>(d.beta), c, d.ldc);
}

std::unique_ptr<GemmImpl> make_gemm_openblas() {
  return std::make_unique<LibraryGemm>("cpu/openblas", sgemm_openblas);
}

std::unique_ptr<GemmImpl> make_gemm_packed() {
  return std::make_unique<LibraryGemm>("cpu/packed", sgemm_packed);
}

std::unique_ptr<GemmImpl> make_gemm_blis() {
  return std::make_unique<LibraryGemm>("cpu/blis", sgemm_blis);
}

}  // namespace pb
