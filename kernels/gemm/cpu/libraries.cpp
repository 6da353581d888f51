// cpu/openblas (cblas_sgemm, the CPU baseline), cpu/packed (primbench's own SGEMM) and cpu/blis
// (Debian's BLIS, loaded at run time): each always runs its own library, all four transposes,
// whatever PRIMBENCH_SGEMM picks for the GEMM-based algorithms.
#include "kernels/gemm/cpu/host_gemm.h"
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
    fn_(d_.ta, d_.tb, d_.m, d_.n, d_.k, static_cast<float>(d_.alpha), a_->data(), d_.lda,
        b_->data(), d_.ldb, static_cast<float>(d_.beta), c_.data(), d_.ldc);
  }

 private:
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
