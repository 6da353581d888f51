// cpu/openblas: cblas_sgemm, all four transposes, as the CPU baseline.
#include "kernels/gemm/cpu/host_gemm.h"
#include "kernels/gemm/cpu/sgemm.h"

namespace pb {

namespace {

class OpenblasGemm : public HostGemm {
 public:
  std::string name() const override { return "cpu/openblas"; }
  void run() override {
    sgemm_openblas(d_.ta, d_.tb, d_.m, d_.n, d_.k, static_cast<float>(d_.alpha), a_->data(), d_.lda,
                   b_->data(), d_.ldb, static_cast<float>(d_.beta), c_.data(), d_.ldc);
  }
};

}  // namespace

void sgemm_colmajor(const GemmDesc& d, const float* a, int64_t lda, const float* b, int64_t ldb,
                    float* c) {
  sgemm(d.ta, d.tb, d.m, d.n, d.k, static_cast<float>(d.alpha), a, lda, b, ldb,
        static_cast<float>(d.beta), c, d.ldc);
}

std::unique_ptr<GemmImpl> make_gemm_openblas() {
  return std::make_unique<OpenblasGemm>();
}

}  // namespace pb
