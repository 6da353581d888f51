// cpu/openblas: cblas_sgemm, all four transposes, as the CPU baseline.
#include <cblas.h>

#include "kernels/gemm/cpu/host_gemm.h"

namespace pb {

namespace {

class OpenblasGemm : public HostGemm {
 public:
  std::string name() const override { return "cpu/openblas"; }
  void run() override { sgemm_colmajor(d_, a_->data(), d_.lda, b_->data(), d_.ldb, c_.data()); }
};

}  // namespace

void sgemm_colmajor(const GemmDesc& d, const float* a, int64_t lda, const float* b, int64_t ldb,
                    float* c) {
  cblas_sgemm(CblasColMajor, d.ta ? CblasTrans : CblasNoTrans, d.tb ? CblasTrans : CblasNoTrans,
              static_cast<int>(d.m), static_cast<int>(d.n), static_cast<int>(d.k),
              static_cast<float>(d.alpha), a, static_cast<int>(lda), b, static_cast<int>(ldb),
              static_cast<float>(d.beta), c, static_cast<int>(d.ldc));
}

std::unique_ptr<GemmImpl> make_gemm_openblas() {
  return std::make_unique<OpenblasGemm>();
}

}  // namespace pb
