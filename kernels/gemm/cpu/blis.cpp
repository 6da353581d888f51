// cpu/blis: BLIS (Debian's libblis4-openmp, loaded at run time: see sgemm.cpp), all four
// transposes, as a second system BLAS beside OpenBLAS.
#include "kernels/gemm/cpu/host_gemm.h"
#include "kernels/gemm/cpu/sgemm.h"

namespace pb {

namespace {

class BlisGemm : public HostGemm {
 public:
  std::string name() const override { return "cpu/blis"; }
  void run() override {
    sgemm_blis(d_.ta, d_.tb, d_.m, d_.n, d_.k, static_cast<float>(d_.alpha), a_->data(), d_.lda,
               b_->data(), d_.ldb, static_cast<float>(d_.beta), c_.data(), d_.ldc);
  }
};

}  // namespace

std::unique_ptr<GemmImpl> make_gemm_blis() {
  return std::make_unique<BlisGemm>();
}

}  // namespace pb
